#include "perfgate/profile.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>

#include "perfgate/json_source_map.h"
#include "perfgate/sha256.h"

namespace perfgate {
namespace {

using nlohmann::json;
// Ordered, so that headers and env keep the order the profile gives them.
using Doc = nlohmann::ordered_json;
using Keys = std::span<const std::string_view>;

constexpr std::array<std::string_view, 8> kRootKeys = {
    "$schema", "name", "description", "target", "load", "repeat", "thresholds", "service"};
constexpr std::array<std::string_view, 4> kTargetKeys = {"url", "method", "headers", "body"};
constexpr std::array<std::string_view, 7> kLoadKeys = {
    "threads", "connections", "duration", "warmup", "rate", "engine", "timeout"};
constexpr std::array<std::string_view, 2> kRepeatKeys = {"count", "discard"};
constexpr std::array<std::string_view, 3> kFloorKeys = {"warn", "fail", "min"};
constexpr std::array<std::string_view, 3> kCeilingKeys = {"warn", "fail", "max"};
constexpr std::array<std::string_view, 5> kServiceKeys = {"command", "ready_url", "ready_timeout",
                                                          "cwd", "env"};
constexpr std::array<std::string_view, 3> kEngines = {"auto", "curl", "native"};

// Limits past which a value is a typo, not a test plan.
constexpr int kMaxThreads = 1024;
constexpr int kMaxConnections = 1'000'000;
constexpr int kMaxRepeats = 10'000;
constexpr double kMaxRate = 100'000'000;
constexpr Nanos kMaxDuration = std::chrono::hours(24);
constexpr Nanos kMaxWarmup = std::chrono::hours(1);
constexpr Nanos kMaxTimeout = std::chrono::hours(1);
constexpr size_t kMaxShownChars = 60;

// ---------------------------------------------------------------- messages

/// The JSON text of what was found, cut short when long.
std::string shown(const Doc& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kMaxShownChars) text = text.substr(0, kMaxShownChars) + "...";
  return text;
}

std::string json_quoted(std::string_view text) {
  return shown(Doc(std::string(text)));
}

std::string number_text(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.12g", value);
  return buf;
}

std::string percent_text(double value) {
  return number_text(value) + "%";
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
    }
  }
  return row[b.size()];
}

std::string unknown_key_message(std::string_view key, Keys known) {
  auto nearest = std::min_element(known.begin(), known.end(), [&](auto a, auto b) {
    return edit_distance(key, a) < edit_distance(key, b);
  });
  // Past a third of the word a suggestion is a guess; list the choices instead.
  if (nearest != known.end() && edit_distance(key, *nearest) <= std::max<size_t>(2, key.size() / 3))
    return "unknown key; did you mean \"" + std::string(*nearest) + "\"?";
  std::string list;
  for (auto name : known) list += (list.empty() ? "" : ", ") + std::string(name);
  return "unknown key; expected one of: " + list;
}

// ---------------------------------------------------------------- problems

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

// ---------------------------------------------------------------- environment

bool is_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

/// The value of one `${...}`: NAME or NAME:-default (the default also when set but empty).
std::string variable(std::string_view spec, const EnvLookup& env,
                     std::vector<std::string>& errors) {
  size_t separator = spec.find(":-");
  std::string name(spec.substr(0, separator));
  if (!is_env_name(name)) {
    errors.push_back("\"${" + std::string(spec) + "}\" names no variable (letters, digits, _)");
    return "";
  }
  auto value = env(name);
  if (value && (!value->empty() || separator == std::string_view::npos)) return *value;
  if (separator != std::string_view::npos) return std::string(spec.substr(separator + 2));
  errors.push_back("environment variable " + name + " is not set (write ${" + name +
                   ":-default} to give a default)");
  return "";
}

