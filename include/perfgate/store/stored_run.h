#pragma once

// A stored run as the gate sees it: the profile and limits it was judged with,
// and which earlier run was its baseline. The gate, compare, merge and the HTML
// report read stored runs through here (and stored_run_figures in baseline.h for
// the figures), so that none re-derives them its own way.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/verdict.h"
#include "perfgate/profile/profile.h"
#include "perfgate/store/run_record.h"

namespace perfgate {

/// The profile stored with `run`, parsed without an environment (stored profiles
/// are redacted), with the hash of the text it was written in. `source` names it
/// in errors. Throws Error when it no longer parses.
Profile stored_profile(const RunRecord& run, const std::string& source);

/// The limits `run` was judged with; none when its stored profile no longer
/// parses (a view loses the band's width, never the page).
ThresholdSet stored_thresholds(const RunRecord& run);

/// Index in `runs` (oldest first) of the newest run before the last one that the
/// gate would take as its baseline: same hash and host, on the last run's
/// baseline branch, eligible. nullopt when there is none.
std::optional<size_t> baseline_index(const std::vector<RunRecord>& runs);

}  // namespace perfgate
