#include "process_set.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "perfgate/host/proc_reader.h"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;

// By syscall: Debian 12's <sys/pidfd.h> (glibc 2.36) declares these without
// C linkage, so C++ cannot link them.
int pidfd_open(pid_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

void pidfd_send_signal(int fd, int sig) {
  syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0);
}

bool live(const ProcStat& p) {
  return p.state != 'Z' && p.state != 'X';
}

}  // namespace

ProcessSet::ProcessSet(pid_t group, const std::vector<pid_t>& pids) : group_(group) {
  for (pid_t pid : pids) add(pid);
  add_group();
}

ProcessSet::~ProcessSet() {
  for (const auto& m : members_) close(m.fd);
}

void ProcessSet::add(pid_t pid) {
  if (pid <= 1 || pid == getpid()) return;
  if (std::any_of(members_.begin(), members_.end(), [&](const Member& m) { return m.pid == pid; }))
    return;
  int fd = pidfd_open(pid);
  if (fd >= 0) members_.push_back({pid, fd});
}

// The group's members: what stayed in the service's group after its parent
// went (a server that shrugs off SIGTERM, a `sleep` of its shell).
void ProcessSet::add_group() {
  if (group_ <= 1) return;
  for (const auto& p : ProcReader("/").processes())
    if (p.pgid == group_ && live(p)) add(p.pid);
}

bool ProcessSet::gone(const Member& m) const {
  pollfd p{m.fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

void ProcessSet::signal_all(int sig) {
  for (const auto& m : members_)
    if (!gone(m)) pidfd_send_signal(m.fd, sig);
}

// Looks every 20 ms; a process that joined the group meanwhile gets the
// SIGTERM the others had.
bool ProcessSet::wait_gone(Clock::time_point deadline, bool watch_group) {
  for (;;) {
    if (watch_group) {
      auto known = members_.size();
      add_group();
      for (auto i = known; i < members_.size(); ++i) pidfd_send_signal(members_[i].fd, SIGTERM);
    }
    if (std::all_of(members_.begin(), members_.end(), [&](const Member& m) { return gone(m); }))
      return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<std::string> ProcessSet::end(std::chrono::nanoseconds grace) {
  signal_all(SIGTERM);
  signal_all(SIGCONT);  // a stopped process hears SIGTERM only once it runs
  if (!wait_gone(Clock::now() + grace, true)) {
    add_group();
    signal_all(SIGKILL);
    wait_gone(Clock::now() + std::chrono::seconds(2), false);
  }
  std::vector<std::string> left;
  ProcReader proc("/");
  for (const auto& m : members_) {
    if (gone(m)) continue;
    auto stat = proc.process(m.pid);
    left.push_back("PID " + std::to_string(m.pid) + (stat ? " (" + stat->comm + ")" : ""));
  }
  return left;
}

}  // namespace perfgate
