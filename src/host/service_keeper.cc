#include "service_keeper.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

// Everything here runs in the keeper, forked from perfgate while its other
// threads may hold locks: async-signal-safe calls only, nothing allocated.
namespace perfgate {
namespace {

// How often the keeper looks for new children while it waits for the
// service to go: orphans come to it without a signal.
constexpr int kScanEveryMs = 100;
// After SIGKILL a child that still will not go (uninterruptible sleep) is
// left to init after this long, rather than hold perfgate forever.
constexpr int64_t kKillRoundsMs = 10'000;

void tell(int socket_fd, int32_t kind, int32_t value) {
  KeeperMessage message{kind, value};
  (void)!send(socket_fd, &message, sizeof message, MSG_NOSIGNAL);
}

int64_t now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1'000'000;
}

// A /proc entry's name as a PID; 0 when it is not one.
pid_t as_pid(const char* name) {
  pid_t pid = 0;
  for (const char* c = name; *c; ++c) {
    if (*c < '0' || *c > '9' || pid > 100'000'000) return 0;
    pid = pid * 10 + (*c - '0');
  }
  return pid;
}

// The next number in `text` from `at`, skipping one space before it.
long next_field(const char*& at) {
  while (*at == ' ') ++at;
  long value = 0;
  for (; *at >= '0' && *at <= '9'; ++at) value = value * 10 + (*at - '0');
  return value;
}

// The parent and the process group from /proc/PID/stat, read after the
// command's last ')': a command may hold spaces and parentheses.
bool read_stat(const char* pid, pid_t& ppid, pid_t& pgid) {
  char path[48] = "/proc/";
  strncat(path, pid, 24);
  strcat(path, "/stat");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* at = strrchr(buf, ')');
  if (!at || at[1] != ' ' || at[2] == '\0') return false;
  at += 3;  // past ") " and the state letter
  ppid = static_cast<pid_t>(next_field(at));
  pgid = static_cast<pid_t>(next_field(at));
  return true;
}

// Calls `each(entry)` for every entry of the open folder `dir`.
template <typename Each>
void for_each_entry(int dir, Each each) {
  alignas(dirent64) char buf[8192];
  for (ssize_t n; (n = getdents64(dir, buf, sizeof buf)) > 0;)
    for (ssize_t off = 0; off < n;) {
      auto* entry = reinterpret_cast<dirent64*>(buf + off);
      off += entry->d_reclen;
      each(*entry);
    }
}

// Calls `each(pid, pgid)` for every process whose parent is the keeper: the
// service, and the orphans of its tree that came to the keeper.
template <typename Each>
void for_each_child(Each each) {
  pid_t self = getpid();
  int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  for_each_entry(dir, [&](const dirent64& entry) {
    pid_t pid = as_pid(entry.d_name);
    pid_t ppid = 0, pgid = 0;
    if (pid > 0 && read_stat(entry.d_name, ppid, pgid) && ppid == self) each(pid, pgid);
  });
  close(dir);
}

// What the keeper knows of the service.
struct Kept {
  int socket_fd;
  int signal_fd;  // SIGCHLD
  pid_t service;
};

// Reaps every child that ended; the service's status goes to perfgate.
// False once the keeper has no child left.
bool reap(const Kept& kept) {
  for (;;) {
    int status = 0;
    pid_t child = waitpid(-1, &status, WNOHANG);
    if (child == kept.service) tell(kept.socket_fd, KeeperMessage::kExited, status);
    if (child > 0) continue;
    return !(child < 0 && errno == ECHILD);
  }
}

// Waits up to `ms` for a SIGCHLD, and takes it.
void await_child(const Kept& kept, int ms) {
  pollfd p{kept.signal_fd, POLLIN, 0};
  poll(&p, 1, ms);
  signalfd_siginfo info;
  while (read(kept.signal_fd, &info, sizeof info) > 0) {
  }
}

// Until perfgate's word to stop, whose grace it returns, or its end (EOF,
// `default_ms`, and `orphaned` set): perfgate is gone, even by SIGKILL.
// Meanwhile the keeper reaps, and reports the service's end. Without a
// signalfd it looks every 50 ms.
int64_t wait_for_stop(const Kept& kept, int64_t default_ms, bool& orphaned) {
  for (;;) {
    pollfd fds[2] = {{kept.socket_fd, POLLIN, 0}, {kept.signal_fd, POLLIN, 0}};
    if (poll(fds, 2, kept.signal_fd < 0 ? 50 : -1) < 0) continue;
    await_child(kept, 0);
    reap(kept);
    if (!fds[0].revents) continue;
    KeeperMessage word;
    ssize_t n = recv(kept.socket_fd, &word, sizeof word, 0);
    if (n == sizeof word && word.kind == KeeperMessage::kStop) return word.value;
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
      orphaned = true;
      return default_ms;
    }
  }
}

