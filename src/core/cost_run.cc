#include "perfgate/core/cost_run.h"

#include <algorithm>

namespace perfgate {

std::vector<double> CostRun::values(std::string_view metric) const {
  std::vector<double> out;
  for (const auto& launch : launches) {
    auto it = launch.find(metric);
    if (it != launch.end()) out.push_back(it->second);
  }
  return out;
}

double CostRun::spread_pct(std::string_view metric) const {
  auto v = values(metric);
  if (v.size() < 2) return 0;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *lo > 0 ? (*hi / *lo - 1) * 100 : 0;
}

double estimated_cycles(double l1_hits, double ll_hits, double ram_hits) {
  return l1_hits + 5 * ll_hits + 35 * ram_hits;
}

}  // namespace perfgate
