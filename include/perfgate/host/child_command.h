#pragma once

#include <string>
#include <vector>

#include "perfgate/core/units.h"

namespace perfgate {

/// How a short helper command (vgdb, valgrind --version) ended.
struct ChildOutcome {
  int exit_code = -1;      // its exit status; -1 when it did not exit by itself
  bool timed_out = false;  // killed after the timeout
  std::string output;      // stdout and stderr together, at most 64 KiB
};

/// Runs `argv` (looked up on PATH) with no input, waits at most `timeout`, and
/// then ends it (SIGKILL to the PID it started, nothing else). Throws Error when
/// it cannot be started at all.
ChildOutcome run_child(const std::vector<std::string>& argv, Nanos timeout);

}  // namespace perfgate
