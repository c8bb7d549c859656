#include "perfgate/core/stop_signal.h"

namespace perfgate {

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

}  // namespace perfgate
