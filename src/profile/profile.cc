#include "perfgate/profile/profile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "perfgate/core/bounded_read.h"
#include "perfgate/profile/profile_recipe.h"
#include "profile_canonical.h"
#include "profile_limits.h"
#include "profile_sections.h"

namespace perfgate {
namespace {

using namespace profile_detail;

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
  if (auto problem = text_limit_problem(text)) throw ProfileError(source_name, {*problem});
  try {
    return Doc::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw ProfileError(source_name, {syntax_problem(text, e)});
  } catch (const json::out_of_range& e) {
    throw ProfileError(source_name, {number_range_problem(text, e.what())});
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
  // A signal ends an endless or slow read (a device, a FIFO) too; past the
  // limit the text is refused by text_limit_problem().
  auto read = read_bounded(path, kMaxProfileBytes);
  if (read.interrupted)
    throw Error("reading profile " + path.string() + ": interrupted by a signal");
  if (read.error)
    throw Error("cannot read profile " + path.string() + ": " + std::strerror(read.error));
  return std::move(read.bytes);
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
  std::string name = path.string();
  if (!name.starts_with(kRecipePrefix)) return parse_profile(read_text(path), name, env);
  auto recipe = find_recipe(std::string_view(name).substr(kRecipePrefix.size()));
  if (!recipe)
    throw Error(name + ": no such recipe; perfgate has " + recipe_names() +
                " (a file named so needs ./ in front)");
  return parse_profile(recipe->text, name, env);
}

namespace {

/// A string member of `object` as written, when it takes a ${VAR}.
const std::string* templated(const Doc* object, const char* key) {
  if (!object || !object->is_object()) return nullptr;
  auto it = object->find(key);
  if (it == object->end() || !it->is_string()) return nullptr;
  const auto& text = it->get_ref<const std::string&>();
  return text.find("${") == std::string::npos ? nullptr : &text;
}

bool has(const Doc* object, const char* key) {
  return object && object->is_object() && object->contains(key);
}

/// The URL as written from its path on, after the origin it expands to: a
/// host or port from the environment is no secret, and the stored profile must
/// stay a URL that parses; a token in the path or query is shown as ${VAR}.
/// Empty when nothing past the origin was substituted.
std::string written_url(const std::string& written, const std::string& expanded) {
  size_t scheme = written.find("://");
  size_t from = scheme == std::string::npos ? written.find('}') : scheme + 3;
  size_t rest = from == std::string::npos ? from : written.find_first_of("/?#", from);
  if (rest == std::string::npos || written.find("${", rest) == std::string::npos) return "";
  return redacted_url(url_origin(expanded) + written.substr(rest));
}

/// Notes the URL and body as written wherever a ${VAR} went into them, so
/// that only the written form is ever shown. A mix entry inherits what it
/// does not set, as read_request() does.
void note_templates(Profile& profile, const Doc& raw) {
  const Doc* target = has(&raw, "target") ? &raw["target"] : nullptr;
  TargetSpec& base = profile.target;
  if (auto url = templated(target, "url")) base.url_as_written = written_url(*url, base.url);
  if (auto body = templated(target, "body")) base.body_as_written = *body;
  const Doc* mix = has(target, "requests") ? &(*target)["requests"] : nullptr;
  for (size_t i = 0; i < profile.requests.size(); ++i) {
    const Doc* entry = mix && mix->is_array() && i < mix->size() ? &(*mix)[i] : nullptr;
    TargetSpec& request = profile.requests[i];
    request.url_as_written.clear();
    if (has(entry, "url")) {
      if (auto url = templated(entry, "url"))
        request.url_as_written = written_url(*url, request.url);
    } else if (has(entry, "path")) {
      if (auto path = templated(entry, "path"))
        request.url_as_written = redacted_url(url_origin(request.url) + *path);
    } else {
      request.url_as_written = base.url_as_written;
    }
    request.body_as_written.clear();
    if (has(entry, "body")) {
      if (auto body = templated(entry, "body")) request.body_as_written = *body;
    } else if (!has(entry, "body_file")) {
      request.body_as_written = base.body_as_written;
    }
  }
}

}  // namespace

Profile parse_profile(std::string_view text, const std::string& source_name, const EnvLookup& env) {
  Doc raw = parse_json(text, source_name);
  JsonSourceMap map = JsonSourceMap::scan(text);
  Problems problems(map);
  report_duplicates(map, problems);
  auto base_dir = std::filesystem::path(source_name).parent_path();
  Profile profile = read_profile(substitute(raw, "", env, problems), problems, base_dir);
  if (!problems.empty()) throw ProfileError(source_name, std::move(problems).by_line());
  profile.source = source_name;
  note_templates(profile, raw);
  profile.hash = profile_hash(profile, raw);
  profile.redacted_json = redacted_profile_json(profile, raw);
  return profile;
}

Profile paired_baseline_side(const Profile& profile) {
  if (!profile.paired) throw Error(profile.source.string() + ": not a paired profile");
  const PairedSpec& paired = *profile.paired;
  Profile side = profile;
  auto to_baseline = [&](TargetSpec& t) {
    t.url = paired.origin + t.url.substr(url_origin(t.url).size());
    if (!t.url_as_written.empty())
      t.url_as_written = redacted_url(paired.origin) +
                         t.url_as_written.substr(url_origin(t.url_as_written).size());
  };
  to_baseline(side.target);
  for (auto& request : side.requests) to_baseline(request);
  side.service = paired.service;
  side.paired.reset();
  return side;
}

ThresholdSet default_thresholds() {
  ThresholdSet set;
  set["throughput_rps"].warn_pct = 3.0;
  set["throughput_rps"].fail_pct = 5.0;
  set["latency_p99_ms"].warn_pct = 10.0;
  set["latency_p99_ms"].fail_pct = 20.0;
  set["error_rate_pct"].max = 1.0;
  // Judged only where the service is attributed (the figure exists then); the
  // noise behind the limits is in docs/statistics.md.
  set["service_cpu_us_per_request"].warn_pct = 5.0;
  set["service_cpu_us_per_request"].fail_pct = 8.0;
  return set;
}

std::vector<std::string> never_fails(const Profile& profile) {
  std::vector<std::string> why;
  bool can_fail = profile.cost.enabled();  // the counts' own fail limits (docs/cost.md)
  for (const auto& [metric, t] : profile.thresholds) {
    const MetricDef* def = find_metric(metric);
    bool falls = def && def->better == Better::kHigher;
    if (t.fail_pct && falls && *t.fail_pct >= 100) {
      char text[64];
      std::snprintf(text, sizeof text, "%g", *t.fail_pct);
      why.push_back("thresholds: " + metric + "'s fail limit is a fall of " + text +
                    "%, which it can never reach (a figure falls by less than 100%)");
    } else if (t.fail_pct || t.max || t.min) {
      can_fail = true;
    }
  }
  if (!can_fail)
    why.insert(why.begin(),
               "thresholds: no limit can fail this profile (every one is a warn): give a metric "
               "a \"fail\" or an absolute \"max\"/\"min\", or it only ever passes or warns");
  return why;
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
