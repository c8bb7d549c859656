#pragma once

#include <atomic>
#include <filesystem>
#include <ostream>
#include <string>

#include "perfgate/ci_context.h"
#include "perfgate/exit_status.h"
#include "perfgate/profile.h"

namespace perfgate {

/// `perfgate run`'s options, as the command line gives them.
struct RunOptions {
  std::filesystem::path profile_path;
  std::filesystem::path store_path = "baselines/perfgate.db";
  std::filesystem::path junit_path;                    // empty = none
  std::filesystem::path json_path;                     // empty = none
  std::filesystem::path summary_path;                  // empty = GITHUB_STEP_SUMMARY when set
  std::filesystem::path gitlab_load_performance_path;  // k6 summary for GitLab's MR widget
  std::filesystem::path openmetrics_path;              // for GitLab's artifacts:reports:metrics
  CiOverrides ci;
  bool record = true;
};

/// The whole gate: load the profile, start the service, run the load, pick the
/// baseline, judge, store and report. Prints the console table on `out` and
/// returns the verdict's exit status. Throws Error when no verdict can be made
/// (after writing error reports where they were asked for).
ExitStatus run_gate(const RunOptions& options, const EnvLookup& env, std::ostream& out,
                    const std::atomic<bool>& stop);

}  // namespace perfgate
