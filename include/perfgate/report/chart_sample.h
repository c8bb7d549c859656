#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "perfgate/store/run_record.h"

namespace perfgate {

/// Which runs of a long history the HTML report draws, as indexes into `runs`
/// (oldest first), ascending: every failed, errored or saturated run (a chart
/// never hides one), the first and the latest, `baseline` when given, and an
/// even sample of the others, at most `budget` of them. A history no longer than
/// `budget` is drawn whole. Reads only the runs' rows, not their iterations.
std::vector<size_t> chart_sample(const std::vector<RunRecord>& runs, size_t budget,
                                 std::optional<size_t> baseline);

/// Whether a chart must show `run` whatever the sample: it failed, gave no
/// verdict, or its load machine was saturated.
bool always_charted(const RunRecord& run);

}  // namespace perfgate
