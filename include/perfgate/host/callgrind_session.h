#pragma once

// A service run under Valgrind's callgrind, steered from outside: the command
// that starts it with instrumentation off, then callgrind's monitor commands
// (`instrumentation on`, `zero`, `dump`) sent through vgdb to every process of
// the service, and the counts of the last dump read back. The FIFOs, dumps and
// Valgrind's own log stay in one folder of the run's.

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <set>
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

/// "valgrind-3.19.0", or "" when `valgrind` is not on PATH or does not run,
/// why then in `problem` (not installed, no answer, a failure).
std::string valgrind_version(std::string* problem = nullptr);

/// Why a service started with `command` in `cwd` (empty: perfgate's) cannot
/// be run under Valgrind here, in one line: Go's runtime (its signals and
/// stacks), a sanitizer's (its shadow memory), in the program that serves (`sh
/// -c "exec ./server"` is looked through). "" when nothing is known against it.
std::string valgrind_cannot_run(const std::vector<std::string>& command,
                                const std::filesystem::path& cwd = {});

/// Why callgrind cannot count `command` on this runner ("" when it can): no
/// valgrind, no vgdb, or valgrind_cannot_run(). Sets `version`.
std::string callgrind_unavailable(const std::vector<std::string>& command,
                                  const std::filesystem::path& cwd, std::string& version);

/// The dump files of a session's folder at one moment (their names): what a
/// count made after it leaves out.
using DumpMark = std::set<std::string>;

/// What one count read back.
struct CountedDumps {
  EventTotals totals;  // summed over every dump counted
  int processes = 0;   // whose dumps were summed
  int ended = 0;       // of them, processes that exited during the count
};

/// The dump files ("callgrind.out.PID[.PART]") a count since `mark` sums. The
/// service's processes dump before every fork (wrap()), so that a child
/// inherits no counts and every dump holds counts no other holds. Of a process
/// that answered the closing dump (`answered`), its parts written since the
/// mark, as listed just after that dump (`after_dump`); not its final dump,
/// which comes later. Of every other process (children that served requests and
/// exited), every file since the mark, its final dump included, as listed once
/// they have all exited (`after_exit`).
std::vector<std::string> counted_dump_files(const DumpMark& mark,
                                            const std::vector<pid_t>& answered,
                                            const std::vector<std::string>& after_dump,
                                            const std::vector<std::string>& after_exit);

/// The second half of CallgrindSession::dump_since, once the processes in
/// `answered` (sorted) have dumped and `after_dump` lists `dir`: waits until the
/// only processes still running (`running`) are those, then sums the counted
/// dumps of `dir` since `mark`. Throws Error when others still run after
/// `timeout`, or an ended process's final dump is empty (it was killed).
CountedDumps sum_counted_dumps(const std::filesystem::path& dir, const DumpMark& mark,
                               const std::vector<pid_t>& answered,
                               const std::vector<std::string>& after_dump,
                               const std::function<std::vector<pid_t>()>& running, Nanos timeout);

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
  /// Sends `command` (a callgrind monitor command) to every process and returns
  /// those that answered (one that exited meanwhile does not); throws Error
  /// naming the process and what vgdb said when one does not answer within
  /// `timeout`.
  std::vector<pid_t> monitor(const std::string& command, Nanos timeout) const;
  /// The dump files now: taken after `zero`, the start of a count.
  DumpMark mark() const;
  /// Ends a count begun at `mark`: every process dumps, then, once the only
  /// processes of the service still running (`running`, zombies left out) are
  /// those that dumped, the counts of every process since the mark are summed
  /// (counted_dump_files), children that exited meanwhile included. Throws
  /// Error when others still run after `timeout`, or a process ended without
  /// writing its counts (killed by a signal).
  CountedDumps dump_since(const DumpMark& mark, const std::function<std::vector<pid_t>()>& running,
                          Nanos timeout) const;

 private:
  std::filesystem::path dir_;
  CallgrindOptions options_;
};

}  // namespace perfgate