/// Expands `${NAME}` and `${NAME:-default}`; `$${` stands for a literal `${`.
std::string expand(std::string_view text, const EnvLookup& env, std::vector<std::string>& errors) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, 3) == "$${") {
      out += "${";
      i += 3;
    } else if (text.substr(i, 2) == "${") {
      size_t close = text.find('}', i + 2);
      if (close == std::string_view::npos) {
        errors.push_back("unterminated \"${\" (write \"$${\" for a literal \"${\")");
        return out + std::string(text.substr(i));
      }
      out += variable(text.substr(i + 2, close - i - 2), env, errors);
      i = close + 1;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

/// The document with every string value expanded; "$schema" is left as written.
Doc substitute(const Doc& value, const std::string& path, const EnvLookup& env,
               Problems& problems) {
  if (value.is_string()) {
    std::vector<std::string> errors;
    Doc out = expand(value.get_ref<const std::string&>(), env, errors);
    for (auto& error : errors) problems.add(path, std::move(error));
    if (!errors.empty()) problems.mute(path);
    return out;
  }
  Doc out = value;
  if (value.is_object()) {
    for (auto& [key, item] : value.items())
      if (!(path.empty() && key == "$schema"))
        out[key] = substitute(item, child_path(path, key), env, problems);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      out[i] = substitute(value[i], element_path(path, i), env, problems);
  }
  return out;
}

// ---------------------------------------------------------------- typed reading

bool is_integral(const Doc& value) {
  if (value.is_number_integer()) return true;
  return value.is_number_float() && std::floor(value.get<double>()) == value.get<double>();
}

std::optional<Nanos> duration_of(const Doc& value) {
  if (value.is_string()) return parse_duration(value.get_ref<const std::string&>());
  if (!value.is_number()) return std::nullopt;
  double seconds = value.get<double>();
  if (seconds < 0) return std::nullopt;
  // Far past every limit, and still far from overflowing the nanosecond count.
  if (seconds > 1e9) return Nanos::max();
  return Nanos(std::llround(seconds * 1e9));
}

std::optional<double> percent_of(const Doc& value) {
  if (value.is_string()) return parse_percent(value.get_ref<const std::string&>());
  if (value.is_number() && value.get<double>() >= 0) return value.get<double>();
  return std::nullopt;
}

/// One JSON object of the profile, read key by key. Every reader returns
/// nullopt when the key is absent or wrong, the latter with a problem noted.
class Section {
 public:
  Section(const Doc* object, std::string path, Problems& problems)
      : object_(object), path_(std::move(path)), problems_(&problems) {}

  bool present() const { return object_ != nullptr; }
  bool has(std::string_view key) const { return get(key) != nullptr; }
  const std::string& path() const { return path_; }

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
      problem(key, std::string(min > 0 ? "must be a positive integer" : "must be an integer >= 0") +
                       ", got " + shown(*value));
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
    if (!d) {
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

// ---------------------------------------------------------------- checks

bool is_token_char(unsigned char c) {
  return std::isalnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

std::optional<std::string> name_problem(std::string_view name) {
  bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
  if (ok) return std::nullopt;
  return "must be letters, digits, '.', '_' or '-' (it names the test in the store), got " +
         json_quoted(name);
}

std::optional<std::string> header_name_problem(std::string_view name) {
  if (!name.empty() && std::all_of(name.begin(), name.end(), is_token_char)) return std::nullopt;
  return "is not a valid HTTP header name";
}

std::optional<std::string> env_name_problem(std::string_view name) {
  if (is_env_name(name)) return std::nullopt;
  return "is not a valid environment variable name (letters, digits, _)";
}

std::optional<std::string> port_problem(std::string_view port) {
  bool digits =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
  if (digits && std::atoi(std::string(port).c_str()) >= 1 &&
      std::atoi(std::string(port).c_str()) <= 65535)
    return std::nullopt;
  return "port must be a number from 1 to 65535, got " + json_quoted(port);
}

/// Host and optional port of "user@host:port", "[::1]:8080" or "example.com".
std::optional<std::string> authority_problem(std::string_view authority) {
  size_t at = authority.rfind('@');
  std::string_view host = at == std::string_view::npos ? authority : authority.substr(at + 1);
  size_t colon = host.rfind(':');
  if (!host.empty() && host[0] == '[') {
    size_t close = host.find(']');
    if (close == std::string_view::npos) return "has an unclosed IPv6 address \"[\"";
    colon = close + 1 < host.size() && host[close + 1] == ':' ? close + 1 : std::string_view::npos;
  }
  if (colon != std::string_view::npos) {
    if (auto why = port_problem(host.substr(colon + 1))) return why;
    host = host.substr(0, colon);
  }
  if (host.empty() || host == "[]") return "has no host";
  return std::nullopt;
}

std::optional<std::string> url_problem(std::string_view url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos)
    return "must be an absolute http:// or https:// URL, got " + json_quoted(url);
  std::string_view scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    return "scheme \"" + std::string(scheme) + "\" is not supported; use http:// or https://";
  if (url.find_first_of(" \t\r\n") != std::string_view::npos) return "must not contain whitespace";
  std::string_view rest = url.substr(scheme_end + 3);
  if (auto why = authority_problem(rest.substr(0, rest.find_first_of("/?#"))))
    return *why + ": " + json_quoted(url);
  return std::nullopt;
}

bool is_method(std::string_view method) {
  return !method.empty() && method[0] >= 'A' && method[0] <= 'Z' &&
         std::all_of(method.begin(), method.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
         });
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Environment names use '_' where header names use '-'; a few more words mark secrets.
bool is_secret_env(std::string_view name) {
  std::string normal = lowercase(name);
  std::replace(normal.begin(), normal.end(), '_', '-');
  return is_secret_header(normal) || normal.find("passw") != std::string::npos ||
         normal.find("credential") != std::string::npos || normal.find("key") != std::string::npos;
}

// ---------------------------------------------------------------- sections

std::string read_name(const Section& root) {
  if (!root.require("name")) return "";
  auto name = root.string("name");
  if (name) {
    if (auto why = name_problem(*name)) root.problem("name", *why);
  }
  return name.value_or("");
}

std::string read_url(const Section& section, std::string_view key) {
  auto url = section.string(key);
  if (url) {
    if (auto why = url_problem(*url)) section.problem(key, *why);
  }
  return url.value_or("");
}

TargetSpec read_target(const Section& root) {
  TargetSpec target;
  if (!root.require("target")) return target;
  Section s = root.object("target");
  s.reject_unknown(kTargetKeys);
  if (s.require("url")) target.url = read_url(s, "url");
  target.method = s.string("method").value_or(target.method);
  if (!is_method(target.method))
    s.problem("method", "must be an uppercase HTTP method like \"GET\" or \"POST\", got " +
                            json_quoted(target.method));
  target.headers = s.string_map("headers", header_name_problem);
  for (const auto& [name, value] : target.headers)
    if (value.find_first_of("\r\n") != std::string::npos)
      s.problem(child_path("headers", name), "must not contain a line break");
  target.body = s.string("body").value_or("");
  return target;
}

void check_engine(const Section& s, const LoadSpec& load, const TargetSpec& target) {
  if (std::find(kEngines.begin(), kEngines.end(), load.engine) == kEngines.end()) {
    s.problem("engine",
              "must be \"auto\", \"curl\" or \"native\", got " + json_quoted(load.engine));
  } else if (load.engine == "native" && target.url.starts_with("https://")) {
    s.problem("engine",
              "\"native\" serves plain http:// only; use \"curl\" or \"auto\" for https://");
  }
}

LoadSpec read_load(const Section& root, const TargetSpec& target) {
  LoadSpec load;
  Section s = root.object("load");
  s.reject_unknown(kLoadKeys);
  auto threads = s.integer("threads", 1, kMaxThreads);
  auto connections = s.integer("connections", 1, kMaxConnections);
  load.threads = threads.value_or(load.threads);
  load.connections = connections.value_or(load.connections);
  // Every thread needs a connection of its own; checked only when both are valid.
  if ((threads || !s.has("threads")) && (connections || !s.has("connections")) &&
      load.connections < load.threads)
    s.problem("connections", "must be at least threads (" + std::to_string(load.threads) +
                                 "), got " + std::to_string(load.connections) +
                                 (connections ? "" : " (the default)"));
  load.duration = s.duration("duration", false, kMaxDuration).value_or(load.duration);
  load.warmup = s.duration("warmup", true, kMaxWarmup).value_or(load.warmup);
  load.rate = s.number("rate", 0, kMaxRate).value_or(load.rate);
  load.engine = s.string("engine").value_or(load.engine);
  check_engine(s, load, target);
  load.timeout = s.duration("timeout", false, kMaxTimeout).value_or(load.timeout);
  return load;
}

RepeatSpec read_repeat(const Section& root) {
  RepeatSpec repeat;
  Section s = root.object("repeat");
  s.reject_unknown(kRepeatKeys);
  auto count = s.integer("count", 1, kMaxRepeats);
  auto discard = s.integer("discard", 0, kMaxRepeats);
  repeat.count = count.value_or(repeat.count);
  repeat.discard = discard.value_or(repeat.discard);
  if ((count || !s.has("count")) && (discard || !s.has("discard")) &&
      repeat.discard >= repeat.count)
    s.problem("discard", "must be less than count (" + std::to_string(repeat.count) + "), got " +
                             std::to_string(repeat.discard) +
                             (discard ? "" : " (the default; set it explicitly)"));
  return repeat;
}

/// Latency ceilings need a unit: a bare 50 would read as 50 seconds.
std::optional<double> latency_ceiling_ms(const Section& entry) {
  const Doc* value = entry.get("max");
  if (value && !value->is_string()) {
    entry.problem("max", "must be a duration with a unit like \"50ms\", got " + shown(*value));
    return std::nullopt;
  }
  auto d = entry.duration("max", false, kMaxTimeout);
  if (!d) return std::nullopt;
  return to_millis(*d);
}

Thresholds read_limits(const Section& entry, const MetricDef& def) {
  bool throughput = def.better == Better::kHigher;
  entry.reject_unknown(throughput ? Keys(kFloorKeys) : Keys(kCeilingKeys));
  // A throughput cannot fall by more than 100 %; a latency can grow without bound.
  double max_change = throughput ? 100 : 1'000'000;
  Thresholds limits;
  limits.warn_pct = entry.percent("warn", max_change);
  limits.fail_pct = entry.percent("fail", max_change);
  if (limits.warn_pct && limits.fail_pct && *limits.warn_pct > *limits.fail_pct)
    entry.problem("warn", "must not exceed fail (" + percent_text(*limits.fail_pct) + "), got " +
                              percent_text(*limits.warn_pct));
  if (throughput) {
    limits.min = entry.positive_number("min");
  } else if (def.unit == "ms") {
    limits.max = latency_ceiling_ms(entry);
  } else {
    limits.max = entry.percent("max", 100);
  }
  return limits;
}

ThresholdSet read_thresholds(const Section& root) {
  if (!root.has("thresholds")) return default_thresholds();
  Section s = root.object("thresholds");
  std::vector<std::string_view> known;
  for (const auto& def : metric_defs()) known.push_back(def.threshold_key);
  s.reject_unknown(known);
  ThresholdSet set;
  for (const auto& def : metric_defs()) {
    Section entry = s.object(def.threshold_key);
    if (!entry.present()) continue;
    Thresholds limits = read_limits(entry, def);
    if (limits.any()) {
      set[std::string(def.key)] = limits;
    } else if (!entry.has("warn") && !entry.has("fail") && !entry.has("max") && !entry.has("min")) {
      entry.problem(
          "", std::string("sets no limit; give ") +
                  (def.better == Better::kHigher ? "warn, fail or min" : "warn, fail or max"));
    }
  }
  return set;
}

std::optional<ServiceSpec> read_service(const Section& root, const TargetSpec& target) {
  Section s = root.object("service");
  if (!s.present()) return std::nullopt;
  s.reject_unknown(kServiceKeys);
  ServiceSpec service;
  if (s.require("command")) service.command = s.string_list("command");
  service.ready_url = s.has("ready_url") ? read_url(s, "ready_url") : target.url;
  service.ready_timeout =
      s.duration("ready_timeout", false, kMaxTimeout).value_or(service.ready_timeout);
  service.cwd = s.string("cwd").value_or("");
  service.env = s.string_map("env", env_name_problem);
  return service;
}

Profile read_profile(const Doc& doc, Problems& problems) {
  Profile profile;
  if (!doc.is_object()) {
    problems.add("", "a profile is a JSON object, got " + shown(doc));
    return profile;
  }
  Section root(&doc, "", problems);
  root.reject_unknown(kRootKeys);
  root.string("$schema");  // only for editors; type-checked so that the schema stays exact
  profile.name = read_name(root);
  profile.description = root.string("description").value_or("");
  profile.target = read_target(root);
  profile.load = read_load(root, profile.target);
  profile.repeat = read_repeat(root);
  profile.thresholds = read_thresholds(root);
  profile.service = read_service(root, profile.target);
  return profile;
}

// ---------------------------------------------------------------- canonical forms

/// What changes the results, normalized: durations in ns, defaults filled.
json run_shape(const Profile& p) {
  json headers = json::object();
  for (const auto& [name, value] : p.target.headers) headers[name] = value;
  return {{"target",
           {{"url", p.target.url},
            {"method", p.target.method},
            {"headers", headers},
            {"body", p.target.body}}},
          {"load",
           {{"threads", p.load.threads},
            {"connections", p.load.connections},
            {"duration", p.load.duration.count()},
            {"warmup", p.load.warmup.count()},
            {"rate", p.load.rate},
            {"engine", p.load.engine},
            {"timeout", p.load.timeout.count()}}},
          {"repeat", {{"count", p.repeat.count}, {"discard", p.repeat.discard}}}};
}

/// Values written with `${...}` enter the hash as written, so that the
/// environment (a port, a rotated token) cannot change the test's identity.
void keep_templates(json& canonical, const Doc& raw) {
  if (!raw.is_object()) return;
  for (auto it = canonical.begin(); it != canonical.end(); ++it) {
    auto written = raw.find(it.key());
    if (written == raw.end()) continue;
    if (written->is_string() &&
        written->get_ref<const std::string&>().find("${") != std::string::npos)
      *it = written->get<std::string>();
    else if (it->is_object())
      keep_templates(*it, *written);
  }
}

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string profile_hash(const Profile& profile, const Doc& raw) {
  json shape = run_shape(profile);
  keep_templates(shape, raw);
  return sha256_hex(dump(shape));
}

/// "http://user:secret@host/" -> "http://user:<redacted>@host/".
std::string redacted_url(const std::string& url) {
  size_t start = url.find("://");
  if (start == std::string::npos) return url;
  start += 3;
  size_t end = url.find_first_of("/?#", start);
  size_t at = url.rfind('@', end == std::string::npos ? url.size() : end);
  if (at == std::string::npos || at < start) return url;
  size_t colon = url.find(':', start);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "<redacted>" + url.substr(at);
}

json redacted_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                    bool (*secret)(std::string_view)) {
  json out = json::object();
  for (const auto& [name, value] : pairs) out[name] = secret(name) ? "<redacted>" : value;
  return out;
}

json thresholds_json(const ThresholdSet& set) {
  json out = json::object();
  for (const auto& [metric, limits] : set) {
    const MetricDef* def = find_metric(metric);
    json entry = json::object();
    if (limits.warn_pct) entry["warn"] = percent_text(*limits.warn_pct);
    if (limits.fail_pct) entry["fail"] = percent_text(*limits.fail_pct);
    if (limits.min) entry["min"] = *limits.min;
    if (limits.max && def && def->unit == "ms")
      entry["max"] = format_duration(Nanos(std::llround(*limits.max * 1e6)));
    else if (limits.max)
      entry["max"] = percent_text(*limits.max);
    out[def ? std::string(def->threshold_key) : metric] = entry;
  }
  return out;
}

json service_json(const ServiceSpec& s) {
  return {{"command", s.command},
          {"ready_url", redacted_url(s.ready_url)},
          {"ready_timeout", format_duration(s.ready_timeout)},
          {"cwd", s.cwd},
          {"env", redacted_pairs(s.env, is_secret_env)}};
}

/// The profile as perfgate understood it, itself a valid profile: durations
/// keep their units, defaults are filled, secrets are replaced.
std::string redacted_profile_json(const Profile& p) {
  json out = {{"name", p.name},
              {"description", p.description},
              {"target",
               {{"url", redacted_url(p.target.url)},
                {"method", p.target.method},
                {"headers", redacted_pairs(p.target.headers, is_secret_header)},
                {"body", p.target.body}}},
              {"load",
               {{"threads", p.load.threads},
                {"connections", p.load.connections},
                {"duration", format_duration(p.load.duration)},
                {"warmup", format_duration(p.load.warmup)},
                {"rate", p.load.rate},
                {"engine", p.load.engine},
                {"timeout", format_duration(p.load.timeout)}}},
              {"repeat", {{"count", p.repeat.count}, {"discard", p.repeat.discard}}},
              {"thresholds", thresholds_json(p.thresholds)}};
  if (p.service) out["service"] = service_json(*p.service);
  return dump(out);
}

// ---------------------------------------------------------------- parsing

ProfileProblem syntax_problem(std::string_view text, const json::parse_error& e) {
  // nlohmann counts bytes from 1 and points at the last byte it read.
  TextPosition at = position_at(text, e.byte == 0 ? 0 : e.byte - 1);
  std::string what = e.what();
  size_t detail = what.find("syntax error ");
  std::string message = detail != std::string::npos
                            ? "syntax error: " + what.substr(detail + 13)
                            : "syntax error: " + what.substr(what.find(": ") + 2);
  return {at.line, "", message, at.column};
}

Doc parse_json(std::string_view text, const std::string& source_name) {
  try {
    return Doc::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw ProfileError(source_name, {syntax_problem(text, e)});
  } catch (const json::exception& e) {
    throw ProfileError(source_name, {{0, "", std::string("invalid JSON: ") + e.what()}});
  }
}

void report_duplicates(const JsonSourceMap& map, Problems& problems) {
  for (const auto& dup : map.duplicates())
    problems.add(dup.path, "duplicate key (first on line " + std::to_string(dup.first_line) +
                               "); only one may be given");
}

std::string problem_line(const std::string& source, const ProfileProblem& p) {
  std::string out = source;
  if (p.line > 0) out += ":" + std::to_string(p.line);
  if (p.line > 0 && p.column > 0) out += ":" + std::to_string(p.column);
  out += ": ";
  if (!p.key_path.empty()) out += p.key_path + ": ";
  return out + p.message;
}

std::string first_line(const std::string& source, const std::vector<ProfileProblem>& problems) {
  if (problems.empty()) return source + ": invalid profile";
  return problem_line(source, problems.front());
}

std::string read_text(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read profile " + path.string() + ": " + std::strerror(errno));
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  int read_errno = errno;
  ::close(fd);
  if (n < 0) throw Error("cannot read profile " + path.string() + ": " + std::strerror(read_errno));
  return text;
}

}  // namespace

ProfileError::ProfileError(std::string source, std::vector<ProfileProblem> problems)
    : Error(first_line(source, problems)),
      source_(std::move(source)),
      problems_(std::move(problems)) {}

std::vector<std::string> ProfileError::lines() const {
  std::vector<std::string> out;
  for (const auto& p : problems_) out.push_back(problem_line(source_, p));
  if (out.empty()) out.push_back(what());
  return out;
}

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

Profile load_profile(const std::filesystem::path& path, const EnvLookup& env) {
  return parse_profile(read_text(path), path.string(), env);
}

Profile parse_profile(std::string_view text, const std::string& source_name, const EnvLookup& env) {
  Doc raw = parse_json(text, source_name);
  JsonSourceMap map = JsonSourceMap::scan(text);
  Problems problems(map);
  report_duplicates(map, problems);
  Profile profile = read_profile(substitute(raw, "", env, problems), problems);
  if (!problems.empty()) throw ProfileError(source_name, std::move(problems).by_line());
  profile.source = source_name;
  profile.hash = profile_hash(profile, raw);
  profile.redacted_json = redacted_profile_json(profile);
  return profile;
}

ThresholdSet default_thresholds() {
  ThresholdSet set;
  set["throughput_rps"].warn_pct = 5.0;
  set["throughput_rps"].fail_pct = 10.0;
  set["latency_p99_ms"].warn_pct = 10.0;
  set["latency_p99_ms"].fail_pct = 20.0;
  set["error_rate_pct"].max = 1.0;
  return set;
}

bool is_secret_header(std::string_view name) {
  std::string lower = lowercase(name);
  if (lower == "cookie" || lower == "set-cookie") return true;
  // Authorization and Proxy-Authorization contain "auth".
  for (std::string_view word :
       {"token", "secret", "password", "api-key", "apikey", "auth", "session"})
    if (lower.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace perfgate
