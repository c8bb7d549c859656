#pragma once

// A service run under Valgrind's callgrind, steered from outside: the command
// that starts it with instrumentation off, then callgrind's monitor commands
// (`instrumentation on`, `zero`, `dump`) sent through vgdb to every process of
// the service, and the counts of the last dump read back. The FIFOs, dumps and
// Valgrind's own log stay in one folder of the run's.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "perfgate/core/units.h"
#include "perfgate/host/callgrind_dump.h"

namespace perfgate {

/// How callgrind counts.
struct CallgrindOptions {
  bool cache_sim = false;  // simulated caches (estimated cycles); a fixed geometry
  bool systime = true;     // system calls counted (--collect-systime)
};

/// "valgrind-3.19.0", or "" when `valgrind` is not on PATH or does not run.
std::string valgrind_version();

/// Why a service started with `service_command` cannot be run under Valgrind
/// here, in one line: Go's runtime (its signals and stacks), a sanitizer's
/// (its shadow memory). "" when nothing is known against it.
std::string valgrind_cannot_run(const std::string& service_command);

/// Why callgrind cannot count `service_command` on this runner ("" when it
/// can): no valgrind, no vgdb, or valgrind_cannot_run(). Sets `version`.
std::string callgrind_unavailable(const std::string& service_command, std::string& version);

class CallgrindSession {
 public:
  /// `dir` must exist and be this session's alone (its files are read back).
  CallgrindSession(std::filesystem::path dir, CallgrindOptions options);

  /// `command` run under valgrind --tool=callgrind, instrumentation off at
  /// start, children traced (a service started through `sh -c`), the output
  /// and vgdb's FIFOs in the folder.
  std::vector<std::string> wrap(const std::vector<std::string>& command) const;
  /// The valgrind options that change counts (part of the cost key).
  std::string counting_options() const;

  /// The PIDs of the service's processes that callgrind runs in (those with
  /// vgdb FIFOs in the folder), ascending.
  std::vector<pid_t> pids() const;
  /// Sends `command` (a callgrind monitor command) to every process; throws
  /// Error naming the process and what vgdb said when one does not answer
  /// within `timeout`.
  void monitor(const std::string& command, Nanos timeout) const;
  /// The totals of every process's newest dump, summed.
  EventTotals last_dump() const;

 private:
  std::filesystem::path dir_;
  CallgrindOptions options_;
};

}  // namespace perfgate
