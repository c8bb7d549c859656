#pragma once

#include <nlohmann/json.hpp>

#include "perfgate/report/gate_result.h"

namespace perfgate {

/// The contract's JSON result (schemas/result.schema.json).
nlohmann::json json_report(const GateResult& result);
/// The `metrics` object alone: what `perfgate bench --json` writes too.
nlohmann::json metrics_json(const std::vector<MetricCheck>& checks);

}  // namespace perfgate
