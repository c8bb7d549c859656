#include "perfgate/report/chart_sample.h"

#include <algorithm>

namespace perfgate {

bool always_charted(const RunRecord& run) {
  return run.verdict == Verdict::kFail || run.verdict == Verdict::kError ||
         run.saturation.saturated;
}

std::vector<size_t> chart_sample(const std::vector<RunRecord>& runs, size_t budget,
                                 std::optional<size_t> baseline) {
  std::vector<size_t> out;
  if (runs.size() <= std::max<size_t>(budget, 2)) {
    for (size_t i = 0; i < runs.size(); ++i) out.push_back(i);
    return out;
  }
  // Every `step`-th run by position, so that the sample keeps the time axis even.
  size_t step = (runs.size() + budget - 1) / std::max<size_t>(budget, 1);
  for (size_t i = 0; i < runs.size(); ++i) {
    bool sampled = i % step == 0 || i + 1 == runs.size() || (baseline && i == *baseline);
    if (sampled || always_charted(runs[i])) out.push_back(i);
  }
  return out;
}

}  // namespace perfgate
