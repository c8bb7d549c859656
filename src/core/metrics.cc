#include "perfgate/core/metrics.h"

#include <algorithm>
#include <array>
#include <limits>

namespace perfgate {
namespace {

double latency_ms(const Iteration& it, double percent) {
  return static_cast<double>(it.stats.latency.percentile_ns(percent)) / 1e6;
}

double throughput(const Iteration& it) {
  return it.throughput_rps();
}
double p50(const Iteration& it) {
  return latency_ms(it, 50);
}
double p75(const Iteration& it) {
  return latency_ms(it, 75);
}
double p90(const Iteration& it) {
  return latency_ms(it, 90);
}
double p99(const Iteration& it) {
  return latency_ms(it, 99);
}
double p999(const Iteration& it) {
  return latency_ms(it, 99.9);
}
double max_latency(const Iteration& it) {
  return static_cast<double>(it.stats.latency.max_ns()) / 1e6;
}
double error_rate(const Iteration& it) {
  return it.stats.error_rate_pct();
}

constexpr std::array<MetricDef, 8> kMetrics = {{
    {"throughput_rps", "throughput", "req/s", Better::kHigher, throughput},
    {"latency_p50_ms", "latency_p50", "ms", Better::kLower, p50, Aggregate::kPooled, 50},
    {"latency_p75_ms", "latency_p75", "ms", Better::kLower, p75, Aggregate::kPooled, 75},
    {"latency_p90_ms", "latency_p90", "ms", Better::kLower, p90, Aggregate::kPooled, 90},
    {"latency_p99_ms", "latency_p99", "ms", Better::kLower, p99, Aggregate::kPooled, 99},
    {"latency_p999_ms", "latency_p999", "ms", Better::kLower, p999, Aggregate::kPooled, 99.9},
    {"latency_max_ms", "latency_max", "ms", Better::kLower, max_latency, Aggregate::kMax},
    {"error_rate_pct", "error_rate", "%", Better::kLower, error_rate},
}};

constexpr std::array<MetricDef, 2> kHostMetrics = {{
    {"service_cpu_us_per_request", "service_cpu_per_request", "us", Better::kLower, nullptr},
    {"requests_per_service_cpu_s", "requests_per_service_cpu", "req/cpu-s", Better::kHigher,
     nullptr},
}};

// Counted by an instrument (cost phase), not timed: per request of a fixed
// sequence, the same on every runner of one key.
constexpr std::array<MetricDef, 3> kCostMetrics = {{
    {"instructions_per_request", "instructions_per_request", "instr", Better::kLower, nullptr},
    {"estimated_cycles_per_request", "estimated_cycles_per_request", "cycles", Better::kLower,
     nullptr},
    {"syscalls_per_request", "syscalls_per_request", "syscalls", Better::kLower, nullptr},
}};

}  // namespace

std::span<const MetricDef> cost_metric_defs() {
  return kCostMetrics;
}

std::span<const MetricDef> metric_defs() {
  return kMetrics;
}

std::span<const MetricDef> host_metric_defs() {
  return kHostMetrics;
}

const MetricDef* find_metric(std::string_view key) {
  for (auto defs : {metric_defs(), host_metric_defs(), cost_metric_defs()})
    for (const auto& def : defs)
      if (def.key == key || def.threshold_key == key) return &def;
  return nullptr;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

std::vector<double> kept_values(const std::vector<Iteration>& iterations, const MetricDef& def) {
  std::vector<double> out;
  for (const auto& it : iterations)
    if (!it.discarded) out.push_back(def.of(it));
  return out;
}

namespace {

// The kept iterations' latencies as one histogram: a quantile of the whole
// run (or launch), not the median of the windows' quantiles, which would take
// a window's tail for the run's.
LatencyHistogram kept_latency(const std::vector<Iteration>& iterations) {
  LatencyHistogram all;
  for (const auto& it : iterations)
    if (!it.discarded) all.merge(it.stats.latency);
  return all;
}

double pooled_or_aggregate(const MetricDef& def, const std::vector<double>& values,
                           const LatencyHistogram& latency) {
  if (def.aggregate != Aggregate::kPooled || values.empty()) return aggregate(def, values);
  return static_cast<double>(latency.percentile_ns(def.percentile)) / 1e6;
}

std::vector<WindowCounts> kept_error_counts(const std::vector<Iteration>& iterations) {
  std::vector<WindowCounts> out;
  for (const auto& it : iterations)
    if (!it.discarded)
      out.push_back({it.stats.attempts(), it.stats.errors.total() + it.stats.statuses.failed(),
                     it.stats.statuses.failed()});
  return out;
}

// The share of all attempts that failed. Not the median window's rate, which
// hides errors that come in bursts: a run whose bursts hit 5 of 12 windows has
// a median rate of 0.
double failed_share_pct(const std::vector<WindowCounts>& windows) {
  double attempts = 0, failures = 0;
  for (const auto& w : windows) {
    attempts += static_cast<double>(w.attempts);
    failures += static_cast<double>(w.failures);
  }
  return attempts > 0 ? 100 * failures / attempts : 0.0;
}

}  // namespace

MetricSet summarize(const std::vector<Iteration>& iterations) {
  MetricSet out;
  auto latency = kept_latency(iterations);
  for (const auto& def : kMetrics)
    out[std::string(def.key)] = pooled_or_aggregate(def, kept_values(iterations, def), latency);
  out["error_rate_pct"] = failed_share_pct(kept_error_counts(iterations));
  return out;
}

double tail_responses(const MetricDef& def, double responses) {
  if (def.aggregate != Aggregate::kPooled) return std::numeric_limits<double>::infinity();
  return responses * (100 - def.percentile) / 100;
}

namespace {

struct ServiceCost {
  std::vector<double> us_per_request, requests_per_cpu_s;
};

// Iterations with no responses or no measured CPU have no cost figure; a service
// idle to the tick (10 ms) would divide by zero, so it is left out too.
ServiceCost service_cost(const std::vector<Iteration>& iterations,
                         const std::vector<std::optional<double>>& service_cpu_s) {
  ServiceCost cost;
  for (size_t i = 0; i < iterations.size() && i < service_cpu_s.size(); ++i) {
    const auto& it = iterations[i];
    const auto& cpu_s = service_cpu_s[i];
    if (it.discarded || !cpu_s || *cpu_s <= 0 || it.stats.responses == 0) continue;
    double responses = static_cast<double>(it.stats.responses);
    cost.us_per_request.push_back(*cpu_s * 1e6 / responses);
    cost.requests_per_cpu_s.push_back(responses / *cpu_s);
  }
  return cost;
}

}  // namespace

double aggregate(const MetricDef& def, const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  if (def.aggregate == Aggregate::kMax) return *std::max_element(values.begin(), values.end());
  return median(values);
}

RunFigures run_figures(const std::vector<Iteration>& iterations,
                       const std::vector<std::optional<double>>& service_cpu_s) {
  RunFigures figures;
  for (const auto& def : kMetrics)
    figures.values[std::string(def.key)] = kept_values(iterations, def);
  auto cost = service_cost(iterations, service_cpu_s);
  if (!cost.us_per_request.empty()) {
    figures.values["service_cpu_us_per_request"] = std::move(cost.us_per_request);
    figures.values["requests_per_service_cpu_s"] = std::move(cost.requests_per_cpu_s);
  }
  auto latency = kept_latency(iterations);
  for (const auto& [key, values] : figures.values)
    figures.summary[key] = pooled_or_aggregate(*find_metric(key), values, latency);
  figures.error_windows = kept_error_counts(iterations);
  figures.summary["error_rate_pct"] = failed_share_pct(figures.error_windows);
  for (const auto& w : figures.error_windows) {
    figures.attempts += w.attempts;
    figures.failures += w.failures;
  }
  for (const auto& it : iterations) {
    if (it.discarded) continue;
    figures.unit_responses.push_back(it.stats.responses);
    figures.socket_errors.merge(it.stats.errors);
    figures.statuses.merge(it.stats.statuses);
  }
  return figures;
}

RunFigures per_launch_figures(const std::vector<Iteration>& iterations,
                              const std::vector<std::optional<double>>& service_cpu_s, int block) {
  RunFigures all = run_figures(iterations, service_cpu_s);
  if (block <= 1) return all;
  std::map<int, std::pair<std::vector<Iteration>, std::vector<std::optional<double>>>> launches;
  for (size_t i = 0; i < iterations.size(); ++i) {
    auto& launch = launches[iterations[i].index / block];
    launch.first.push_back(iterations[i]);
    launch.second.push_back(i < service_cpu_s.size() ? service_cpu_s[i] : std::nullopt);
  }
  all.values.clear();
  all.unit_responses.clear();
  for (const auto& [index, launch] : launches) {
    RunFigures one = run_figures(launch.first, launch.second);
    for (const auto& [key, values] : one.values)
      if (!values.empty()) all.values[key].push_back(one.summary[key]);
    std::uint64_t responses = 0;
    for (auto n : one.unit_responses) responses += n;
    if (!one.unit_responses.empty()) all.unit_responses.push_back(responses);
  }
  return all;
}

}  // namespace perfgate
