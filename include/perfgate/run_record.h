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
  std::string status = "complete";    // "complete" or "aborted"
  std::vector<Iteration> iterations;  // discarded ones included, histograms too

  /// May later runs be judged against this one? Complete, not saturated, not
  /// failed: a failing run on the baseline branch must not become the new normal.
  bool eligible_as_baseline() const;
};

}  // namespace perfgate
