#include "perfgate/run_record.h"

namespace perfgate {

bool RunRecord::eligible_as_baseline() const {
  bool judged_ok = verdict == Verdict::kPass || verdict == Verdict::kWarn;
  return status == "complete" && !saturation.saturated && judged_ok;
}

}  // namespace perfgate
