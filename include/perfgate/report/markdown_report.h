#pragma once

#include <string>

#include "perfgate/report/gate_result.h"

namespace perfgate {

/// A Markdown summary for a CI job page (GITHUB_STEP_SUMMARY, `--summary`).
std::string markdown_report(const GateResult& result);

}  // namespace perfgate
