#include "perfgate/host/service_process.h"

#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>

#include "perfgate/core/error.h"
#include "perfgate/host/placement.h"
#include "perfgate/host/proc_reader.h"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;

std::string in_quotes(const std::string& s) {
  return "\"" + s + "\"";
}

// Sent on the error pipe, negated, when the child cannot take its CPUs.
constexpr int kPinFailed = -1;
// Sent before errno when the child cannot enter `service.cwd`.
constexpr int kCwdFailed = -2;

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const ServiceSpec& spec, std::vector<char*>& argv, int error_fd,
                             const cpu_set_t* cpus, char* mark, bool fixed_addresses,
                             const int go[2]) {
  setpgid(0, 0);  // its own group, so stop() reaches its children too
  // Counted cost: addresses that differ per launch move hash buckets and
  // allocator paths, hence instruction counts. Inherited across exec.
  if (fixed_addresses) personality(personality(0xffffffff) | ADDR_NO_RANDOMIZE);
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive perfgate, even after SIGKILL
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
  putenv(mark);
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

// Runs in the forked guardian: only async-signal-safe calls. It waits on a
// socket whose other end only perfgate holds; at EOF (perfgate gone, even by
// SIGKILL) it ends the service's whole process group, which PR_SET_PDEATHSIG,
// covering only the direct child, cannot do. A byte on it means perfgate
// stopped the group itself: nothing left to do.
// Whether /proc/PID/environ holds `mark`: open, read and memmem only, for the
// guardian (async-signal-safe), in chunks that overlap by the mark's length.
bool environ_holds(const char* pid, const char* mark, size_t mark_len) {
  char path[64] = "/proc/";
  size_t at = 6;
  for (const char* c = pid; *c && at < sizeof path - 10; ++c) path[at++] = *c;
  for (const char* c = "/environ"; *c; ++c) path[at++] = *c;
  path[at] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[8192];
  size_t kept = 0;
  bool found = false;
  for (ssize_t n; !found && (n = read(fd, buf + kept, sizeof buf - kept)) > 0;) {
    size_t have = kept + static_cast<size_t>(n);
    found = memmem(buf, have, mark, mark_len) != nullptr;
    kept = std::min(have, mark_len - 1);
    memmove(buf, buf + have - kept, kept);
  }
  close(fd);
  return found;
}

// SIGKILL to every process that carries `mark`: what left the group (setsid).
void kill_marked(const char* mark) {
  size_t mark_len = strlen(mark);
  int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0 || mark_len == 0 || mark_len > 4096) return;
  char buf[8192];
  for (ssize_t n; (n = getdents64(dir, buf, sizeof buf)) > 0;)
    for (ssize_t off = 0; off < n;) {
      auto* entry = reinterpret_cast<struct dirent64*>(buf + off);
      off += entry->d_reclen;
      const char* name = entry->d_name;
      if (*name < '1' || *name > '9') continue;
      if (environ_holds(name, mark, mark_len)) {
        pid_t pid = 0;
        for (const char* c = name; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
        kill(pid, SIGKILL);
      }
    }
  close(dir);
}

[[noreturn]] void guard_group(pid_t group, int watch_fd, Nanos grace, const char* mark) {
  setpgid(0, 0);  // out of perfgate's group: a kill of that group spares it
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(sig, SIG_IGN);
  int null_fd = open("/dev/null", O_RDWR);  // holds none of perfgate's output pipes open
  for (int fd = 0; fd < 3; ++fd) dup2(null_fd, fd);
  for (int fd = 3; fd < 4096; ++fd)
    if (fd != watch_fd) close(fd);
  char byte = 0;
  ssize_t n;
  while ((n = read(watch_fd, &byte, 1)) < 0 && errno == EINTR) {
  }
  if (n == 1) _exit(0);
  kill(-group, SIGTERM);
  timespec pause{0, 10'000'000};
  for (auto waited = Nanos(0); waited < grace; waited += Nanos(pause.tv_nsec)) {
    if (kill(-group, 0) != 0) break;
    nanosleep(&pause, nullptr);
  }
  kill(-group, SIGKILL);
  kill_marked(mark);  // perfgate is gone: its stop() cannot end what left the group
  _exit(0);
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

ServiceProcess::ServiceProcess(const ServiceSpec& spec, const CpuList& cpus,
                               const LaunchOptions& launch)
    : spec_(spec), cpus_(cpus) {
  if (spec_.command.empty()) throw Error("service.command: empty command");
  // The service's orphans (children of a shell that exited) become perfgate's
  // while it lives, so that stop() reaps them instead of waiting on an init
  // that may reap late; the guardian covers perfgate's own death.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::vector<char*> argv;
  for (auto& arg : spec_.command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  cpu_set_t cpu_set = to_cpu_set(cpus);  // built here: the child only makes the call
  // Unique among this host's services: perfgate's PID and this object's address.
  mark_ = "PERFGATE_SERVICE_TREE=" + std::to_string(getpid()) + "-" +
          std::to_string(reinterpret_cast<uintptr_t>(this)) + "-" +
          std::to_string(Clock::now().time_since_epoch().count());
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("service: pipe: ") + strerror(errno));
  int go[2] = {-1, -1};
  if (launch.before_exec && pipe2(go, O_CLOEXEC) != 0)
    throw Error(std::string("service: pipe: ") + strerror(errno));
  pid_ = fork();
  if (pid_ < 0) throw Error(std::string("service: fork: ") + strerror(errno));
  if (pid_ == 0)
    exec_child(spec_, argv, fds[1], cpus.empty() ? nullptr : &cpu_set, mark_.data(),
               launch.fixed_addresses, go);
  setpgid(pid_, pid_);  // also from the parent: stop() may come before the child runs
  close(fds[1]);
  if (launch.before_exec) {
    try {
      release_child(launch.before_exec, go);
    } catch (...) {
      close(fds[0]);
      throw;
    }
  }
  // The pipe closes on a successful exec; otherwise the child sends errno.
  int err = 0;
  int cwd_err = 0;
  ssize_t n = read(fds[0], &err, sizeof err);
  if (n == sizeof err && err == kCwdFailed) (void)!read(fds[0], &cwd_err, sizeof cwd_err);
  close(fds[0]);
  if (n == sizeof err) {
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
    if (err == kCwdFailed)
      throw Error("service.cwd: cannot enter " + in_quotes(spec_.cwd) + " to start " +
                  in_quotes(spec_.command[0]) + ": " + strerror(cwd_err));
    if (err == kPinFailed)
      throw Error("placement: cannot pin service " + in_quotes(spec_.command[0]) + " to CPUs " +
                  format_cpu_list(cpus));
    throw Error("service.command: cannot start " + in_quotes(spec_.command[0]) + ": " +
                strerror(err));
  }
  start_guardian();
}

// LaunchOptions::before_exec, while the child waits for the word to exec. A
// throw leaves the word unsaid: the child ends, and the error goes on.
void ServiceProcess::release_child(const std::function<void(pid_t)>& before_exec, int go[2]) {
  close(go[0]);
  try {
    before_exec(pid_);
  } catch (...) {
    close(go[1]);
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
    throw;
  }
  char word = 'g';
  (void)!write(go[1], &word, 1);
  close(go[1]);
}

// A guardian process rather than a subreaper: a subreaper only adopts orphans
// while it lives, and perfgate killed by SIGKILL lives no more. The guardian
// needs nothing from perfgate but its socket's end, which the kernel closes on
// any death. What left the group (setsid) it finds by the service's mark.
void ServiceProcess::start_guardian() {
  // A socket pair rather than a pipe: send() with MSG_NOSIGNAL cannot raise
  // SIGPIPE in perfgate should the guardian be gone.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return;  // the direct child's PDEATHSIG still holds
  pid_t guardian = fork();
  if (guardian == 0) guard_group(pid_, fds[0], kStopGrace, mark_.c_str());
  close(fds[0]);
  if (guardian < 0) {
    close(fds[1]);
    return;
  }
  guardian_ = guardian;
  guardian_fd_ = fds[1];
}

void ServiceProcess::dismiss_guardian() {
  if (guardian_ <= 0) return;
  char byte = 0;
  (void)!send(guardian_fd_, &byte, 1, MSG_NOSIGNAL);
  close(guardian_fd_);
  waitpid(guardian_, nullptr, 0);
  guardian_ = -1;
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

void ServiceProcess::wait_ready(const std::atomic<bool>& stop, bool tls_verify) {
  auto deadline = Clock::now() + spec_.ready_timeout;
  std::string last;  // the last probe's answer, for the message
  while (Clock::now() < deadline && !stop) {
    if (!running())
      throw Error("service " + in_quotes(spec_.command[0]) + " " + describe_exit(exit_status_) +
                  " before it was ready");
    if (answers(spec_.ready_url, tls_verify, stop, last)) return hold_to_cpus();
    for (int i = 0; i < 5 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (stop)
    throw Error("interrupted by SIGINT or SIGTERM while waiting for service " +
                in_quotes(spec_.command[0]) +
                " to be ready; the service was stopped, nothing "
                "stored");
  // A service that answers 503 or 404 while it warms up did answer: say what it said.
  if (last.rfind("status ", 0) == 0)
    throw Error("service " + in_quotes(spec_.command[0]) +
                " not ready: " + redacted_url(spec_.ready_url) + " answered " + last + " until " +
                format_duration(spec_.ready_timeout) +
                " had passed (ready is a 2xx or 3xx status; service.ready_timeout waits longer)");
  throw Error("service " + in_quotes(spec_.command[0]) +
              " not ready: " + redacted_url(spec_.ready_url) + " did not answer within " +
              format_duration(spec_.ready_timeout) + (last.empty() ? "" : " (" + last + ")"));
}

void ServiceProcess::hold_to_cpus() const {
  if (cpus_.empty()) return;
  ProcReader proc("/");
  for (pid_t pid : proc.process_tree(pid_))
    for (const auto& thread : proc.threads(std::to_string(pid))) {
      CpuList now = task_cpus(thread.pid);
      if (!now.empty() && now != cpus_) set_task_cpus(thread.pid, cpus_);
    }
}

void ServiceProcess::stop(Nanos grace) {
  if (pid_ <= 0 || stopped_) return;
  stopped_ = true;
  // The group outlives its leader when the leader dies first (a shell that
  // started the server and exited): its other members are stopped all the same.
  kill(-pid_, SIGTERM);
  auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    reap_group();
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
  reap_group();
  stop_marked(grace);
  dismiss_guardian();
}

// What left the group (setsid, a double fork) still carries the mark: it is
// ended the same way, SIGTERM then SIGKILL. Orphans came to perfgate (a
// subreaper) and are reaped by their PIDs; nothing else of perfgate's is.
void ServiceProcess::stop_marked(Nanos grace) {
  ProcReader proc("/");
  auto marked = proc.processes_with_env(mark_);
  if (marked.empty()) return;
  auto signal_all = [&](int sig) {
    for (pid_t pid : marked)
      if (pid != getpid()) kill(pid, sig);
  };
  auto reap = [&] {
    for (pid_t pid : marked) waitpid(pid, nullptr, WNOHANG);
  };
  signal_all(SIGTERM);
  auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    reap();
    marked = proc.processes_with_env(mark_);
    if (marked.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  signal_all(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  reap();
}

// The service's orphans came to perfgate (a subreaper): reaped here, a dead
// member no longer counts as the group still there, and none stays a zombie.
void ServiceProcess::reap_group() {
  int status = 0;
  for (pid_t child; (child = waitpid(-pid_, &status, WNOHANG)) > 0;) {
    if (child != pid_) continue;
    exit_status_ = status;
    reaped_ = true;
  }
}

}  // namespace perfgate