// The files of `folder`, then the folder: what perfgate's own cleanup would
// have removed had it not been killed. Links are removed, not followed.
void remove_flat_folder(const char* folder) {
  int dir = open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return;
  for_each_entry(dir, [dir](const dirent64& entry) {
    if (entry.d_type != DT_DIR) unlinkat(dir, entry.d_name, 0);
  });
  close(dir);
  rmdir(folder);
}

// The PIDs that were sent SIGTERM one by one, so that none has it twice: a
// second SIGTERM is "stop now" to many servers.
struct Warned {
  pid_t pids[256];
  int count = 0;
  bool once(pid_t pid) {
    for (int i = 0; i < count; ++i)
      if (pids[i] == pid) return false;
    if (count == 256) return false;
    pids[count++] = pid;
    return true;
  }
};

// SIGTERM to the service's group, and to each child of the keeper outside it
// (what left the group and lost its parent) as it comes; true when all ended
// within `grace_ms`.
bool end_gently(const Kept& kept, int64_t grace_ms) {
  kill(-kept.service, SIGTERM);
  Warned warned;
  auto deadline = now_ms() + grace_ms;
  for (;;) {
    for_each_child([&](pid_t pid, pid_t pgid) {
      if (pgid != kept.service && warned.once(pid)) kill(pid, SIGTERM);
    });
    if (!reap(kept)) return true;
    auto left = deadline - now_ms();
    if (left <= 0) return false;
    await_child(kept, static_cast<int>(left < kScanEveryMs ? left : kScanEveryMs));
  }
}

// SIGKILL to the group and to every child, again and again: the orphans of
// the killed come to the keeper, until it has none left.
void kill_all(const Kept& kept) {
  auto give_up = now_ms() + kKillRoundsMs;
  do {
    kill(-kept.service, SIGKILL);
    for_each_child([](pid_t pid, pid_t) { kill(pid, SIGKILL); });
    if (!reap(kept)) return;
    await_child(kept, 10);
  } while (now_ms() < give_up);
}

// After the fork of the service: the keeper holds none of perfgate's files
// (its output pipes, the other services' sockets) but its own socket, shrugs
// off the signals meant for perfgate's group, and hears SIGCHLD on a
// signalfd. Returns the socket, now fd 3.
int settle(int socket_fd) {
  if (socket_fd != 3) {
    dup2(socket_fd, 3);
    socket_fd = 3;
  }
  if (close_range(4, ~0U, 0) != 0) {
    rlimit files{};
    getrlimit(RLIMIT_NOFILE, &files);
    for (rlim_t fd = 4; fd < files.rlim_cur && fd < (1u << 20); ++fd) close(static_cast<int>(fd));
  }
  int null_fd = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) dup2(null_fd, fd);
  if (null_fd > 3) close(null_fd);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaction(sig, &ignore, nullptr);
  return socket_fd;
}

int child_signals() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

}  // namespace

[[noreturn]] void keep_service(int socket_fd, Nanos default_grace,
                               const std::function<void()>& start, const char* scratch) {
  setpgid(0, 0);  // out of perfgate's group: a kill of that group spares it
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_NAME, "perfgate-keeper");
  pid_t service = fork();
  if (service == 0) start();
  if (service < 0) {
    tell(socket_fd, KeeperMessage::kForkFailed, errno);
    _exit(127);
  }
  setpgid(service, service);  // also from here: a stop may come before the child runs
  tell(socket_fd, KeeperMessage::kStarted, service);
  // Dispositions and the mask change only now: the service inherits neither.
  Kept kept{settle(socket_fd), child_signals(), service};
  reap(kept);  // an end before the signalfd existed sent no signal to it
  auto default_ms = std::chrono::duration_cast<std::chrono::milliseconds>(default_grace).count();
  bool orphaned = false;
  if (!end_gently(kept, wait_for_stop(kept, default_ms, orphaned))) kill_all(kept);
  if (orphaned && scratch && *scratch) remove_flat_folder(scratch);
  tell(kept.socket_fd, KeeperMessage::kDone, 0);
  _exit(0);
}

}  // namespace perfgate
