#include "perfgate/report/benchmark_export.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "perfgate/report/report_format.h"

namespace perfgate {
namespace {

using nlohmann::json;

// The action prints `range` verbatim next to the value; half the spread of the
// kept iterations says how much one run moves without claiming a distribution.
std::string range_of(const std::vector<double>& values, std::string_view unit) {
  if (values.size() < 2) return "";
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return "\xC2\xB1 " + report::format_value((*hi - *lo) / 2, unit);
}

std::string extra_of(const RunRecord& run) {
  std::vector<std::string> parts = {"run " + std::to_string(run.id)};
  if (!run.ci.commit.empty()) parts.push_back("commit " + report::short_id(run.ci.commit, 12));
  if (!run.ci.branch.empty()) parts.push_back("branch " + run.ci.branch);
  if (run.saturation.saturated) parts.push_back("saturated: load machine was the bottleneck");
  return report::one_line(report::join(parts, ", "));
}

json entry(const RunRecord& run, const MetricDef& def, double value) {
  json out = {{"name", report::one_line(run.profile_name) + " " + std::string(def.key)},
              {"unit", std::string(def.unit)},
              {"value", value},
              {"extra", extra_of(run)}};
  auto range = range_of(kept_values(run.iterations, def), def.unit);
  if (!range.empty()) out["range"] = range;
  return out;
}

}  // namespace

json github_action_benchmark(const RunRecord& run, Better direction) {
  MetricSet figures = summarize(run.iterations);
  json out = json::array();
  for (const MetricDef& def : metric_defs()) {
    double value = figures[std::string(def.key)];
    // The action rejects a missing value: a figure that could not be computed is left out.
    if (def.better == direction && std::isfinite(value)) out.push_back(entry(run, def, value));
  }
  return out;
}

}  // namespace perfgate
