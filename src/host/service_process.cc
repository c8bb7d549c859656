#include "perfgate/host/service_process.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "perfgate/core/error.h"
#include "perfgate/host/placement.h"
#include "perfgate/host/proc_reader.h"
#include "perfgate/host/service_discovery.h"

#include "process_set.h"
#include "service_keeper.h"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;

// The keeper answers at once when it has forked the service, and says it is
// done within the grace and its own SIGKILL rounds (10 s, service_keeper.cc)
// after the word to stop; past these, it is stopped or hung, and perfgate
// ends the service's processes itself.
constexpr auto kKeeperFirstWord = std::chrono::seconds(10);
constexpr auto kKeeperKillRounds = std::chrono::seconds(12);

std::string in_quotes(const std::string& s) {
  return "\"" + s + "\"";
}

// Sent on the error pipe, negated, when the child cannot take its CPUs.
constexpr int kPinFailed = -1;
// Sent before errno when the child cannot enter `service.cwd`.
constexpr int kCwdFailed = -2;

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const ServiceSpec& spec, std::vector<char*>& argv, int error_fd,
                             const cpu_set_t* cpus, bool fixed_addresses, const int go[2]) {
  setpgid(0, 0);  // its own group, so stop() reaches its children too
  // Counted cost: addresses that differ per launch move hash buckets and
  // allocator paths, hence instruction counts. Inherited across exec.
  if (fixed_addresses) personality(personality(0xffffffff) | ADDR_NO_RANDOMIZE);
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive its keeper, even after a SIGKILL
  // Before exec: the service's every process and thread inherits the CPUs.
  if (cpus && sched_setaffinity(0, sizeof *cpus, cpus) != 0) {
    int err = kPinFailed;
    (void)!write(error_fd, &err, sizeof err);
    _exit(127);
  }
  if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
    int err[2] = {kCwdFailed, errno};
    (void)!write(error_fd, err, sizeof err);
    _exit(127);
  }
  for (const auto& [name, value] : spec.env) setenv(name.c_str(), value.c_str(), 1);
  dup2(STDERR_FILENO, STDOUT_FILENO);  // the service's chatter is not perfgate's report
  if (go[0] >= 0) {
    // Wait for perfgate's word (LaunchOptions::before_exec); its end closed
    // without one, perfgate is gone or changed its mind.
    close(go[1]);
    char word = 0;
    while (read(go[0], &word, 1) < 0 && errno == EINTR) {
    }
    if (word != 'g') _exit(127);
  }
  execvp(argv[0], argv.data());
  int err = errno;
  (void)!write(error_fd, &err, sizeof err);
  _exit(127);
}

// One GET; true when the service answered 2xx or 3xx (a 404 or 401 is a
// service not yet routing, or not this one), whose status (or libcurl's reason
// for none) is left in `last`. Driven through a multi handle in short polls, so
// that a signal ends a slow answer.
bool answers(const std::string& url, bool tls_verify, const std::atomic<bool>& stop,
             std::string& last) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  std::unique_ptr<CURLM, decltype(&curl_multi_cleanup)> multi(curl_multi_init(),
                                                              curl_multi_cleanup);
  if (!curl || !multi) return false;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_PROXY, "");
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, 1000L);
  // As the load will: a self-signed test service with tls_verify false is ready.
  curl_easy_setopt(curl.get(), CURLOPT_SSL_VERIFYPEER, tls_verify ? 1L : 0L);
  curl_easy_setopt(curl.get(), CURLOPT_SSL_VERIFYHOST, tls_verify ? 2L : 0L);
  curl_easy_setopt(
      curl.get(), CURLOPT_WRITEFUNCTION,
      +[](char*, size_t size, size_t n, void*) { return size * n; });
  curl_multi_add_handle(multi.get(), curl.get());
  CURLcode result = CURLE_OPERATION_TIMEDOUT;
  for (int running = 1; running && !stop;) {
    if (curl_multi_perform(multi.get(), &running) != CURLM_OK) break;
    int msgs = 0;
    if (CURLMsg* msg = curl_multi_info_read(multi.get(), &msgs); msg && msg->msg == CURLMSG_DONE)
      result = msg->data.result;
    if (running) curl_multi_poll(multi.get(), nullptr, 0, 50, nullptr);
  }
  curl_multi_remove_handle(multi.get(), curl.get());
  if (result != CURLE_OK) {
    last = curl_easy_strerror(result);
    return false;
  }
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  last = "status " + std::to_string(status);
  return status >= 200 && status < 400;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

