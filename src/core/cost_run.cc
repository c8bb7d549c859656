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

int auto_requests(double seconds_per_request, double count_time_s, int ceiling, int series) {
  constexpr int kLadder[] = {1000, 500, 200, 100, 50, 20};
  bool series_fits = series > 0 && series <= ceiling;
  // No pace (no warm-up to take it from): the series' count, else the ceiling.
  if (!(seconds_per_request > 0) || !(count_time_s > 0)) return series_fits ? series : ceiling;
  double wanted = std::min(count_time_s / seconds_per_request, static_cast<double>(ceiling));
  if (series_fits && wanted >= series / 3.0 && wanted <= series * 3.0) return series;
  for (int n : kLadder)
    if (n <= wanted) return n;
  return std::min(20, ceiling);
}

int auto_warmup(int requests, int most) {
  return std::min(most, std::max(kPaceProbe, requests / 5));
}

}  // namespace perfgate
