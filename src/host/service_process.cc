#include "perfgate/host/service_process.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;

std::string in_quotes(const std::string& s) {
  return "\"" + s + "\"";
}

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const ServiceSpec& spec, std::vector<char*>& argv, int error_fd) {
  setpgid(0, 0);                     // its own group, so stop() reaches its children too
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive perfgate, even after SIGKILL
  if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
    int err = errno;
    (void)!write(error_fd, &err, sizeof err);
    _exit(127);
  }
  for (const auto& [name, value] : spec.env) setenv(name.c_str(), value.c_str(), 1);
  execvp(argv[0], argv.data());
  int err = errno;
  (void)!write(error_fd, &err, sizeof err);
  _exit(127);
}

// One GET; true when the service answered with any non-5xx status.
bool answers(const std::string& url) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return false;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_PROXY, "");
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, 1000L);
  curl_easy_setopt(
      curl.get(), CURLOPT_WRITEFUNCTION,
      +[](char*, size_t size, size_t n, void*) { return size * n; });
  if (curl_easy_perform(curl.get()) != CURLE_OK) return false;
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  return status > 0 && status < 500;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

ServiceProcess::ServiceProcess(const ServiceSpec& spec) : spec_(spec) {
  if (spec_.command.empty()) throw Error("service.command: empty command");
  std::vector<char*> argv;
  for (auto& arg : spec_.command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("service: pipe: ") + strerror(errno));
  pid_ = fork();
  if (pid_ < 0) throw Error(std::string("service: fork: ") + strerror(errno));
  if (pid_ == 0) exec_child(spec_, argv, fds[1]);
  setpgid(pid_, pid_);  // also from the parent: stop() may come before the child runs
  close(fds[1]);
  // The pipe closes on a successful exec; otherwise the child sends errno.
  int err = 0;
  ssize_t n = read(fds[0], &err, sizeof err);
  close(fds[0]);
  if (n == sizeof err) {
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
    throw Error("service.command: cannot start " + in_quotes(spec_.command[0]) + ": " +
                strerror(err));
  }
}

ServiceProcess::~ServiceProcess() {
  stop();
}

bool ServiceProcess::running() {
  if (reaped_) return false;
  if (waitpid(pid_, &exit_status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

std::string ServiceProcess::exit_description() const {
  return reaped_ ? describe_exit(exit_status_) : "is running";
}

void ServiceProcess::wait_ready() {
  auto deadline = Clock::now() + spec_.ready_timeout;
  while (Clock::now() < deadline) {
    if (!running())
      throw Error("service " + in_quotes(spec_.command[0]) + " " + describe_exit(exit_status_) +
                  " before it was ready");
    if (answers(spec_.ready_url)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw Error("service " + in_quotes(spec_.command[0]) +
              " not ready: " + redacted_url(spec_.ready_url) + " did not answer within " +
              format_duration(spec_.ready_timeout));
}

void ServiceProcess::stop(Nanos grace) {
  if (pid_ <= 0 || stopped_) return;
  stopped_ = true;
  // The group outlives its leader when the leader dies first (a shell that
  // started the server and exited): its other members are stopped all the same.
  kill(-pid_, SIGTERM);
  auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    bool group_gone = kill(-pid_, 0) != 0;
    if (!running() && group_gone) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Whatever is left of the group, the service's children included, is killed.
  kill(-pid_, SIGKILL);
  if (!reaped_) {
    waitpid(pid_, &exit_status_, 0);
    reaped_ = true;
  }
}

}  // namespace perfgate
