#pragma once

#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/verdict.h"
#include "perfgate/host/host_sampler.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

/// What the rules need to know besides the samples.
struct SaturationContext {
  /// The target is not on this host: the host's total CPU is then all load
  /// generator, so a busy host alone proves saturation.
  bool service_remote = false;
  /// A paired run's side: the busy-host rules go to Saturation::shared.
  bool paired = false;
};

/// Applies the saturation rules to the kept iterations' window summaries. A rule
/// triggers when it holds in at least half of them. A minority of windows past a
/// busy-host rule is not ignored: stored mode drops those windows first (see
/// window_disturbance), because a p99 pools every window and one burst moves it.
// The open model's "rate not achieved" rule needs the engine's intended rate per
// window; it joins here once LoadResult carries it (engine owner).
Saturation evaluate_saturation(const std::vector<WindowSummary>& kept, const SaturationSpec& spec,
                               const SaturationContext& context);

/// What a user can do about each of a run's saturation reasons, once each:
/// the way out ("stop them, or gate in paired mode") and the profile key of
/// the limit it broke. Read from the reasons, so a stored run gets the same.
std::vector<std::string> saturation_advice(const Saturation& saturation);

/// The first busy-host rule (foreign CPU, steal, CPU pressure from other tasks)
/// that one window is past, as "CPU steal 11%"; nullopt when it passes them all.
/// A run drops such windows from its verdict while they are a minority: a tail
/// latency pools every window, so one burst would move it.
std::optional<std::string> window_disturbance(const WindowSummary& w, const SaturationSpec& spec);

/// Every rule (the load thread's and memory too) that one window is past, as
/// "foreign CPU 87% of the host (limit 25%), CPU steal 6% (limit 5%)"; nullopt
/// when it passes them all or has no sample. It explains a window that stalled.
std::optional<std::string> window_saturation(const WindowSummary& w, const SaturationSpec& spec,
                                             const SaturationContext& context);

/// Whether a URL's host is this machine (127.0.0.0/8, ::1, localhost).
bool is_loopback_url(const std::string& url);

}  // namespace perfgate
