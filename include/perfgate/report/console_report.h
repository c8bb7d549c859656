#pragma once

#include <string>

#include "perfgate/report/gate_result.h"

namespace perfgate {

/// The table a person reads in the job log: metric, baseline, now, change, verdict.
std::string console_report(const GateResult& result);

}  // namespace perfgate
