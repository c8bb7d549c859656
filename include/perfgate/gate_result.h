#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/ci_context.h"
#include "perfgate/host_fingerprint.h"
#include "perfgate/load_result.h"
#include "perfgate/verdict.h"

namespace perfgate {

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
  std::optional<int64_t> baseline_run_id;
  std::string baseline_commit;

  Verdict verdict = Verdict::kPass;
  ExitStatus exit_code = ExitStatus::kPass;
  std::vector<MetricCheck> checks;  // every metric; `gated` ones are checks
  std::vector<std::string> notes;   // "no baseline yet: this run becomes the baseline"
  std::string error;                // set when verdict is error

  Saturation saturation;
  HostFingerprint host;
  CiContext ci;

  std::string engine;
  int threads = 0;
  int connections = 0;
  int iterations_kept = 0;
  int iterations_total = 0;
  IterationStats totals;  // kept iterations merged
  double kept_seconds = 0;
};

}  // namespace perfgate