ServiceProcess::ServiceProcess(const ServiceSpec& spec, const CpuList& cpus,
                               const LaunchOptions& launch)
    : spec_(spec), cpus_(cpus), warn_(launch.warn) {
  if (spec_.command.empty()) throw Error("service.command: empty command");
  std::vector<char*> argv;
  for (auto& arg : spec_.command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  cpu_set_t cpu_set = to_cpu_set(cpus);  // built here: the child only makes the call
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("service: pipe: ") + strerror(errno));
  int go[2] = {-1, -1};
  if (launch.before_exec && pipe2(go, O_CLOEXEC) != 0)
    throw Error(std::string("service: pipe: ") + strerror(errno));
  // Built before the fork: the keeper only calls it, in the service's child.
  std::function<void()> start = [&] {
    exec_child(spec_, argv, fds[1], cpus.empty() ? nullptr : &cpu_set, launch.fixed_addresses, go);
  };
  try {
    start_keeper(start, launch.scratch_dir.c_str());
  } catch (...) {
    for (int fd : {fds[0], fds[1], go[0], go[1]})
      if (fd >= 0) close(fd);
    throw;
  }
  close(fds[1]);
  if (launch.before_exec) {
    try {
      release_child(launch.before_exec, go);
    } catch (...) {
      close(fds[0]);
      end_keeper(kStopGrace);
      throw;
    }
  }
  check_exec(fds[0]);
}

// The keeper (service_keeper.h) forks the service and stays its parent, so
// that nothing the service starts gets away from it; the service's PID comes
// from the keeper.
void ServiceProcess::start_keeper(const std::function<void()>& start, const char* scratch) {
  int sock[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) != 0)
    throw Error(std::string("service: socketpair: ") + strerror(errno));
  keeper_ = fork();
  if (keeper_ == 0) {
    close(sock[1]);  // only perfgate holds its end: its death is the keeper's EOF
    keep_service(sock[0], kStopGrace, start, scratch);
  }
  close(sock[0]);
  if (keeper_ < 0) {
    close(sock[1]);
    throw Error(std::string("service: fork: ") + strerror(errno));
  }
  setpgid(keeper_, keeper_);  // as the keeper does: perfgate's group is not its
  keeper_fd_ = sock[1];
  auto first = next_word(Clock::now() + kKeeperFirstWord);
  if (first && first->kind == KeeperMessage::kStarted) {
    pid_ = first->value;
    return;
  }
  bool fork_failed = first && first->kind == KeeperMessage::kForkFailed;
  bool gone = keeper_done_;
  end_keeper(kStopGrace);
  throw Error(std::string("service: fork: ") +
              (fork_failed ? strerror(first->value)
               : gone      ? "the keeper process ended first"
                           : "the keeper process did not answer within 10s"));
}

// The pipe closes on a successful exec; otherwise the child sends errno.
void ServiceProcess::check_exec(int error_fd) {
  int err = 0;
  int cwd_err = 0;
  ssize_t n = 0;
  while ((n = read(error_fd, &err, sizeof err)) < 0 && errno == EINTR) {
  }
  if (n == sizeof err && err == kCwdFailed) (void)!read(error_fd, &cwd_err, sizeof cwd_err);
  close(error_fd);
  if (n != sizeof err) return;
  end_keeper(kStopGrace);
  if (err == kCwdFailed)
    throw Error("service.cwd: cannot enter " + in_quotes(spec_.cwd) + " to start " +
                in_quotes(spec_.command[0]) + ": " + strerror(cwd_err));
  if (err == kPinFailed)
    throw Error("placement: cannot pin service " + in_quotes(spec_.command[0]) + " to CPUs " +
                format_cpu_list(cpus_));
  throw Error("service.command: cannot start " + in_quotes(spec_.command[0]) + ": " +
              strerror(err));
}

