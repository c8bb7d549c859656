#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/cpu_list.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

struct KeeperMessage;

/// How perfgate starts a service, beyond its spec: what the cost phase needs.
struct LaunchOptions {
  /// Address space not randomised (personality ADDR_NO_RANDOMIZE): addresses
  /// that differ per launch move hash buckets and allocator paths, hence counts.
  bool fixed_addresses = false;
  /// Runs in perfgate while the child waits just before its exec: a counter
  /// opened on the child's PID here counts everything the service runs, every
  /// thread and process it starts included. A throw ends the child.
  std::function<void(pid_t)> before_exec;
  /// A folder of the service's files (the cost phase's dumps) that the keeper
  /// removes if perfgate is killed before it could (see service_keeper.h).
  std::string scratch_dir;
  /// Told, in a sentence, what perfgate had to do itself when the keeper
  /// stopped answering (stopped or killed from outside): e.g. spdlog's warn.
  std::function<void(const std::string&)> warn;
};

/// The service under test, started in its own process group by a keeper
/// process that perfgate forks and that stays the service's parent. The keeper
/// is a child subreaper: whatever the service starts, even what leaves its
/// group and session and wipes its environment (`setsid env -i ...`), stays the
/// keeper's descendant. stop(), or perfgate's death (even by SIGKILL), has the
/// keeper send SIGTERM to the group and to what left it, wait the grace
/// period, then SIGKILL every process left (see service_keeper.h). Its
/// standard output goes to perfgate's standard error: perfgate's own output
/// stays the report, and a pipe reading it is not held open by the service.
class ServiceProcess {
 public:
  /// Starts `spec.command`, on `cpus` when not empty (it and every process it
  /// starts inherit them), as `launch` says; throws Error when it cannot be started.
  explicit ServiceProcess(const ServiceSpec& spec, const CpuList& cpus = {},
                          const LaunchOptions& launch = {});
  ~ServiceProcess();
  ServiceProcess(const ServiceProcess&) = delete;
  ServiceProcess& operator=(const ServiceProcess&) = delete;

  /// Polls `spec.ready_url` until it answers 2xx or 3xx (checking an https
  /// certificate only when `tls_verify`, as the load does); throws Error when the
  /// service exits first, is not ready within `spec.ready_timeout`, or `stop` is set.
  /// Once it answers, a service started on CPUs is held to them: any of its
  /// threads that its command moved elsewhere (a `taskset` in the command, a
  /// server that sets its own affinity) is pinned back, so that the placement
  /// recorded with the run is the one it ran on.
  void wait_ready(const std::atomic<bool>& stop, bool tls_verify = true);
  /// True while the process has not exited (nor its keeper been killed).
  bool running();
  /// How it ended, e.g. "exited with status 1"; meaningful once running() is false.
  std::string exit_description() const;
  static constexpr Nanos kStopGrace = std::chrono::seconds(5);
  void stop(Nanos grace = kStopGrace);
  /// The service's own PID (the keeper's child), e.g. for the host sampler.
  pid_t pid() const { return pid_; }
  /// Every process of the service still running (zombies left out): the
  /// keeper's tree but the keeper, so what left the service's tree too.
  std::vector<pid_t> processes() const;
  const std::string& command() const { return spec_.command.front(); }

 private:
  using Clock = std::chrono::steady_clock;
  void start_keeper(const std::function<void()>& start, const char* scratch);
  void check_exec(int error_fd);
  void release_child(const std::function<void(pid_t)>& before_exec, int go[2]);
  std::optional<KeeperMessage> next_word(Clock::time_point deadline);
  bool hear_keeper(Clock::time_point deadline);
  bool keeper_stopped() const;
  void end_keeper(Nanos grace);
  void end_without_keeper(Nanos grace, const std::string& what_happened);
  void hold_to_cpus() const;
  /// "; it listens on 127.0.0.1:8000 instead ..." when the service holds a
  /// listener, for the not-ready message; "" otherwise.
  std::string elsewhere_hint() const;

  ServiceSpec spec_;
  CpuList cpus_;
  pid_t pid_ = -1;
  pid_t keeper_ = -1;         // perfgate's child, the service's parent
  int keeper_fd_ = -1;        // perfgate's end of the keeper's socket
  bool exited_ = false;       // the keeper said how the service ended, or is gone
  bool keeper_lost_ = false;  // ... gone without saying it
  bool keeper_done_ = false;  // nothing more will come from the keeper
  bool stopped_ = false;
  int exit_status_ = 0;
  std::string survivors_;  // what outlived perfgate's own end of a lost keeper's service
  std::function<void(const std::string&)> warn_;
};

}  // namespace perfgate
