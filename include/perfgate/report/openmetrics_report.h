#pragma once

#include <string>

#include "perfgate/report/gate_result.h"

namespace perfgate {

/// The run's figures in OpenMetrics text, for GitLab's `artifacts:reports:metrics`
/// (the merge request widget compares each line with the target branch's):
/// one gauge per metric named after its contract key,
/// `perfgate_throughput_rps{profile="hello"} 20876.9`, its baseline as
/// `perfgate_throughput_rps_baseline` when there is one, then
/// `perfgate_exit_code`, `perfgate_saturated`, and `# EOF`.
std::string openmetrics(const GateResult& result);

}  // namespace perfgate