// LaunchOptions::before_exec, while the child waits for the word to exec. A
// throw leaves the word unsaid: the child ends, and the error goes on.
void ServiceProcess::release_child(const std::function<void(pid_t)>& before_exec, int go[2]) {
  close(go[0]);
  try {
    before_exec(pid_);
  } catch (...) {
    close(go[1]);
    throw;
  }
  char word = 'g';
  (void)!write(go[1], &word, 1);
  close(go[1]);
}

// The keeper's next message, waited for until `deadline` (now: only one
// already sent). None when none came in time, or the keeper is gone
// (keeper_done_): killed from outside, it took the service's news with it.
std::optional<KeeperMessage> ServiceProcess::next_word(Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{keeper_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left, 0, 100))) > 0) {
      KeeperMessage message;
      ssize_t n = recv(keeper_fd_, &message, sizeof message, MSG_DONTWAIT);
      if (n == sizeof message) return message;
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
        keeper_done_ = true;
        return std::nullopt;
      }
    }
    if (Clock::now() >= deadline) return std::nullopt;
  }
}

// Takes one message of the keeper's; false when none came by `deadline`. A
// keeper gone without saying it was done left the service's processes to
// themselves: perfgate ends them.
bool ServiceProcess::hear_keeper(Clock::time_point deadline) {
  bool done_before = keeper_done_;
  auto message = next_word(deadline);
  if (!message) {
    if (keeper_done_ && !done_before)
      end_without_keeper(kStopGrace, "its keeper process was killed from outside perfgate");
    return false;
  }
  if (message->kind == KeeperMessage::kExited) {
    exit_status_ = message->value;
    exited_ = true;
  }
  if (message->kind == KeeperMessage::kDone) keeper_done_ = true;
  return true;
}

// A keeper stopped (SIGSTOP: `kill -STOP $PPID` in the service) would hold
// perfgate until its deadline for nothing.
bool ServiceProcess::keeper_stopped() const {
  auto stat = ProcReader("/").process(keeper_);
  return stat && (stat->state == 'T' || stat->state == 't');
}

