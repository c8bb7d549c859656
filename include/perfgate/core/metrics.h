#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/core/load_result.h"

namespace perfgate {

/// Which direction of change is a regression.
enum class Better { kHigher, kLower };

/// How the kept iterations' values become the run's figure.
enum class Aggregate {
  kMedian,  // resists one disturbed iteration, where a mean would not
  kMax,     // latency_max: the worst seen is the honest figure
  kPooled,  // a latency quantile: of the kept iterations' merged histogram
};

/// A quantile resting on fewer responses beyond it than this is one of the few
/// slowest requests, moved by any one of them: it is reported, never judged.
inline constexpr double kMinTailResponses = 10;

/// One gated figure of a run. The key is the contract's name in the JSON result
/// (`throughput_rps`); the threshold key is the profile's (`throughput`).
struct MetricDef {
  std::string_view key;
  std::string_view threshold_key;
  std::string_view unit;  // "req/s", "ms", "%"
  Better better;
  double (*of)(const Iteration&);  // nullptr for host-derived metrics
  Aggregate aggregate = Aggregate::kMedian;
  double percentile = 0;  // kPooled: the quantile, in percent
};

/// The contract's metrics, in report order.
std::span<const MetricDef> metric_defs();
/// Figures that need the host sampler besides the iterations: the service's
/// cost (`service_cpu_us_per_request`, `requests_per_service_cpu_s`). Their `of`
/// is nullptr; run_figures() computes them.
std::span<const MetricDef> host_metric_defs();
/// Figures counted by the cost phase's instrument (`instructions_per_request`,
/// `estimated_cycles_per_request`, `syscalls_per_request`): judged by
/// check_costs() (cost_check.h), not by the timed metrics' tests.
std::span<const MetricDef> cost_metric_defs();
/// nullptr when `key` names no metric; accepts metric or threshold keys, of
/// either list.
const MetricDef* find_metric(std::string_view key);

/// Metric key -> value.
using MetricSet = std::map<std::string, double, std::less<>>;

/// Per metric, its aggregate over the kept iterations: the median, the max for
/// latency_max, a quantile of the merged histogram for the latency quantiles,
/// and for error_rate_pct the share of all attempts that failed.
MetricSet summarize(const std::vector<Iteration>& iterations);
/// The per-iteration values of one metric over the kept iterations, in order.
std::vector<double> kept_values(const std::vector<Iteration>& iterations, const MetricDef& def);

double median(std::vector<double> values);

/// A metric's figure from its per-iteration values: the median, or the maximum
/// for kMax metrics; 0 for no values. A kPooled quantile has no histogram here:
/// the median of the values stands in (a baseline's runs, say).
double aggregate(const MetricDef& def, const std::vector<double>& values);

/// The responses beyond `def`'s quantile in a unit of `responses` responses
/// (infinite for a metric that is no quantile).
double tail_responses(const MetricDef& def, double responses);

/// Requests attempted and failed in one kept window: an error rate's
/// dispersion is read from how these scatter (error_rate.h).
struct WindowCounts {
  std::uint64_t attempts = 0;
  std::uint64_t failures = 0;
  /// Of failures: responses whose status is not a success, which the service
  /// itself answered (no saturated load machine makes a service answer 404).
  std::uint64_t status_failures = 0;
  friend bool operator==(const WindowCounts&, const WindowCounts&) = default;
};

/// One run's figures with the per-iteration values behind them: the verdict
/// tests a change against the spread of these values, not just the figures.
struct RunFigures {
  MetricSet summary;  // per metric, aggregate() of its values
  std::map<std::string, std::vector<double>, std::less<>> values;  // kept iterations, in order
  /// Requests attempted and failed over the kept iterations: an absolute
  /// error-rate limit is judged on their bound (error_rate.h), not on the point
  /// rate; summary's error_rate_pct is failures over attempts.
  std::uint64_t attempts = 0;
  std::uint64_t failures = 0;
  /// The failures by kind, over the kept iterations: the socket errors, and the
  /// responses by status class (failed() of which is the statuses not counted
  /// as success). What an error-rate message names.
  ErrorCounts socket_errors{};
  StatusCounts statuses{};
  /// The same counts for each kept window, in order (the windows, also where
  /// `values` holds one per launch): how bursty the errors were. Empty when
  /// unknown.
  std::vector<WindowCounts> error_windows{};
  /// Responses of each unit behind `values` (a kept iteration, or a launch):
  /// what a quantile of one unit rests on.
  std::vector<std::uint64_t> unit_responses{};
};

/// The run's figures: metric_defs() from the iterations, plus the service's cost
/// (host_metric_defs()) for iterations whose `service_cpu_s` was measured.
RunFigures run_figures(const std::vector<Iteration>& iterations,
                       const std::vector<std::optional<double>>& service_cpu_s = {});

/// run_figures() with one value per launch: iterations whose `index / block`
/// agree ran on one launch of the service (paired.block), and their figure
/// (the median; a quantile of their merged histogram) is the launch's value. The summary stays the
/// whole run's. block <= 1 is run_figures() itself.
RunFigures per_launch_figures(const std::vector<Iteration>& iterations,
                              const std::vector<std::optional<double>>& service_cpu_s, int block);

/// Limits on one metric. Relative limits are percentages of change in the
/// regressing direction; absolute ones are in the metric's unit.
struct Thresholds {
  std::optional<double> warn_pct;
  std::optional<double> fail_pct;
  std::optional<double> max;  // absolute ceiling (latency ms, error rate %)
  std::optional<double> min;  // absolute floor (throughput req/s)

  bool any() const { return warn_pct || fail_pct || max || min; }
  friend bool operator==(const Thresholds&, const Thresholds&) = default;
};

/// Metric key -> its limits.
using ThresholdSet = std::map<std::string, Thresholds, std::less<>>;

}  // namespace perfgate
