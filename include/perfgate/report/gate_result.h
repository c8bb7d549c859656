#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/cost_run.h"
#include "perfgate/core/load_result.h"
#include "perfgate/core/verdict.h"
#include "perfgate/host/host_fingerprint.h"
#include "perfgate/host/service_discovery.h"
#include "perfgate/profile/ci_context.h"
#include "perfgate/store/shard.h"

namespace perfgate {

/// The load machine over the kept iterations, from the host sampler. `samples`
/// is 0 when nothing was sampled (then every figure is 0 / absent).
struct HostSummary {
  int samples = 0;
  double host_cpu_mean_pct = 0;  // whole host busy, % of all cores
  double host_cpu_max_pct = 0;
  double steal_max_pct = 0;
  double generator_thread_max_pct = 0;  // perfgate's busiest thread, % of one core
  double foreign_cpu_max_pct = 0;       // neither perfgate nor the service, % of all cores
  double memory_available_min_pct = 0;
  std::optional<double> cpu_pressure_max_pct;  // absent without /proc/pressure
  /// The share of samples in which a busy load thread and a busy service thread
  /// had last run on one CPU; absent when the service's threads are unknown.
  std::optional<double> shared_cpu_pct;
  std::optional<double> service_cpu_us_per_request;  // absent when the service is unknown
  std::optional<AttributedService> service;          // absent when the service is unknown
  std::vector<std::string> doctor_warnings;          // the preflight's findings
};

/// Paired mode: the build this run was measured against, window by window.
struct PairedSummary {
  std::string baseline_url;                // its target URL, redacted
  std::string baseline_commit;             // `paired.baseline.commit`; may be ""
  std::optional<int64_t> baseline_run_id;  // where its side is stored
  std::string pair;                        // the key both stored runs share
  int pairs = 0;                           // kept pairs
  double leg_warmup_s = 0;
  /// The baseline side's counted cost, each launch (the result's `cost` is the
  /// candidate's); not ran() when the phase was off or skipped.
  CostRun baseline_cost;
};

/// A sequential run (`repeat.max_count` above `repeat.count`): how far it went and why it stopped.
struct SequentialSummary {
  std::string unit;            // "iterations" or "pairs"
  int planned = 0;             // repeat.count
  int max_count = 0;           // repeat.max_count
  int taken = 0;               // measured, extensions included
  int looks = 0;               // planned looks at the data, over which alpha was split
  double look_confidence = 0;  // % the look that stopped judged at (Bonferroni: every look)
  std::string stopped;         // "decided after 8 pairs", "max_count 16 reached: ..."
  std::string boundary = "bonferroni";  // how alpha was spent: also "pocock", "obrien-fleming"
  int stop_look = 1;                    // 1-based: the look that stopped the run
  std::vector<double> look_levels;      // % every planned look judges at, in order
  bool futility = false;                // stopped because a fail was out of reach
  /// % of the interval whose near end the stopping look's fail needed past the
  /// fail limit (SequentialPlan::estimate_confidence), and every look's.
  double estimate_confidence = 0;
  std::vector<double> estimate_levels;
};

/// Everything a reporter needs about one gated run. Reporters are pure
/// functions of this value, so their output is checked against golden files.
struct GateResult {
  std::string profile_name;
  std::string profile_hash;
  std::string profile_source;  // path of the profile file
  std::string target_url;
  std::string started_at;  // ISO 8601 UTC
  double duration_s = 0;   // wall time of the whole run, service start included

  std::optional<int64_t> run_id;  // nullopt with --no-record or on error
  bool recorded = false;
  std::optional<int64_t> baseline_run_id;  // the newest baseline run
  std::string baseline_commit;
  std::vector<int64_t> baseline_run_ids;  // every run pooled as the baseline, newest first
  std::vector<int64_t> drift_run_ids;     // the drift guard's older runs; empty = not checked
  double confidence = 95;                 // % level of the checks' intervals

  Verdict verdict = Verdict::kPass;
  ExitStatus exit_code = ExitStatus::kPass;
  std::vector<MetricCheck> checks;    // every metric; `gated` ones are checks
  std::vector<std::string> notes;     // "no baseline yet: this run becomes the baseline"
  std::vector<std::string> warnings;  // notes that are annotated as warnings, whatever the verdict
  std::string error;                  // set when verdict is error

  Saturation saturation;
  HostFingerprint host;
  CiContext ci;

  std::string engine;
  int threads = 0;
  int connections = 0;
  int iterations_kept = 0;
  int iterations_total = 0;
  IterationStats totals;                     // kept iterations merged
  std::optional<uint64_t> in_flight_at_end;  // see LoadResult
  double kept_seconds = 0;
  HostSummary host_summary;  // what the load machine did while measuring

  std::optional<ShardFile> shard;    // run --shard: what perfgate merge reads
  std::vector<ShardSummary> shards;  // a merged run's shards, by index; empty otherwise
  std::optional<PairedSummary> paired;
  std::optional<SequentialSummary> sequential;
  CostRun cost;  // the cost phase's counts (docs/cost.md); empty when it did not run
};

}  // namespace perfgate
