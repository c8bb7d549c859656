#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/cost_run.h"
#include "perfgate/core/load_result.h"
#include "perfgate/core/verdict.h"
#include "perfgate/host/host_fingerprint.h"
#include "perfgate/profile/ci_context.h"
#include "perfgate/store/run_figures.h"

namespace perfgate {

/// A person's word on a stored run (`perfgate accept` / `perfgate reject`).
struct Review {
  std::string state;   // "" (none), "accepted" or "rejected"
  std::string reason;  // why, as given with --reason
  std::string by;      // who: GITLAB_USER_LOGIN / GITHUB_ACTOR / USER
  std::string at;      // ISO 8601 UTC

  friend bool operator==(const Review&, const Review&) = default;
};

/// A run as the store keeps it.
struct RunRecord {
  int64_t id = 0;          // assigned by the store
  std::string created_at;  // ISO 8601 UTC, e.g. "2026-11-29T23:43:29Z"
  std::string profile_name;
  std::string profile_hash;
  std::string profile_json;  // redacted
  CiContext ci;
  HostFingerprint host;
  std::string engine;
  int threads = 0;
  int connections = 0;
  Verdict verdict = Verdict::kPass;
  Saturation saturation;
  std::string status = "complete";  // "complete" or "aborted"
  /// "gate"; "calibration" (A/A runs); "paired" (a paired run's candidate) or
  /// "paired-baseline" (the build it ran beside). Only gate runs become baselines.
  std::string kind = "gate";
  std::string pair;  // paired runs: the key both sides share; "" otherwise
  Review review;
  std::vector<Iteration> iterations;  // discarded ones included, histograms too
  /// The service's CPU seconds per iteration (service_cpu_s[i] for
  /// iterations[i]) when it was measured; empty otherwise.
  std::vector<double> service_cpu_s;
  /// The cost phase's counts (docs/cost.md); empty when it did not run.
  CostRun cost;
  /// The host sampler's series as one JSON document; empty when none.
  std::string host_samples_json;
  /// Its figures and placement as the store computed them when it wrote the run
  /// (run_figures.h), read with the run's row; nullopt for a run not read from a
  /// store. Never exported: an import computes them again.
  std::optional<StoredFigures> stored;

  /// Its judgement saw a regression, decided (shows_regression(), verdict.h): a
  /// fail, a change surely inside the warn band, a drift. A run that was only
  /// undecided did not.
  bool regressed = false;
  /// May later runs be judged against this one? A complete gate run, not
  /// saturated, not rejected, that showed no regression (it passed, or warned
  /// only as undecided), unless accepted: a run that failed, or surely changed
  /// inside the warn band, must not become the new normal unless someone says it
  /// is (`perfgate accept`). Undecided runs are eligible, or a young store would
  /// keep its first run as its only baseline (issue 46).
  bool eligible_as_baseline() const;
};

/// The run as one line of JSON (no newline), histograms in base64: the format of
/// `perfgate store export`. Without `with_id` two copies of one run give the same text.
std::string to_json_line(const RunRecord& run, bool with_id = true);
/// The inverse of to_json_line(); throws Error saying what is wrong.
RunRecord run_from_json_line(std::string_view line);

}  // namespace perfgate
