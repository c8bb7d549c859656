// `cost`: "callgrind", or { "instrument": "callgrind", "requests": 1000, ... }.
#include <algorithm>
#include <array>

#include "profile_sections.h"

namespace perfgate::profile_detail {
namespace {

constexpr std::array<std::string_view, 13> kCostKeys = {
    "instrument",   "requests",       "warmup_requests", "connections", "launches",
    "max_launches", "budget",         "cache_sim",       "required",    "ready_timeout",
    "timeout",      "steady_runtime", "count_time"};
constexpr Nanos kMaxTimeout = std::chrono::hours(1);
constexpr std::array<std::string_view, 4> kInstruments = {"off", "callgrind", "perf", "auto"};

bool known_instrument(const Section& s, std::string_view key, const std::string& value) {
  for (auto name : kInstruments)
    if (value == name) return true;
  s.problem(key, "must be \"off\", \"callgrind\", \"perf\" or \"auto\", got " + json_quoted(value));
  return false;
}

CostSpec read_cost_object(const Section& s) {
  CostSpec spec;
  s.reject_unknown(kCostKeys);
  if (auto i = s.string("instrument"); i && known_instrument(s, "instrument", *i))
    spec.instrument = *i;
  else if (!s.has("instrument"))
    spec.instrument = "callgrind";
  if (const Doc* requests = s.get("requests"); requests && requests->is_string()) {
    if (requests->get<std::string>() != "auto")
      s.problem("requests", "must be \"auto\" or a positive integer, got " + shown(*requests));
  } else if (auto pinned = s.integer("requests", 1, 1'000'000)) {
    spec.requests = *pinned;
    spec.requests_auto = false;
  }
  spec.count_time = s.duration("count_time", false, kMaxTimeout).value_or(spec.count_time);
  spec.warmup_requests = s.integer("warmup_requests", 0, 1'000'000).value_or(spec.warmup_requests);
  spec.connections = s.integer("connections", 1, 1024).value_or(spec.connections);
  // One launch a side has no spread to check its counts against.
  spec.launches = s.integer("launches", 2, 50).value_or(spec.launches);
  spec.max_launches = std::max(spec.launches, spec.max_launches);
  if (auto most = s.integer("max_launches", 2, 50)) {
    if (*most < spec.launches)
      s.problem("max_launches", "must be at least cost.launches (" + std::to_string(spec.launches) +
                                    "), got " + std::to_string(*most));
    else
      spec.max_launches = *most;
  }
  spec.budget = s.duration("budget", false, kMaxTimeout).value_or(spec.budget);
  spec.cache_sim = s.boolean("cache_sim").value_or(false);
  spec.required = s.boolean("required").value_or(false);
  spec.steady_runtime = s.boolean("steady_runtime").value_or(true);
  spec.ready_timeout = s.duration("ready_timeout", false, kMaxTimeout).value_or(spec.ready_timeout);
  spec.timeout = s.duration("timeout", false, kMaxTimeout).value_or(spec.timeout);
  return spec;
}

}  // namespace

CostSpec read_cost(const Section& root, ThresholdSet& limits) {
  const Doc* value = root.get("cost");
  if (!value) return {};
  CostSpec spec;
  if (value->is_object()) {
    spec = read_cost_object(root.object("cost"));
  } else if (auto name = root.string("cost"); name && known_instrument(root, "cost", *name)) {
    spec.instrument = *name;
  }
  // A watched service cannot be restarted under an instrument: a count that
  // must run cannot, which `validate` says before any load (issue 50, item 14).
  if (spec.enabled() && spec.required) {
    const Doc* service = root.get("service");
    if (!service || !service->is_object() || !service->contains("command"))
      root.problem("cost",
                   "required: true needs a service perfgate starts (service.command); "
                   "a watched service cannot be counted");
  }
  // Counts are exact where the service is deterministic: the limits are tight.
  if (spec.enabled() && !limits.contains("instructions_per_request"))
    limits["instructions_per_request"] = Thresholds{1, 2, std::nullopt, std::nullopt};
  return spec;
}

}  // namespace perfgate::profile_detail
