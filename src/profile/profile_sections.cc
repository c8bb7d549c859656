#include "profile_sections.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "perfgate/core/checked.h"
#include "perfgate/core/sequential.h"
#include "perfgate/core/verdict.h"
#include "perfgate/profile/text_limits.h"

namespace perfgate::profile_detail {
namespace {

constexpr std::array<std::string_view, 15> kRootKeys = {
    "$schema", "name",       "description", "target",     "load",
    "repeat",  "thresholds", "service",     "saturation", "baseline",
    "redact",  "paired",     "placement",   "store",      "cost"};
constexpr std::array<std::string_view, 1> kStoreKeys = {"raw_samples"};
constexpr std::array<std::string_view, 6> kPairedKeys = {"baseline",    "leg_warmup", "max_redos",
                                                         "disturbance", "schedule",   "block"};
constexpr std::array<std::string_view, 3> kPairedBaselineKeys = {"origin", "service", "commit"};
constexpr std::array<std::string_view, 3> kBaselineKeys = {"window", "drift_window", "confidence"};
constexpr std::array<std::string_view, 8> kLoadKeys = {
    "threads", "connections", "duration", "warmup", "rate", "engine", "timeout", "connect_timeout"};
constexpr std::array<std::string_view, 4> kRepeatKeys = {"count", "discard", "max_count", "budget"};
constexpr std::array<std::string_view, 3> kFloorKeys = {"warn", "fail", "min"};
constexpr std::array<std::string_view, 3> kCeilingKeys = {"warn", "fail", "max"};
constexpr std::array<std::string_view, 9> kServiceKeys = {
    "command",  "ready_url",    "ready_timeout", "cwd",      "env",
    "pid_file", "process_name", "cgroup",        "container"};
constexpr std::array<std::string_view, 7> kSaturationKeys = {
    "interval", "generator_cpu",    "foreign_cpu", "host_cpu",
    "steal",    "memory_available", "cpu_pressure"};
constexpr std::array<std::string_view, 3> kEngines = {"auto", "curl", "native"};

// Limits past which a value is a typo, not a test plan.
constexpr int kMaxThreads = 1024;
constexpr int kMaxConnections = 1'000'000;
constexpr int kMaxRepeats = 10'000;
constexpr Nanos kMaxDuration = std::chrono::hours(24);
constexpr Nanos kMaxWarmup = std::chrono::hours(1);
constexpr Nanos kMaxTimeout = std::chrono::hours(1);

std::string read_name(const Section& root) {
  if (!root.require("name")) return "";
  auto name = root.string("name");
  if (name) {
    if (auto why = name_problem(*name)) root.problem("name", *why);
  }
  return name.value_or("");
}

void check_engine(const Section& s, const LoadSpec& load, const TargetSpec& target) {
  if (std::find(kEngines.begin(), kEngines.end(), load.engine) == kEngines.end()) {
    s.problem("engine",
              "must be \"auto\", \"curl\" or \"native\", got " + json_quoted(load.engine));
  } else if (load.engine == "native" && target.url.starts_with("https://")) {
    s.problem("engine",
              "\"native\" serves plain http:// only; use \"curl\" or \"auto\" for https://");
  } else if (load.engine == "native" && target.http_version == "2") {
    s.problem("engine", "\"native\" speaks HTTP/1.1 only; use \"curl\" for http_version \"2\"");
  }
}

// 0 is the closed model; any other rate must be one the open model's schedule
// can keep (1e-10 once made it loop for ever, 5e-324 flooded the target).
std::optional<double> read_rate(const Section& s) {
  const Doc* value = s.get("rate");
  if (!value) return std::nullopt;
  double rate = value->is_number() ? value->get<double>() : -1;
  if (value->is_number() && (rate == 0 || kRequestRate.contains(rate))) return rate;
  s.problem("rate", "must be 0 (the closed model) or a rate " + kRequestRate.words() + ", got " +
                        shown(*value));
  return std::nullopt;
}

// The shortest windows the engines honour: a window of 1ms closes before the
// load threads have started, and a run of such windows ended "the target
// hung"; a host sample every 1ns busies a core and measures only itself.
constexpr Nanos kMinIterationDuration = std::chrono::milliseconds(10);
constexpr Nanos kMinSamplingInterval = std::chrono::milliseconds(10);

std::optional<Nanos> at_least(const Section& s, std::string_view key, std::optional<Nanos> d,
                              Nanos min, std::string_view why) {
  if (!d || *d >= min) return d;
  s.problem(key, "must be at least " + format_duration(min) + " (" + std::string(why) + "), got " +
                     shown(*s.get(key)));
  return std::nullopt;
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
  load.duration = at_least(s, "duration", s.duration("duration", false, kMaxDuration),
                           kMinIterationDuration, "a shorter window closes before the load runs")
                      .value_or(load.duration);
  load.warmup = s.duration("warmup", true, kMaxWarmup).value_or(load.warmup);
  load.rate = read_rate(s).value_or(load.rate);
  load.engine = s.string("engine").value_or(load.engine);
  check_engine(s, load, target);
  load.timeout = s.duration("timeout", false, kMaxTimeout).value_or(load.timeout);
  load.connect_timeout =
      s.duration("connect_timeout", false, kMaxTimeout).value_or(load.connect_timeout);
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
  if (auto most = s.integer("max_count", 1, kMaxRepeats)) {
    if (*most < repeat.count)
      s.problem("max_count", "must be at least count (" + std::to_string(repeat.count) + "), got " +
                                 std::to_string(*most));
    repeat.max_count = *most;
  }
  repeat.budget = s.duration("budget", false, kMaxDuration).value_or(repeat.budget);
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
  } else if (def.unit == "%") {
    limits.max = entry.percent("max", 100);
  } else {
    limits.max = entry.positive_number("max");  // in the metric's unit, e.g. CPU-us
  }
  return limits;
}

// requests_per_service_cpu_s is 1e6 / service_cpu_us_per_request: relative limits
// on both would test one signal twice, spending the run's false-fail budget on
// it twice and lowering every metric's power for nothing.
void refuse_reciprocal_limits(const Section& s, const ThresholdSet& set) {
  auto relative = [&](std::string_view key) {
    auto it = set.find(key);
    return it != set.end() && (it->second.warn_pct || it->second.fail_pct);
  };
  if (relative("service_cpu_us_per_request") && relative("requests_per_service_cpu_s"))
    s.problem("requests_per_service_cpu",
              "is the reciprocal of service_cpu_per_request, which already has relative limits: "
              "keep one of the two");
}

ThresholdSet read_thresholds(const Section& root) {
  if (!root.has("thresholds")) return default_thresholds();
  Section s = root.object("thresholds");
  std::vector<const MetricDef*> defs;
  for (auto list : {metric_defs(), host_metric_defs(), cost_metric_defs()})
    for (const auto& def : list) defs.push_back(&def);
  std::vector<std::string_view> known;
  for (const auto* def : defs) known.push_back(def->threshold_key);
  s.reject_unknown(known);
  ThresholdSet set;
  for (const auto* d : defs) {
    const MetricDef& def = *d;
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
  refuse_reciprocal_limits(s, set);
  return set;
}

std::optional<ServiceSpec> read_service(const Section& root, const TargetSpec& target) {
  Section s = root.object("service");
  if (!s.present()) return std::nullopt;
  s.reject_unknown(kServiceKeys);
  ServiceSpec service;
  service.pid_file = s.string("pid_file").value_or("");
  service.process_name = s.string("process_name").value_or("");
  service.cgroup = s.string("cgroup").value_or("");
  service.container = s.string("container").value_or("");
  // A service that runs elsewhere on this host is only watched, not started.
  bool watched_only = !service.pid_file.empty() || !service.process_name.empty() ||
                      !service.cgroup.empty() || !service.container.empty();
  if (s.has("command") || !watched_only) {
    if (s.require("command")) service.command = s.string_list("command");
  }
  service.ready_url = s.has("ready_url") ? read_url(s, "ready_url") : target.url;
  service.ready_timeout =
      s.duration("ready_timeout", false, kMaxTimeout).value_or(service.ready_timeout);
  service.cwd = s.string("cwd").value_or("");
  service.env = s.string_map("env", env_name_problem);
  return service;
}

SaturationSpec read_saturation(const Section& root) {
  SaturationSpec spec;
  Section s = root.object("saturation");
  s.reject_unknown(kSaturationKeys);
  spec.interval = at_least(s, "interval", s.duration("interval", false, std::chrono::seconds(10)),
                           kMinSamplingInterval, "sampling more often busies a core")
                      .value_or(spec.interval);
  spec.generator_thread_cpu_pct =
      s.percent("generator_cpu", 100).value_or(spec.generator_thread_cpu_pct);
  spec.foreign_cpu_pct = s.percent("foreign_cpu", 100).value_or(spec.foreign_cpu_pct);
  spec.host_cpu_pct = s.percent("host_cpu", 100).value_or(spec.host_cpu_pct);
  spec.steal_pct = s.percent("steal", 100).value_or(spec.steal_pct);
  spec.memory_available_min_pct =
      s.percent("memory_available", 100).value_or(spec.memory_available_min_pct);
  spec.cpu_pressure_pct = s.percent("cpu_pressure", 100).value_or(spec.cpu_pressure_pct);
  return spec;
}

BaselineSpec read_baseline(const Section& root) {
  BaselineSpec spec;
  Section s = root.object("baseline");
  s.reject_unknown(kBaselineKeys);
  spec.window = s.integer("window", 1, 100).value_or(spec.window);
  spec.drift_window = s.integer("drift_window", 0, 10'000).value_or(spec.drift_window);
  if (auto confidence = s.percent("confidence", 99.9)) {
    if (*confidence < 50)
      s.problem("confidence", "must be at least 50%, got " + percent_text(*confidence));
    else
      spec.confidence = *confidence;
  }
  if (spec.drift_window > 0 && spec.drift_window <= spec.window && s.has("drift_window"))
    s.problem("drift_window", "must be 0 (off) or more than window (" +
                                  std::to_string(spec.window) + "), got " +
                                  std::to_string(spec.drift_window));
  return spec;
}

// Some look must be able to fail at all: at the level each of its tested
// metrics is judged at (the confidence split over the metrics that share the
// run's false-fail budget, then spent over a sequential run's looks). A
// sequential run's strict early looks that cannot fail just extend.
void check_pairs_reach_level(const Section& s, const Profile& p, int block) {
  // As the run plans it (gate/sequential_run.cc): paired mode's boundary.
  SequentialPlan plan{p.repeat.count, p.repeat.max_count, 2};
  plan.spending = kPairedSpending;
  plan.discard = p.repeat.discard;
  plan.block = std::max(block, 1);
  // With paired.block above 1 the test counts launches: blocks with a kept pair.
  int kept = plan.kept(plan.extends() ? p.repeat.max_count : p.repeat.count);
  int family = family_bound(p.thresholds);
  double single = family_confidence(p.baseline.confidence, family);
  if (plan.kept(p.repeat.count) <= 0 || plan.can_ever_fail(single)) return;
  // No look is looser than a single look's level: the least any look needs.
  double level = single;
  int needed = min_pairs_to_reach(level);
  // Enough for one look at the whole level, yet the boundary's share at every
  // look is out of reach: rare (a few looks just past the count one look needs).
  if (kept >= needed) needed = kept + 1;
  std::string why = percent_text(p.baseline.confidence) + " confidence";
  if (plan.extends()) why += " spent over " + std::to_string(plan.looks()) + " looks";
  if (family > 1)
    why += (plan.extends() ? " and " : " shared by ") + std::to_string(family) + " tested metrics";
  char each[32];
  std::snprintf(each, sizeof each, "%.4g%%", level);
  std::string what = block > 1 ? "kept blocks of " + std::to_string(block) + " pairs (paired.block)"
                               : "kept pairs";
  s.problem("", "needs at least " + std::to_string(needed) + " " + what + " to ever fail at " +
                    why +
                    (level != p.baseline.confidence ? " (" + std::string(each) + " each)" : "") +
                    ", got " + std::to_string(kept) +
                    (block > 1        ? ""
                     : plan.extends() ? " at its last look (repeat.max_count - repeat.discard)"
                                      : " (repeat.count - repeat.discard)"));
}

// An origin's host and port ("http://h:p"; the scheme's port when none).
std::pair<std::string, std::string> host_and_port(const std::string& origin) {
  auto scheme = origin.find("://");
  std::string rest = scheme == std::string::npos ? origin : origin.substr(scheme + 3);
  if (auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  auto colon = rest.rfind(':');
  if (colon == std::string::npos || rest.find(']', colon) != std::string::npos)
    return {rest, origin.starts_with("https") ? "443" : "80"};
  return {rest.substr(0, colon), rest.substr(colon + 1)};
}

// Every address `host` names, as IPv6 (IPv4 mapped): an IP literal in any
// form the resolver takes (2130706433, 0x7f000001, 0, [::ffff:127.0.0.1]) or
// a name (LOCALHOST, localhost., this host's own). Empty when it names none.
std::vector<in6_addr> addresses_of(std::string host) {
  if (host.size() > 1 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.size() > 1 && host.back() == '.') host.pop_back();  // the root's dot: the same name
  std::vector<in6_addr> out;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return out;
  for (auto* a = found; a; a = a->ai_next) {
    in6_addr six{};
    if (a->ai_family == AF_INET6) {
      six = reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr;
    } else if (a->ai_family == AF_INET) {
      six.s6_addr[10] = six.s6_addr[11] = 0xff;
      std::memcpy(&six.s6_addr[12], &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, 4);
    } else {
      continue;
    }
    out.push_back(six);
  }
  ::freeaddrinfo(found);
  return out;
}

// This machine, as a server listening on every address sees it: loopback,
// the unspecified address, or an address of one of its interfaces.
bool this_machine(const in6_addr& a) {
  bool mapped = IN6_IS_ADDR_V4MAPPED(&a);
  if (IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_UNSPECIFIED(&a)) return true;
  if (mapped && (a.s6_addr[12] == 127 ||
                 (a.s6_addr[12] | a.s6_addr[13] | a.s6_addr[14] | a.s6_addr[15]) == 0))
    return true;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool own = false;
  for (auto* i = list; i && !own; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (i->ifa_addr->sa_family == AF_INET && mapped)
      own = std::memcmp(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, &a.s6_addr[12],
                        4) == 0;
    if (i->ifa_addr->sa_family == AF_INET6 && !mapped)
      own =
          std::memcmp(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, &a, sizeof a) == 0;
  }
  ::freeifaddrs(list);
  return own;
}

// Whether one server could answer both hosts at one port: they name the same
// address, or both this machine. Compared by where they lead, not by their
// spelling (issue 50, item 2).
bool same_server(const std::string& one, const std::string& other) {
  auto a = addresses_of(one), b = addresses_of(other);
  for (const auto& x : a)
    for (const auto& y : b)
      if (std::memcmp(&x, &y, sizeof x) == 0 || (this_machine(x) && this_machine(y))) return true;
  return false;
}

void check_origin(const Section& b, const std::string& origin, const Profile& p) {
  std::string path = origin.substr(url_origin(origin).size());
  if (!path.empty() && path != "/") {
    b.problem("origin",
              "must be an origin like \"http://127.0.0.1:8081\" (no path: every "
              "request keeps its own), got " +
                  json_quoted(origin));
    return;
  }
  auto scheme = [](const std::string& url) { return url.substr(0, url.find("://")); };
  if (scheme(origin) != scheme(p.target.url))
    b.problem("origin", "must use the target's scheme (" + scheme(p.target.url) +
                            "://), so that both sides take the same engine, got " +
                            json_quoted(origin));
  std::string candidate = url_origin(p.target.url);
  auto [base_host, base_port] = host_and_port(url_origin(origin));
  auto [target_host, target_port] = host_and_port(candidate);
  if (url_origin(origin) == candidate)
    b.problem("origin", "is the target's own origin; the baseline build must answer elsewhere");
  else if (base_port == target_port && same_server(base_host, target_host))
    b.problem("origin", "is the target's port on another address of the same machine (" +
                            base_host + " and " + target_host +
                            "): a server listening on every address answers both, and the run "
                            "would compare it with itself; give the baseline build its own port");
  for (const auto& request : p.requests)
    if (url_origin(request.url) != candidate)
      b.problem("origin",
                "paired mode sends every request to both origins, so every request "
                "must be on the target's origin (" +
                    candidate + "), got " + json_quoted(redacted_url(request.url)));
}

// `paired`: read after target, requests, repeat and baseline, which it checks against.
std::optional<PairedSpec> read_paired(const Section& root, const Profile& p) {
  Section s = root.object("paired");
  if (!s.present()) return std::nullopt;
  s.reject_unknown(kPairedKeys);
  PairedSpec spec;
  spec.leg_warmup = s.duration("leg_warmup", true, kMaxWarmup).value_or(spec.leg_warmup);
  spec.max_redos = s.integer("max_redos", 0, kMaxRepeats).value_or(spec.max_redos);
  spec.disturbance_pct = s.percent("disturbance", 100).value_or(spec.disturbance_pct);
  spec.schedule = s.string("schedule").value_or(spec.schedule);
  if (spec.schedule != "alternate" && spec.schedule != "duet")
    s.problem("schedule", "must be \"alternate\" or \"duet\", got " + json_quoted(spec.schedule));
  spec.block = s.integer("block", 1, kMaxRepeats).value_or(spec.block);
  check_pairs_reach_level(s, p, spec.block);
  if (!s.require("baseline")) return spec;
  Section b = s.object("baseline");
  b.reject_unknown(kPairedBaselineKeys);
  size_t before = b.problems().size();
  if (b.require("origin")) spec.origin = read_url(b, "origin");
  if (!spec.origin.empty() && b.problems().size() == before) {  // a URL, then an origin
    check_origin(b, spec.origin, p);
    spec.origin = url_origin(spec.origin);
  }
  spec.commit = b.string("commit").value_or("");
  // The store holds a run's commit to kMaxCiTextBytes, and its export must import
  // again (issue 50: a 5 KiB value from the environment was stored).
  if (spec.commit.size() > kMaxCiTextBytes) {
    b.problem("commit", "must be at most " + std::to_string(kMaxCiTextBytes) +
                            " bytes (a commit id), got " + std::to_string(spec.commit.size()));
    spec.commit.clear();
  }
  TargetSpec side = p.target;
  if (!spec.origin.empty())
    side.url = spec.origin + p.target.url.substr(url_origin(p.target.url).size());
  spec.service = read_service(b, side);
  return spec;
}

// `store.raw_samples`: "flagged" (the default: raw samples of runs a saturation
// rule flagged) or "always".
bool read_keep_raw_samples(const Section& root) {
  Section s = root.object("store");
  s.reject_unknown(kStoreKeys);
  auto value = s.string("raw_samples");
  if (value && *value != "always" && *value != "flagged")
    s.problem("raw_samples", "must be \"flagged\" or \"always\", got " + json_quoted(*value));
  return value == "always";
}

std::vector<std::string> read_redact(const Section& root) {
  if (!root.has("redact")) return {};
  auto names = root.string_list("redact");
  for (size_t i = 0; i < names.size(); ++i)
    if (auto why = header_name_problem(names[i])) root.problem(element_path("redact", i), *why);
  return names;
}

}  // namespace

Profile read_profile(const Doc& doc, Problems& problems, const std::filesystem::path& base_dir) {
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
  profile.target = read_target(root, base_dir);
  profile.requests = read_requests(root, profile.target, base_dir);
  profile.load = read_load(root, profile.target);
  profile.repeat = read_repeat(root);
  profile.thresholds = read_thresholds(root);
  profile.service = read_service(root, profile.target);
  profile.saturation = read_saturation(root);
  profile.baseline = read_baseline(root);
  profile.redact = read_redact(root);
  profile.paired = read_paired(root, profile);
  profile.placement = read_placement(root);
  profile.cost = read_cost(root, profile.thresholds);
  profile.keep_raw_samples = read_keep_raw_samples(root);
  return profile;
}

}  // namespace perfgate::profile_detail
