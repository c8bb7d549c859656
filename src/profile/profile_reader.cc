#include "profile_reader.h"

#include <cctype>
#include <cstdio>

#include "perfgate/core/checked.h"
#include "perfgate/core/nearest_word.h"
#include "profile_limits.h"

namespace perfgate::profile_detail {
namespace {

constexpr size_t kMaxShownChars = 60;

}  // namespace

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

std::string unknown_key_message(std::string_view key, Keys known) {
  if (auto nearest = nearest_word(key, known))
    return "unknown key; did you mean \"" + std::string(*nearest) + "\"?";
  std::string list;
  for (auto name : known) list += (list.empty() ? "" : ", ") + std::string(name);
  return "unknown key; expected one of: " + list;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

/// The value of one `${...}`: NAME or NAME:-default (the default also when set but empty).
static std::string variable(std::string_view spec, const EnvLookup& env,
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

namespace {

/// What one document's substitution may still produce: a profile of many
/// `${BIG}` would otherwise multiply one large variable without bound.
struct ExpansionBudget {
  size_t bytes_left = kMaxExpandedBytes;
  bool exceeded = false;
};

}  // namespace

/// Expands `${NAME}` and `${NAME:-default}`; `$${` stands for a literal `${`.
static std::string expand(std::string_view text, const EnvLookup& env,
                          std::vector<std::string>& errors, ExpansionBudget& budget) {
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
      std::string value = variable(text.substr(i + 2, close - i - 2), env, errors);
      if (value.size() > budget.bytes_left) {
        budget.exceeded = true;
        errors.push_back("the environment variables expand to more than 64 MiB in all");
        return out;
      }
      budget.bytes_left -= value.size();
      out += value;
      i = close + 1;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

static Doc substitute_at(const Doc& value, const std::string& path, int depth, const EnvLookup& env,
                         Problems& problems, ExpansionBudget& budget) {
  if (value.is_string()) {
    std::vector<std::string> errors;
    Doc out = budget.exceeded
                  ? Doc("")
                  : Doc(expand(value.get_ref<const std::string&>(), env, errors, budget));
    for (auto& error : errors) problems.add(path, std::move(error));
    if (!errors.empty()) problems.mute(path);
    return out;
  }
  if (!value.is_structured()) return value;
  // The text was checked for nesting already; this keeps the recursion bounded
  // for documents that did not come from text.
  if (depth >= kMaxNesting) {
    problems.add(path, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
    return Doc();
  }
  Doc out = value.is_object() ? Doc::object() : Doc::array();
  if (value.is_object()) {
    for (auto& [key, item] : value.items())
      out[key] = path.empty() && key == "$schema"
                     ? item
                     : substitute_at(item, child_path(path, key), depth + 1, env, problems, budget);
  } else {
    for (size_t i = 0; i < value.size(); ++i)
      out.push_back(
          substitute_at(value[i], element_path(path, i), depth + 1, env, problems, budget));
  }
  return out;
}

Doc substitute(const Doc& value, const std::string& path, const EnvLookup& env,
               Problems& problems) {
  ExpansionBudget budget;
  return substitute_at(value, path, 0, env, problems, budget);
}

bool is_integral(const Doc& value) {
  if (value.is_number_integer()) return true;
  return value.is_number_float() && std::floor(value.get<double>()) == value.get<double>();
}

std::optional<Nanos> duration_of(const Doc& value) {
  if (value.is_string()) return parse_duration(value.get_ref<const std::string&>());
  if (!value.is_number()) return std::nullopt;
  double seconds = value.get<double>();
  if (seconds < 0) return std::nullopt;
  // Too long to count is past every limit: the caller says which.
  return checked_seconds(seconds).value_or(Nanos::max());
}

bool is_overlong_duration(const Doc& value) {
  // A number of seconds saturates instead.
  return value.is_string() &&
         perfgate::is_overlong_duration(std::string_view(value.get_ref<const std::string&>()));
}

std::optional<double> percent_of(const Doc& value) {
  if (value.is_string()) return parse_percent(value.get_ref<const std::string&>());
  if (value.is_number() && value.get<double>() >= 0) return value.get<double>();
  return std::nullopt;
}

}  // namespace perfgate::profile_detail
