#include "perfgate/host/saturation.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>

namespace perfgate {
namespace {

/// One rule: its figure in a window, and whether that figure is past the limit.
struct Rule {
  std::string what;  // "foreign CPU"
  std::string unit;  // "% of the host"
  double limit = 0;
  bool below = false;      // memory: the figure must stay above
  bool busy_host = false;  // the host's load, not perfgate's: shared by a pair's sides
  std::function<std::optional<double>(const WindowSummary&)> figure;
  std::string advice;  // what a user can do about it, for Saturation::advice
};

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

bool past(const Rule& r, double v) {
  return r.below ? v < r.limit : v > r.limit;
}

// "foreign CPU 87% of the host (limit 25%)".
std::string describe(const Rule& r, double v) {
  return r.what + " " + fmt(v) + r.unit + " (limit " + fmt(r.limit) + "%)";
}

// "foreign CPU 87% of the host (limit 25%) in 4 of 5 iterations", with the worst window's figure.
std::optional<std::string> check(const Rule& r, const std::vector<WindowSummary>& kept) {
  int hits = 0;
  std::optional<double> worst;
  for (const auto& w : kept) {
    auto v = r.figure(w);
    if (!v || !past(r, *v)) continue;
    ++hits;
    if (!worst || (r.below ? *v < *worst : *v > *worst)) worst = v;
  }
  if (hits == 0 || hits * 2 < static_cast<int>(kept.size())) return std::nullopt;
  return describe(r, *worst) + " in " + std::to_string(hits) + " of " +
         std::to_string(kept.size()) + " iterations";
}

// A busy host falls on both sides of a paired run alike: the way out that
// needs no quieter machine.
constexpr const char* kPairedWayOut =
    "or gate in paired mode, where a busy host slows both builds alike (docs/ci.md, \"Paired "
    "mode\")";

std::vector<Rule> rules(const SaturationSpec& spec, const SaturationContext& context) {
  std::vector<Rule> out = {
      {"load thread at", "% of a core", spec.generator_thread_cpu_pct, false, false,
       [](const WindowSummary& w) { return std::optional(w.generator_thread_pct); },
       "the load generator set the pace: give it more threads (load.threads) or fewer "
       "connections; saturation.generator_cpu is the limit"},
      {"foreign CPU", "% of the host", spec.foreign_cpu_pct, false, true,
       [](const WindowSummary& w) { return std::optional(w.foreign_cpu_mean_pct); },
       std::string("other processes used the CPU: stop them for the run (a browser, a build), ") +
           kPairedWayOut + "; saturation.foreign_cpu is the limit"},
      {"CPU steal", "%", spec.steal_pct, false, true,
       [](const WindowSummary& w) { return std::optional(w.steal_mean_pct); },
       std::string("the hypervisor gave this machine's CPU to others: a dedicated runner, ") +
           kPairedWayOut + "; saturation.steal is the limit"},
      // Memory stays saturation in paired mode too: a side's own service may be
      // what exhausts it, and swapping does not fall evenly on both sides.
      {"memory available", "%", spec.memory_available_min_pct, true, false,
       [](const WindowSummary& w) { return std::optional(w.memory_available_min_pct); },
       "the machine ran short of memory: free some, or a larger runner; "
       "saturation.memory_available is the limit"},
      // Only the waiting the run's own tasks do not account for: a CPU-bound
      // service and its load on two cores wait for each other in every run alike.
      {"CPU pressure from other tasks", "%", spec.cpu_pressure_pct, false, true,
       [](const WindowSummary& w) { return w.foreign_cpu_pressure_pct; },
       std::string("other tasks kept the run's threads waiting for a CPU: stop them, ") +
           kPairedWayOut + "; saturation.cpu_pressure is the limit"},
  };
  if (context.service_remote)
    out.push_back({"host CPU", "% busy", spec.host_cpu_pct, false, false,
                   [](const WindowSummary& w) { return std::optional(w.host_cpu_mean_pct); },
                   "the load machine itself was busy: fewer connections, or more load machines "
                   "(docs/ci.md, shards); saturation.host_cpu is the limit"});
  return out;
}

// Any dropped or broken packet while measuring: the network, not the service,
// may have set the pace, however few.
std::optional<std::string> nic_reason(const std::vector<WindowSummary>& kept) {
  uint64_t drops = 0, errors = 0;
  for (const auto& w : kept) {
    drops += w.net_drops;
    errors += w.net_errors;
  }
  if (drops + errors == 0) return std::nullopt;
  return "network interfaces dropped " + std::to_string(drops) + " and errored " +
         std::to_string(errors) + " packets";
}

}  // namespace

Saturation evaluate_saturation(const std::vector<WindowSummary>& kept, const SaturationSpec& spec,
                               const SaturationContext& context) {
  Saturation s;
  std::vector<WindowSummary> sampled;
  std::copy_if(kept.begin(), kept.end(), std::back_inserter(sampled),
               [](const WindowSummary& w) { return w.samples > 0; });
  if (sampled.empty()) return s;  // nothing measured: no claim either way
  for (const auto& rule : rules(spec, context))
    if (auto reason = check(rule, sampled))
      (context.paired && rule.busy_host ? s.shared : s.reasons).push_back(*reason);
  if (auto reason = nic_reason(sampled)) s.reasons.push_back(*reason);
  s.saturated = !s.reasons.empty();
  return s;
}

std::vector<std::string> saturation_advice(const Saturation& saturation) {
  std::vector<std::string> out;
  auto add = [&](const std::string& advice) {
    if (std::find(out.begin(), out.end(), advice) == out.end()) out.push_back(advice);
  };
  // Every rule, the remote host's too: a stored run is advised as it was judged.
  auto all = rules(SaturationSpec{}, SaturationContext{true, false});
  for (const auto& reason : saturation.reasons) {
    // "foreign CPU 87% ...", or a paired side's "baseline side: foreign CPU ...".
    auto what =
        reason.substr(reason.find(" side: ") == std::string::npos ? 0 : reason.find(" side: ") + 7);
    for (const auto& rule : all)
      if (what.starts_with(rule.what + " ")) add(rule.advice);
    if (what.starts_with("network interfaces dropped"))
      add("the network lost packets: measure over loopback, or on a quieter network");
  }
  return out;
}

std::optional<std::string> window_disturbance(const WindowSummary& w, const SaturationSpec& spec) {
  if (w.samples == 0) return std::nullopt;
  for (const auto& rule : rules(spec, {}))
    if (auto v = rule.figure(w); rule.busy_host && v && past(rule, *v))
      return rule.what + " " + fmt(*v) + rule.unit;
  return std::nullopt;
}

std::optional<std::string> window_saturation(const WindowSummary& w, const SaturationSpec& spec,
                                             const SaturationContext& context) {
  if (w.samples == 0) return std::nullopt;
  // Every rule it is past, not the first: steal on a shared runner must not
  // hide the memory shortage that actually stalled the window.
  std::string all;
  for (const auto& rule : rules(spec, context))
    if (auto v = rule.figure(w); v && past(rule, *v))
      all += (all.empty() ? "" : ", ") + describe(rule, *v);
  if (all.empty()) return std::nullopt;
  return all;
}

bool is_loopback_url(const std::string& url) {
  auto scheme = url.find("://");
  auto start = scheme == std::string::npos ? 0 : scheme + 3;
  auto rest = url.substr(start);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  if (rest.starts_with("[")) return rest.starts_with("[::1]");
  auto host = rest.substr(0, rest.find(':'));
  return host == "localhost" || host.starts_with("127.") || host.ends_with(".localhost");
}

}  // namespace perfgate
