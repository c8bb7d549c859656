#pragma once

#include <string>

#include "perfgate/report/gate_result.h"

namespace perfgate {

/// JUnit XML valid against Jenkins' junit-10.xsd: one testsuite per profile, one
/// testcase per gated metric; `failure` for fail, `skipped` for warn, `error`
/// when no verdict could be made.
std::string junit_report(const GateResult& result);

}  // namespace perfgate
