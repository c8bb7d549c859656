#include "perfgate/host/child_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

constexpr size_t kMaxOutput = 64 * 1024;

// Its own group, so that what it starts ends with it; and it dies with
// perfgate: a vgdb of a SIGKILLed perfgate kept running (issue 50, item 9).
[[noreturn]] void exec_in_child(const std::vector<std::string>& argv, int out_fd, pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // perfgate died before the prctl
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

// Collects the output until the pipe closes, or the child has exited and
// nothing more is there to read (what it started may hold the pipe open), or
// the deadline passes (false). The child is left to reap.
bool drain(int fd, pid_t pid, std::string& output, std::chrono::steady_clock::time_point deadline) {
  char buf[4096];
  bool exited = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, exited ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (r < 0 && errno != EINTR) return false;
    if (r == 0 && exited) return true;
    siginfo_t info{};
    if (r == 0)
      exited = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               info.si_pid == pid;
    if (r <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return true;
    if (output.size() < kMaxOutput) output.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

ChildOutcome run_child(const std::vector<std::string>& argv, Nanos timeout) {
  if (argv.empty()) throw Error("run_child: empty command");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + strerror(errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw Error(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) exec_in_child(argv, fds[1], parent);
  setpgid(pid, pid);  // also from here: a kill may come before the child runs
  close(fds[1]);
  ChildOutcome outcome;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  outcome.timed_out = !drain(fds[0], pid, outcome.output, deadline);
  close(fds[0]);
  // The group is the child's own: what it left running (a helper holding its
  // output) or all of it, at the timeout. Its PGID stays in use, hence never a
  // reused PID, until the child is reaped below.
  kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!outcome.timed_out && WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  return outcome;
}

}  // namespace perfgate
