#pragma once

#include <string>
#include <string_view>

#include "perfgate/core/cost_run.h"

namespace perfgate {

/// A run's cost phase as the store and `store export` keep it: one JSON
/// object; "" when the phase neither ran nor was skipped.
std::string cost_to_json(const CostRun& cost);
/// The inverse; "" is no cost phase. Throws Error saying what is wrong.
CostRun cost_from_json(std::string_view text);

}  // namespace perfgate
