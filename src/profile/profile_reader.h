#pragma once

// Internal to the profile stage: reading a JSON document key by key while
// collecting every problem with its line, and `${...}` substitution.

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/profile/json_source_map.h"
#include "perfgate/profile/profile.h"

namespace perfgate::profile_detail {

using nlohmann::json;
// Ordered, so that headers and env keep the order the profile gives them.
using Doc = nlohmann::ordered_json;
using Keys = std::span<const std::string_view>;

/// The JSON text of what was found, cut short when long.
std::string shown(const Doc& value);
std::string json_quoted(std::string_view text);
std::string number_text(double value);
std::string percent_text(double value);
/// "unknown key; did you mean ...?" with the nearest known key, or the choices.
std::string unknown_key_message(std::string_view key, Keys known);
std::string lowercase(std::string_view text);

/// Every problem found so far, each with the line of its key.
class Problems {
 public:
  explicit Problems(const JsonSourceMap& map) : map_(map) {}

  void add(const std::string& path, std::string message) {
    if (std::find(muted_.begin(), muted_.end(), path) != muted_.end()) return;
    problems_.push_back({map_.nearest_line(path), path, std::move(message)});
  }
  /// A value already reported (an unset variable) would only repeat itself.
  void mute(std::string path) { muted_.push_back(std::move(path)); }
  bool empty() const { return problems_.empty(); }
  size_t size() const { return problems_.size(); }

  std::vector<ProfileProblem> by_line() && {
    std::stable_sort(problems_.begin(), problems_.end(),
                     [](const auto& a, const auto& b) { return a.line < b.line; });
    return std::move(problems_);
  }

 private:
  const JsonSourceMap& map_;
  std::vector<ProfileProblem> problems_;
  std::vector<std::string> muted_;
};

bool is_env_name(std::string_view name);
/// The document with every string value expanded; "$schema" is left as written.
Doc substitute(const Doc& value, const std::string& path, const EnvLookup& env, Problems& problems);

bool is_integral(const Doc& value);
std::optional<Nanos> duration_of(const Doc& value);
/// A number with a known unit that is too large to count in nanoseconds ("1e12h").
bool is_overlong_duration(const Doc& value);
std::optional<double> percent_of(const Doc& value);

/// One JSON object of the profile, read key by key. Every reader returns
/// nullopt when the key is absent or wrong, the latter with a problem noted.
class Section {
 public:
  Section(const Doc* object, std::string path, Problems& problems)
      : object_(object), path_(std::move(path)), problems_(&problems) {}

  bool present() const { return object_ != nullptr; }
  bool has(std::string_view key) const { return get(key) != nullptr; }
  const std::string& path() const { return path_; }
  Problems& problems() const { return *problems_; }

  const Doc* get(std::string_view key) const {
    if (!object_) return nullptr;
    auto it = object_->find(key);
    return it == object_->end() ? nullptr : &*it;
  }

  std::string path_of(std::string_view key) const {
    return key.empty() ? path_ : child_path(path_, key);
  }

  void problem(std::string_view key, std::string message) const {
    problems_->add(path_of(key), std::move(message));
  }

  void reject_unknown(Keys known) const {
    if (!object_) return;
    for (auto& [key, value] : object_->items())
      if (std::find(known.begin(), known.end(), key) == known.end())
        problem(key, unknown_key_message(key, known));
  }

  /// Notes a missing key (only when this object itself exists; its own absence
  /// is reported once, higher up).
  bool require(std::string_view key) const {
    if (has(key) || !present()) return has(key);
    problem(key, "required key is missing");
    return false;
  }

  Section object(std::string_view key) const {
    const Doc* value = get(key);
    if (value && !value->is_object()) {
      problem(key, "must be an object, got " + shown(*value));
      value = nullptr;
    }
    return Section(value, path_of(key), *problems_);
  }

  std::optional<std::string> string(std::string_view key) const {
    const Doc* value = get(key);
    if (!value) return std::nullopt;
    if (value->is_string()) return value->get<std::string>();
    problem(key, "must be a string, got " + shown(*value));
    return std::nullopt;
  }

