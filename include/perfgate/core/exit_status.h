#pragma once

namespace perfgate {

/// The process exit codes of the contract: a regression (1) is never confused
/// with a tool failure (3).
enum class ExitStatus : int {
  kPass = 0,
  kFail = 1,
  kWarn = 2,
  kError = 3,
};

inline int to_int(ExitStatus status) {
  return static_cast<int>(status);
}

}  // namespace perfgate