// The word to stop, then the keeper's news until it is done: the service
// and every process it started have ended. A keeper that does not finish in
// time, or is stopped, is killed, and perfgate ends what it kept. Then the
// keeper is reaped.
void ServiceProcess::end_keeper(Nanos grace) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(grace).count();
  KeeperMessage word{KeeperMessage::kStop, static_cast<int32_t>(std::clamp<int64_t>(
                                               ms, 0, std::numeric_limits<int32_t>::max()))};
  (void)!send(keeper_fd_, &word, sizeof word, MSG_NOSIGNAL);
  auto deadline = Clock::now() + grace + kKeeperKillRounds;
  while (!keeper_done_ && Clock::now() < deadline && !keeper_stopped())
    hear_keeper(std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
  if (!keeper_done_) {
    keeper_done_ = true;
    end_without_keeper(grace, keeper_stopped()
                                  ? "its keeper process was stopped from outside perfgate"
                                  : "its keeper process did not end it within " +
                                        format_duration(grace + kKeeperKillRounds));
  }
  close(keeper_fd_);
  keeper_fd_ = -1;
  for (auto give_up = Clock::now() + std::chrono::seconds(5);;) {
    pid_t reaped = waitpid(keeper_, nullptr, WNOHANG);
    if (reaped != 0 && !(reaped < 0 && errno == EINTR)) break;
    if (Clock::now() >= give_up) break;  // left a zombie, rather than hang
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The keeper can no longer end the service: perfgate kills the keeper (by
// its PID: perfgate's own child) and ends what it kept, the service's group
// and the keeper's other descendants, by pidfd; what survives is named.
void ServiceProcess::end_without_keeper(Nanos grace, const std::string& what_happened) {
  keeper_lost_ = !exited_;
  exited_ = true;
  auto kept = processes();
  kill(keeper_, SIGKILL);
  auto left = ProcessSet(pid_, kept).end(grace);
  for (const auto& process : left) survivors_ += (survivors_.empty() ? "" : ", ") + process;
  if (warn_)
    warn_("service " + in_quotes(spec_.command[0]) + ": " + what_happened +
          "; perfgate ended the service's processes itself" +
          (survivors_.empty() ? "" : " but for " + survivors_ + ", still running"));
}

ServiceProcess::~ServiceProcess() {
  stop();
}

bool ServiceProcess::running() {
  while (!keeper_done_ && hear_keeper(Clock::now())) {
  }
  return !exited_;
}

std::string ServiceProcess::exit_description() const {
  if (!exited_) return "is running";
  if (!keeper_lost_) return describe_exit(exit_status_);
  return "lost its keeper process to a signal from outside perfgate; perfgate ended the "
         "service's processes" +
         (survivors_.empty() ? std::string() : " but for " + survivors_ + ", still running");
}

void ServiceProcess::wait_ready(const std::atomic<bool>& stop, bool tls_verify) {
  auto deadline = Clock::now() + spec_.ready_timeout;
  std::string last;  // the last probe's answer, for the message
  while (Clock::now() < deadline && !stop) {
    if (!running())
      throw Error("service " + in_quotes(spec_.command[0]) + " " + exit_description() +
                  " before it was ready");
    if (answers(spec_.ready_url, tls_verify, stop, last)) return hold_to_cpus();
    for (int i = 0; i < 5 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (stop)
    throw Error("interrupted by SIGINT or SIGTERM while waiting for service " +
                in_quotes(spec_.command[0]) +
                " to be ready; the service was stopped, nothing "
                "stored");
  // A service that answers 503 while it warms up did answer: say what it said.
  // A 404 is no warm-up: the path is wrong, and waiting longer would not help.
  if (last.rfind("status 404", 0) == 0 || last.rfind("status 405", 0) == 0)
    throw Error("service " + in_quotes(spec_.command[0]) +
                " not ready: " + redacted_url(spec_.ready_url) + " answered " + last +
                ": the service runs but does not serve that path; set service.ready_url to "
                "one it answers with a 2xx (its health check), and target.url to what to measure");
  if (last.rfind("status ", 0) == 0)
    throw Error("service " + in_quotes(spec_.command[0]) +
                " not ready: " + redacted_url(spec_.ready_url) + " answered " + last + " until " +
                format_duration(spec_.ready_timeout) +
                " had passed (ready is a 2xx or 3xx status; service.ready_timeout waits longer)");
  throw Error("service " + in_quotes(spec_.command[0]) +
              " not ready: " + redacted_url(spec_.ready_url) + " did not answer within " +
              format_duration(spec_.ready_timeout) + (last.empty() ? "" : " (" + last + ")") +
              elsewhere_hint());
}

// A service started on another port than the profile's (a PORT it ignores, a
// default of its own) waited out the timeout in silence: name what it holds.
std::string ServiceProcess::elsewhere_hint() const {
  auto held = listening_on(ProcReader("/"), processes());
  if (held.empty()) return "";
  std::string list;
  for (const auto& address : held) list += (list.empty() ? "" : ", ") + address;
  auto wanted = url_host_port(spec_.ready_url);
  return "; it listens on " + list + " instead" +
         (wanted ? " of port " + std::to_string(wanted->second) : std::string()) +
         ": start it on the profile's port, or give target.url and service.ready_url its port";
}

std::vector<pid_t> ServiceProcess::processes() const {
  std::vector<pid_t> out;
  if (keeper_ <= 0) return out;
  ProcReader proc("/");
  for (pid_t pid : proc.process_tree(keeper_)) {
    auto stat = pid == keeper_ ? std::nullopt : proc.process(pid);
    if (stat && stat->state != 'Z' && stat->state != 'X') out.push_back(pid);
  }
  return out;
}

// The keeper's whole tree but the keeper: the service's processes, and those
// that left its tree (setsid, a double fork) and came to the keeper.
void ServiceProcess::hold_to_cpus() const {
  if (cpus_.empty()) return;
  ProcReader proc("/");
  for (pid_t pid : proc.process_tree(keeper_)) {
    if (pid == keeper_) continue;
    for (const auto& thread : proc.threads(std::to_string(pid))) {
      CpuList now = task_cpus(thread.pid);
      if (!now.empty() && now != cpus_) set_task_cpus(thread.pid, cpus_);
    }
  }
}

// The keeper stops it: SIGTERM to its group and to what left it, SIGKILL
// after `grace` to whatever is left, the orphans of the killed included.
void ServiceProcess::stop(Nanos grace) {
  if (keeper_ <= 0 || stopped_) return;
  stopped_ = true;
  end_keeper(grace);
}

}  // namespace perfgate
