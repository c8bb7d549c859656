#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "perfgate/core/exit_status.h"
#include "perfgate/profile/ci_context.h"
#include "perfgate/profile/profile.h"
#include "perfgate/report/gate_result.h"
#include "perfgate/store/baseline_store.h"
#include "perfgate/store/run_record.h"
#include "perfgate/store/shard.h"

namespace perfgate {

/// `perfgate run`'s options, as the command line gives them.
struct RunOptions {
  std::filesystem::path profile_path;
  std::filesystem::path store_path = kDefaultStorePath;
  std::filesystem::path junit_path;                    // empty = none
  std::filesystem::path json_path;                     // empty = none
  std::filesystem::path summary_path;                  // empty = GITHUB_STEP_SUMMARY when set
  std::filesystem::path gitlab_load_performance_path;  // k6 summary for GitLab's MR widget
  std::filesystem::path openmetrics_path;              // for GitLab's artifacts:reports:metrics
  CiOverrides ci;
  bool record = true;
  std::optional<int64_t> baseline_run;  // --baseline-run: judge against this run alone
  bool any_host = false;                // --any-host: baselines from any load machine
  bool any_placement = false;           // --any-placement: baselines of either placement class
  std::optional<ShardSpec> shard;       // --shard I/N: measure this share, write it for merge
  std::string start_at;                 // --start-at: begin the warm-up then (see parse_start_at)
  bool pass_without_baseline = false;   // --no-baseline=pass: a PR/MR run with none passes
};

using WallTime = std::chrono::system_clock::time_point;

/// The whole gate: load the profile, start the service, run the load, pick the
/// baseline, judge, store and report. Prints the console table on `out` and
/// returns the verdict's exit status. Throws Error when no verdict can be made
/// (after writing error reports where they were asked for).
ExitStatus run_gate(const RunOptions& options, const EnvLookup& env, std::ostream& out,
                    const std::atomic<bool>& stop);

/// One run of the profile's load, the service started and stopped around it,
/// measured and checked for saturation but not judged: what `calibrate` repeats.
struct MeasuredRun {
  RunRecord record;  // ready to store; verdict pass, or warn when saturated
  RunFigures figures;
  HostSummary host_summary;
  int64_t measured_from_ms = 0;  // wall clock (Unix ms) of the kept iterations
  int64_t measured_to_ms = 0;
  std::optional<uint64_t> in_flight_at_end;  // see LoadResult
};
MeasuredRun measure_run(const Profile& profile, const CiContext& ci, const HostFingerprint& host,
                        const std::atomic<bool>& stop, std::optional<WallTime> start_at = {});

/// `perfgate merge`: adds the shards' results (see merge_shards) and gates the
/// sum like one run: baseline, verdict, store, reports as `options` asks.
/// Throws Error when the shards do not belong together.
ExitStatus merge_gate(const RunOptions& options,
                      const std::vector<std::filesystem::path>& shard_paths, const EnvLookup& env,
                      std::ostream& out);

/// `perfgate compare`: judges stored run `run_id` again, against the runs before
/// it (or `options.baseline_run`), with the limits stored with it. Stores nothing.
/// Throws Error when there is no such run or its stored profile no longer parses.
GateResult rejudge_run(BaselineStore& store, int64_t run_id, const RunOptions& options);

/// Prints the console report on `out` (when not null) and writes every report
/// file `options` asks for.
void write_reports(const RunOptions& options, const GateResult& result, std::ostream* out);

}  // namespace perfgate