  std::optional<int> integer(std::string_view key, int min, int max) const {
    const Doc* value = get(key);
    if (!value) return std::nullopt;
    if (!is_integral(*value) || value->get<double>() < min) {
      // A range that starts past 1 says so: "a positive integer" refused 1 (issue 50).
      std::string wanted =
          min > 1 ? "must be an integer from " + std::to_string(min) + " to " + std::to_string(max)
          : min > 0 ? "must be a positive integer"
                    : "must be an integer >= 0";
      problem(key, wanted + ", got " + shown(*value));
      return std::nullopt;
    }
    return at_most(key, value->get<double>(), max, shown(*value));
  }

  std::optional<double> number(std::string_view key, double min, double max) const {
    const Doc* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_number() || value->get<double>() < min) {
      problem(key, "must be a number >= " + number_text(min) + ", got " + shown(*value));
      return std::nullopt;
    }
    return at_most(key, value->get<double>(), max, shown(*value));
  }

  std::optional<bool> boolean(std::string_view key) const {
    const Doc* value = get(key);
    if (!value) return std::nullopt;
    if (value->is_boolean()) return value->get<bool>();
    problem(key, "must be true or false, got " + shown(*value));
    return std::nullopt;
  }

  std::optional<double> positive_number(std::string_view key) const {
    const Doc* value = get(key);
    if (!value) return std::nullopt;
    if (value->is_number() && value->get<double>() > 0) return value->get<double>();
    problem(key, "must be a positive number, got " + shown(*value));
    return std::nullopt;
  }

  /// A duration in (0, max], or [0, max] when `zero_ok`.
  std::optional<Nanos> duration(std::string_view key, bool zero_ok, Nanos max) const {
    const Doc* value = get(key);
    if (!value) return std::nullopt;
    auto d = duration_of(*value);
    std::string why;
    if (!d && is_overlong_duration(*value)) {
      why = "must be at most " + format_duration(max);
    } else if (!d) {
      why = "must be a duration like \"10s\"";
    } else if (!zero_ok && d->count() == 0) {
      why = "must be longer than 0s";
    } else if (*d > max) {
      why = "must be at most " + format_duration(max);
    } else {
      return d;
    }
    problem(key, why + ", got " + shown(*value));
    return std::nullopt;
  }

  std::optional<double> percent(std::string_view key, double max) const {
    const Doc* value = get(key);
    if (!value) return std::nullopt;
    auto pct = percent_of(*value);
    if (!pct) {
      problem(key, "must be a percentage like \"5%\", got " + shown(*value));
      return std::nullopt;
    }
    return at_most(key, *pct, max, shown(*value), "%");
  }

  /// An object whose values are all strings, in profile order; `name_problem`
  /// says what is wrong with a key, if anything.
  std::vector<std::pair<std::string, std::string>> string_map(
      std::string_view key, std::optional<std::string> (*name_problem)(std::string_view)) const {
    std::vector<std::pair<std::string, std::string>> out;
    Section map = object(key);
    if (!map.present()) return out;
    for (auto& [name, value] : map.object_->items()) {
      if (auto why = name_problem(name)) map.problem(name, *why);
      if (auto text = map.string(name)) out.emplace_back(name, *text);
    }
    return out;
  }

  /// A non-empty array of non-empty strings.
  std::vector<std::string> string_list(std::string_view key) const {
    const Doc* value = get(key);
    std::vector<std::string> out;
    if (!value) return out;
    if (!value->is_array() || value->empty()) {
      problem(key, "must be a non-empty array of strings, got " + shown(*value));
      return out;
    }
    for (size_t i = 0; i < value->size(); ++i) {
      const Doc& item = (*value)[i];
      if (item.is_string() && !item.get_ref<const std::string&>().empty()) {
        out.push_back(item.get<std::string>());
      } else {
        problems_->add(element_path(path_of(key), i),
                       "must be a non-empty string, got " + shown(item));
      }
    }
    return out;
  }

 private:
  std::optional<double> at_most(std::string_view key, double value, double max,
                                const std::string& got, const char* unit = "") const {
    if (value <= max) return value;
    problem(key, "must be at most " + number_text(max) + unit + ", got " + got);
    return std::nullopt;
  }

  const Doc* object_;
  std::string path_;
  Problems* problems_;
};

}  // namespace perfgate::profile_detail
