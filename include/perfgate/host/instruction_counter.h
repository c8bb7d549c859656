#pragma once

// Hardware counters for the cost phase where the runner has a PMU: the
// service's user-space instructions, counted by the CPU itself (no Valgrind
// slowdown). Behind an interface, so that tests replace the PMU, which CI's
// virtual machines rarely expose.

#include <sys/types.h>

#include <memory>
#include <string>

namespace perfgate {

class InstructionCounter {
 public:
  virtual ~InstructionCounter() = default;
  /// "" when this machine can count user-space instructions of a process tree;
  /// otherwise why not, in one line ("no PMU: perf_event_open: No such file or
  /// directory", "kernel.perf_event_paranoid 3 forbids it").
  virtual std::string unavailable() = 0;
  /// Starts counting `pid`, called while it waits before its exec: every thread
  /// and process it starts afterwards is counted too (inherited).
  virtual void open(pid_t pid) = 0;
  /// Instructions counted so far over the whole tree. Throws Error when the
  /// counter did not run the whole time (multiplexed with other users of the
  /// PMU): such a count is an estimate, not a count.
  virtual double read() = 0;
};

/// The real PMU, through perf_event_open(2): PERF_COUNT_HW_INSTRUCTIONS,
/// user space only, inherited.
std::unique_ptr<InstructionCounter> pmu_instruction_counter();

}  // namespace perfgate
