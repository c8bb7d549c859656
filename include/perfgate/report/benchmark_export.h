#pragma once

#include <nlohmann/json.hpp>

#include "perfgate/core/metrics.h"
#include "perfgate/store/run_record.h"

namespace perfgate {

/// One stored run in the input format of benchmark-action/github-action-benchmark's
/// custom tools: `[{"name", "unit", "value", "range", "extra"}]`. The action reads
/// one direction per file, so `direction` picks the metrics:
/// Better::kHigher for `tool: customBiggerIsBetter` (throughput),
/// Better::kLower for `tool: customSmallerIsBetter` (latencies, error rate).
/// `name` is "<profile> <metric key>", `value` the run's figure (summarize()),
/// `range` "± x" with x half the spread of the kept iterations' values, and
/// `extra` the run id, commit and branch, and "saturated" when it was.
nlohmann::json github_action_benchmark(const RunRecord& run, Better direction);

}  // namespace perfgate
