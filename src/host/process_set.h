#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace perfgate {

/// The processes of a service that its keeper can no longer end (killed or
/// stopped from outside perfgate): the members of the service's process group
/// and the processes the keeper held, each by a pidfd, so that a signal never
/// reaches a process that took a PID after one of them ended.
class ProcessSet {
 public:
  /// The live members of process group `group` and the live processes of `pids`.
  ProcessSet(pid_t group, const std::vector<pid_t>& pids);
  ~ProcessSet();
  ProcessSet(const ProcessSet&) = delete;
  ProcessSet& operator=(const ProcessSet&) = delete;

  /// SIGTERM to each once, up to `grace` for them to go (what joins the group
  /// meanwhile included), then SIGKILL to what is left, and up to 2 s more.
  /// Returns what survived, e.g. "PID 4242 (sleep)"; empty when all are gone.
  std::vector<std::string> end(std::chrono::nanoseconds grace);

 private:
  struct Member {
    pid_t pid;
    int fd;  // a pidfd: readable once the process has ended
  };
  void add_group();
  void add(pid_t pid);
  void signal_all(int sig);
  bool wait_gone(std::chrono::steady_clock::time_point deadline, bool watch_group);
  bool gone(const Member& m) const;

  pid_t group_;
  std::vector<Member> members_;
};

}  // namespace perfgate
