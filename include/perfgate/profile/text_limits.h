#pragma once

// The most a stored run's texts from outside may hold. `run` and `accept`
// refuse more, and `store import` refuses more: one set of numbers, so that
// every export imports (a 2 KiB branch was stored, exported, then refused).

#include <cstddef>

namespace perfgate {

/// A commit, branch, pipeline id, name or label.
inline constexpr size_t kMaxCiTextBytes = 1024;
/// A review's reason, a saturation reason.
inline constexpr size_t kMaxReasonBytes = 16 * 1024;

}  // namespace perfgate
