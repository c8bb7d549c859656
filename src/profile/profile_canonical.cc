#include "profile_canonical.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "perfgate/core/cpu_list.h"
#include "perfgate/core/sha256.h"

namespace perfgate::profile_detail {

/// Environment names use '_' where header names use '-'; a few more words mark secrets.
bool is_secret_env(std::string_view name) {
  std::string normal = lowercase(name);
  std::replace(normal.begin(), normal.end(), '_', '-');
  return is_secret_header(normal) || normal.find("passw") != std::string::npos ||
         normal.find("credential") != std::string::npos || normal.find("key") != std::string::npos;
}

// As codes and ranges ("404", "200-299"); absent when the default (2xx and 3xx),
// so that profiles that do not set it keep their hash.
static void add_success_statuses(json& out, const TargetSpec& t) {
  if (t.success_statuses == SuccessStatuses{}) return;
  json terms = json::array();
  for (const auto& [first, last] : t.success_statuses.ranges)
    terms.push_back(first == last ? std::to_string(first)
                                  : std::to_string(first) + "-" + std::to_string(last));
  out["success_statuses"] = terms;
}

static json request_shape(const TargetSpec& t) {
  json headers = json::object();
  for (const auto& [name, value] : t.headers) headers[name] = value;
  // The body's bytes, not the file's name: editing the file is another test.
  json shape = {{"url", t.url},
                {"method", t.method},
                {"headers", headers},
                {"body", t.body},
                {"name", t.name},
                {"weight", t.weight},
                {"tls_verify", t.tls_verify},
                {"http_version", t.http_version}};
  add_success_statuses(shape, t);
  return shape;
}

/// What changes the results, normalized: durations in ns, defaults filled.
static json run_shape(const Profile& p) {
  json mix = json::array();
  for (const auto& request : p.requests) mix.push_back(request_shape(request));
  json target = request_shape(p.target);
  if (!mix.empty()) target["requests"] = mix;
  json shape = {{"target", target},
                {"load",
                 {{"threads", p.load.threads},
                  {"connections", p.load.connections},
                  {"duration", p.load.duration.count()},
                  {"warmup", p.load.warmup.count()},
                  {"rate", p.load.rate},
                  {"engine", p.load.engine},
                  {"timeout", p.load.timeout.count()},
                  {"connect_timeout", p.load.connect_timeout.count()}}},
                {"repeat", {{"count", p.repeat.count}, {"discard", p.repeat.discard}}}};
  // Paired runs alternate with another service: another test than a run alone.
  if (p.paired)
    shape["paired"] = {{"baseline", {{"origin", p.paired->origin}}},
                       {"leg_warmup", p.paired->leg_warmup.count()}};
  // Duet's sides share the machine at once, so each measures slower than alone:
  // other figures than an alternating run's. Only when set, so earlier hashes hold.
  if (p.paired && p.paired->schedule != PairedSpec{}.schedule)
    shape["paired"]["schedule"] = p.paired->schedule;
  if (p.paired && p.paired->block != PairedSpec{}.block) shape["paired"]["block"] = p.paired->block;
  return shape;
}

/// Values written with `${...}` enter the hash as written, so that the
/// environment (a port, a rotated token) cannot change the test's identity.
static void keep_templates(json& canonical, const Doc& raw) {
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

static std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string profile_hash(const Profile& profile, const Doc& raw) {
  json shape = run_shape(profile);
  keep_templates(shape, raw);
  return sha256_hex(dump(shape));
}

}  // namespace perfgate::profile_detail

namespace perfgate {

std::optional<std::pair<size_t, size_t>> url_userinfo(const std::string& url) {
  size_t start = url.find("://");
  if (start == std::string::npos) return std::nullopt;
  start += 3;
  size_t end = url.find_first_of("/?#", start);
  size_t at = url.rfind('@', end == std::string::npos ? url.size() : end);
  if (at == std::string::npos || at < start) return std::nullopt;
  return std::pair{start, at};
}

std::string redacted_url(const std::string& url) {
  auto userinfo = url_userinfo(url);
  if (!userinfo) return url;
  auto [start, at] = *userinfo;
  size_t colon = url.find(':', start);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "<redacted>" + url.substr(at);
}

std::string shown_url(const TargetSpec& target) {
  return target.url_as_written.empty() ? redacted_url(target.url) : target.url_as_written;
}

}  // namespace perfgate

namespace perfgate::profile_detail {

static json redacted_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                           const std::function<bool(std::string_view)>& secret) {
  json out = json::object();
  for (const auto& [name, value] : pairs) out[name] = secret(name) ? "<redacted>" : value;
  return out;
}

using Names = std::vector<std::string>;

static bool has_name(const Names& names, std::string_view name) {
  auto same = [&](const std::string& r) { return lowercase(r) == lowercase(name); };
  return std::any_of(names.begin(), names.end(), same);
}

/// Header names whose value, as written in `headers`, takes something from the environment.
static Names templated_headers(const Doc* headers) {
  Names names;
  if (!headers || !headers->is_object()) return names;
  for (auto& [name, value] : headers->items())
    if (value.is_string() && value.get_ref<const std::string&>().find("${") != std::string::npos)
      names.push_back(name);
  return names;
}

static const Doc* member(const Doc* object, std::string_view key) {
  if (!object || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

/// The templated headers of the target, then of each mix entry: an entry
/// inherits the target's headers unless it sets the same name itself.
static std::vector<Names> templated_header_sets(const Profile& p, const Doc& raw) {
  const Doc* target = member(&raw, "target");
  std::vector<Names> sets{templated_headers(member(target, "headers"))};
  const Doc* mix = member(target, "requests");
  for (size_t i = 0; i < p.requests.size(); ++i) {
    const Doc* entry_headers =
        mix && mix->is_array() && i < mix->size() ? member(&(*mix)[i], "headers") : nullptr;
    Names names = templated_headers(entry_headers);
    for (const auto& inherited : sets.front())
      if (!member(entry_headers, inherited)) names.push_back(inherited);
    sets.push_back(std::move(names));
  }
  return sets;
}

// The built-in secret names, the profile's own `redact` list, and the headers
// whose value came from the environment.
static std::function<bool(std::string_view)> secret_headers(const Profile& p,
                                                            const Names& templated) {
  return [&p, &templated](std::string_view name) {
    return is_secret_header(name) || has_name(p.redact, name) || has_name(templated, name);
  };
}

static std::string escaped_templates(std::string text) {
  for (size_t at = text.find("${"); at != std::string::npos; at = text.find("${", at + 3))
    text.insert(at, "$");
  return text;
}

static json request_json(const TargetSpec& t, const Profile& p, const Names& templated) {
  // The stored profile is read back without the environment: "$${" keeps a
  // ${VAR} shown instead of its value as text.
  json out = {{"url", escaped_templates(shown_url(t))},
              {"method", t.method},
              {"headers", redacted_pairs(t.headers, secret_headers(p, templated))}};
  if (!t.body_file.empty())
    out["body_file"] = t.body_file;
  else
    out["body"] = t.body_as_written.empty() ? t.body : escaped_templates(t.body_as_written);
  if (&t == &p.target) {  // connection options belong to the target, not to mix entries
    out["tls_verify"] = t.tls_verify;
    out["http_version"] = t.http_version;
  } else {
    out["weight"] = t.weight;
  }
  if (!t.name.empty()) out["name"] = t.name;
  add_success_statuses(out, t);
  return out;
}

static json saturation_json(const SaturationSpec& s) {
  auto pct = [](double v) { return percent_text(v); };
  return {{"interval", format_duration(s.interval)},
          {"generator_cpu", pct(s.generator_thread_cpu_pct)},
          {"foreign_cpu", pct(s.foreign_cpu_pct)},
          {"host_cpu", pct(s.host_cpu_pct)},
          {"steal", pct(s.steal_pct)},
          {"memory_available", pct(s.memory_available_min_pct)},
          {"cpu_pressure", pct(s.cpu_pressure_pct)}};
}

static json thresholds_json(const ThresholdSet& set) {
  json out = json::object();
  for (const auto& [metric, limits] : set) {
    const MetricDef* def = find_metric(metric);
    json entry = json::object();
    if (limits.warn_pct) entry["warn"] = percent_text(*limits.warn_pct);
    if (limits.fail_pct) entry["fail"] = percent_text(*limits.fail_pct);
    if (limits.min) entry["min"] = *limits.min;
    if (limits.max && def && def->unit == "ms")
      entry["max"] = format_duration(Nanos(std::llround(*limits.max * 1e6)));
    else if (limits.max && def && def->unit == "%")
      entry["max"] = percent_text(*limits.max);
    else if (limits.max)
      entry["max"] = *limits.max;
    out[def ? std::string(def->threshold_key) : metric] = entry;
  }
  return out;
}

static json service_json(const ServiceSpec& s) {
  json out = {{"ready_url", redacted_url(s.ready_url)},
              {"ready_timeout", format_duration(s.ready_timeout)},
              {"cwd", s.cwd},
              {"env", redacted_pairs(s.env, is_secret_env)}};
  if (!s.command.empty()) out["command"] = s.command;
  if (!s.pid_file.empty()) out["pid_file"] = s.pid_file;
  if (!s.process_name.empty()) out["process_name"] = s.process_name;
  if (!s.cgroup.empty()) out["cgroup"] = s.cgroup;
  if (!s.container.empty()) out["container"] = s.container;
  return out;
}

/// The profile as perfgate understood it, itself a valid profile: durations
/// keep their units, defaults are filled, secrets are replaced.
std::string redacted_profile_json(const Profile& p, const Doc& raw) {
  const std::vector<Names> templated = templated_header_sets(p, raw);
  json out = {{"name", p.name},
              {"description", p.description},
              {"target", request_json(p.target, p, templated.front())},
              {"load",
               {{"threads", p.load.threads},
                {"connections", p.load.connections},
                {"duration", format_duration(p.load.duration)},
                {"warmup", format_duration(p.load.warmup)},
                {"rate", p.load.rate},
                {"engine", p.load.engine},
                {"timeout", format_duration(p.load.timeout)},
                {"connect_timeout", format_duration(p.load.connect_timeout)}}},
              {"repeat", {{"count", p.repeat.count}, {"discard", p.repeat.discard}}},
              {"thresholds", thresholds_json(p.thresholds)}};
  // Only when set, so that the profiles of earlier runs read back unchanged.
  if (p.repeat.max_count > p.repeat.count) out["repeat"]["max_count"] = p.repeat.max_count;
  if (p.repeat.budget > Nanos(0)) out["repeat"]["budget"] = format_duration(p.repeat.budget);
  if (!p.requests.empty()) {
    json mix = json::array();
    for (size_t i = 0; i < p.requests.size(); ++i)
      mix.push_back(request_json(p.requests[i], p, templated[i + 1]));
    out["target"]["requests"] = mix;
  }
  if (p.service) out["service"] = service_json(*p.service);
  out["saturation"] = saturation_json(p.saturation);
  out["baseline"] = {{"window", p.baseline.window},
                     {"drift_window", p.baseline.drift_window},
                     {"confidence", percent_text(p.baseline.confidence)}};
  if (!p.redact.empty()) out["redact"] = p.redact;
  if (p.paired) {
    json baseline = {{"origin", redacted_url(p.paired->origin)}, {"commit", p.paired->commit}};
    if (p.paired->service) baseline["service"] = service_json(*p.paired->service);
    out["paired"] = {{"baseline", baseline}, {"leg_warmup", format_duration(p.paired->leg_warmup)}};
    if (p.paired->max_redos != PairedSpec{}.max_redos)
      out["paired"]["max_redos"] = p.paired->max_redos;
    if (p.paired->disturbance_pct != PairedSpec{}.disturbance_pct)
      out["paired"]["disturbance"] = percent_text(p.paired->disturbance_pct);
    if (p.paired->schedule != PairedSpec{}.schedule) out["paired"]["schedule"] = p.paired->schedule;
    if (p.paired->block != PairedSpec{}.block) out["paired"]["block"] = p.paired->block;
  }
  // Written only when not the default, so that stored profiles of earlier runs read the same.
  if (p.placement.mode == "off") out["placement"] = "off";
  if (p.placement.mode == "fixed")
    out["placement"] = {{"load", format_cpu_list(p.placement.load)},
                        {"service", format_cpu_list(p.placement.service)}};
  // Only when set, so that the stored profiles of earlier runs read the same.
  if (p.keep_raw_samples) out["store"] = {{"raw_samples", "always"}};
  return dump(out);
}

}  // namespace perfgate::profile_detail
