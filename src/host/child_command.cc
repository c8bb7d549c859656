#include "perfgate/host/child_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

constexpr size_t kMaxOutput = 64 * 1024;

[[noreturn]] void exec_in_child(const std::vector<std::string>& argv, int out_fd) {
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

// Collects the output until the pipe closes or the deadline passes.
bool drain(int fd, std::string& output, std::chrono::steady_clock::time_point deadline) {
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (r < 0 && errno != EINTR) return false;
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
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw Error(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) exec_in_child(argv, fds[1]);
  close(fds[1]);
  ChildOutcome outcome;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  outcome.timed_out = !drain(fds[0], outcome.output, deadline);
  close(fds[0]);
  if (outcome.timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!outcome.timed_out && WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  return outcome;
}

}  // namespace perfgate
