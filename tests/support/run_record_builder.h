#pragma once

// Synthetic stored runs for the tests of the views over the store (HTML report,
// github-action-benchmark export): deterministic iterations with histograms, so
// summarize() gives known figures without running any load.

#include <chrono>
#include <cstdint>
#include <string>

#include "perfgate/store/run_record.h"

namespace perfgate::testing {

/// A valid profile with limits, as the store keeps it (redacted JSON).
inline constexpr const char* kStoredProfile = R"({"name": "hello",
  "target": {"url": "http://127.0.0.1:8080/"},
  "load": {"duration": "1s"}, "repeat": {"count": 4, "discard": 1},
  "thresholds": {"throughput": {"warn": "5%", "fail": "10%"},
                 "latency_p99": {"warn": "10%", "fail": "20%", "max": "50ms"}}})";

/// One iteration of one second: `rps` responses, `errors` socket errors, and
/// latencies spread evenly from 0.5x to 1.5x `latency_ms`.
inline Iteration synthetic_iteration(int index, bool discarded, uint64_t rps, double latency_ms,
                                     uint64_t errors = 0) {
  Iteration it;
  it.index = index;
  it.discarded = discarded;
  it.duration = std::chrono::seconds(1);
  it.stats.responses = rps;
  it.stats.statuses.by_class[2] = rps;
  it.stats.errors.read = errors;
  for (int k = 0; k < 200; ++k)
    it.stats.latency.record_ns(static_cast<uint64_t>(latency_ms * 1e6 * (0.5 + k / 200.0)));
  return it;
}

/// A complete run of profile "hello" on `branch`: one discarded and three kept
/// iterations whose throughput differs by +-`rps_spread`.
inline RunRecord synthetic_run(int n, uint64_t rps, double latency_ms,
                               const std::string& branch = "main", uint64_t rps_spread = 100) {
  RunRecord run;
  run.created_at = "2026-11-" + std::string(n < 10 ? "0" : "") + std::to_string(n) + "T10:00:00Z";
  run.profile_name = "hello";
  run.profile_hash = "3f2a9c1b7e4d5a60";
  run.profile_json = kStoredProfile;
  run.ci = {"github", "c0ffee" + std::to_string(1000 + n), branch, "main", std::to_string(n), ""};
  run.host.fields = {{"os", "Debian GNU/Linux 12 (bookworm)"}, {"cpus", "2"}};
  run.engine = "native";
  run.threads = 1;
  run.connections = 16;
  run.iterations = {synthetic_iteration(0, true, rps / 2, latency_ms * 2),
                    synthetic_iteration(1, false, rps - rps_spread, latency_ms),
                    synthetic_iteration(2, false, rps, latency_ms),
                    synthetic_iteration(3, false, rps + rps_spread, latency_ms)};
  return run;
}

}  // namespace perfgate::testing
