#pragma once

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
/// triggers when it holds in at least half of them: the run's figures are medians,
/// which one disturbed iteration in several does not move.
// The open model's "rate not achieved" rule needs the engine's intended rate per
// window; it joins here once LoadResult carries it (engine owner).
Saturation evaluate_saturation(const std::vector<WindowSummary>& kept, const SaturationSpec& spec,
                               const SaturationContext& context);

/// Whether a URL's host is this machine (127.0.0.0/8, ::1, localhost).
bool is_loopback_url(const std::string& url);

}  // namespace perfgate
