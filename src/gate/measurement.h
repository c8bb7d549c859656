#pragma once

// Internal to the gate stage: the load of a run with its service around it and
// the host watched meanwhile, before anything is judged. `run`, `calibrate`,
// shards and paired runs all measure through here.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "perfgate/core/load_result.h"
#include "perfgate/host/host_fingerprint.h"
#include "perfgate/host/host_sampler.h"
#include "perfgate/profile/ci_context.h"
#include "perfgate/profile/profile.h"
#include "perfgate/report/gate_result.h"
#include "perfgate/store/run_record.h"

namespace perfgate {

using WallTime = std::chrono::system_clock::time_point;

/// The load and what the host did meanwhile: one window per iteration, in
/// iteration order, measured on the same steady clock as the samples.
struct Measurement {
  LoadResult load;
  std::vector<HostSample> samples;
  std::vector<WindowSummary> windows;  // index = iteration index, discarded ones included
  std::vector<std::pair<int64_t, int64_t>> wall_ms;  // per iteration: Unix ms from, to
  SteadyClock::time_point origin;
  bool aborted = false;                      // SIGINT/SIGTERM stopped the load early
  std::optional<AttributedService> service;  // whose CPU is the service's, not foreign
  std::string unattributed_listener;         // a local listener nobody visible holds
};

/// The profile's load with its service (when it starts one) around it, from
/// `start_at` when given. A service that dies during the load ends the run with
/// an Error; a signal sets `aborted`, for the caller to handle.
Measurement measure_load(const Profile& profile, const std::atomic<bool>& stop,
                         std::optional<WallTime> start_at);

/// Paired mode: both sides measured in turns on this machine.
struct PairedMeasurement {
  Measurement baseline;
  Measurement candidate;
};

/// Starts both services (when the profiles start them), then runs
/// `candidate.repeat.count` pairs of windows, one per side. `paired.schedule`
/// "alternate" measures a pair's windows in turns, the order A B, B A, A B ... so
/// that neither side always goes first after the other's load; "duet" measures
/// them at the same moments, each side by its own engine on its own thread, with
/// the other side's service watched as part of the measurement, not foreign CPU.
/// Each side warms up for `load.warmup` before its first window and for
/// `paired.leg_warmup` before every later one. Iteration i of both sides is pair i.
PairedMeasurement measure_paired(const Profile& candidate, const Profile& baseline,
                                 const std::atomic<bool>& stop);

/// The saturation rules over the kept windows, and the open model's rate rule.
/// `paired_side`: one side of a paired run, whose busy-host findings are shared.
Saturation judge_saturation(const Profile& profile, const Measurement& m, bool paired_side = false);
/// Stored mode: marks discarded the kept windows that a busy-host rule (foreign
/// CPU, steal, CPU pressure from other tasks) is past, while they are fewer than
/// half of them; half or more make the run saturated instead. Returns the note
/// that says which, or "" when none was dropped.
std::string drop_disturbed_windows(Measurement& m, const SaturationSpec& spec);
/// Throws Error for a kept window without a response, unless the machine was
/// saturated in the run or in that window: then the run is saturated, with why.
void require_responses(const Profile& profile, const Measurement& m, Saturation& saturation);
/// The service's CPU seconds of each window (nullopt where unknown).
std::vector<std::optional<double>> service_cpu(const std::vector<WindowSummary>& windows);
/// The load machine over the kept windows of `sides` (a paired run's both sides,
/// the candidate first: the service named is the first side's). Maxima are the
/// busiest window's figures over its whole length.
HostSummary host_summary(const std::vector<const Measurement*>& sides, const MetricSet& metrics);
HostSummary host_summary(const Measurement& m, const MetricSet& metrics);
/// The run as the store keeps it, before it is judged.
RunRecord make_record(const Profile& profile, const Measurement& m, const CiContext& ci,
                      const HostFingerprint& host, const std::string& started_at);

}  // namespace perfgate
