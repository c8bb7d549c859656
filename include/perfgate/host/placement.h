#pragma once

#include <sched.h>
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "perfgate/core/cpu_list.h"
#include "perfgate/host/host_fingerprint.h"
#include "perfgate/host/proc_reader.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

/// Where a run's load threads and service run. On a small runner the
/// scheduler's choice of cores for each new service process, relative to the
/// load thread, sets the throughput level of a whole run; fixed, separate
/// cores take that accident out of the series.
struct Placement {
  CpuList load;              // empty: the load threads are not pinned
  CpuList service;           // empty: the service is not pinned
  bool pin_watched = false;  // also pin a service perfgate did not start (explicit placement)
  std::string how;           // why this placement, for the log: "auto: 2 CPUs allowed (0-1)"

  bool pinned() const { return !load.empty() || !service.empty(); }
  /// "load 1, service 0", "load 1", or "off": the fingerprint's value.
  std::string describe() const;
};

/// The placement `spec` asks for, for `load_threads` threads, on the CPUs this
/// process may use. "auto" pins only where perfgate starts the service (every
/// side's, in paired mode), and only with at least 2 CPUs allowed: the load
/// takes the highest min(load_threads, n / 2) of them, the service the rest.
/// "fixed" lists must name allowed CPUs; else an Error names the key.
Placement choose_placement(const PlacementSpec& spec, int load_threads, const CpuList& allowed,
                           bool services_started);

/// The CPUs this process may run on: its affinity mask, which the kernel
/// already narrows to its cgroup's cpuset (and taskset's choice).
CpuList allowed_cpus();

/// choose_placement for `profile` on this host.
Placement resolve_placement(const Profile& profile);

/// Adds the "placement" field (part of the fingerprint's key) when pinned:
/// runs with another placement are another series.
void record_placement(HostFingerprint& host, const Placement& placement);

/// The CPUs a thread (or process: its main thread) may run on; empty when gone.
CpuList task_cpus(pid_t tid);
/// Sets a thread's CPUs; false when it is gone or the kernel refuses.
bool set_task_cpus(pid_t tid, const CpuList& cpus);
cpu_set_t to_cpu_set(const CpuList& cpus);

/// The calling thread's CPUs for a scope, restored at its end. Threads it starts
/// meanwhile inherit them: that is how the load engines' threads are pinned.
/// An empty list changes nothing.
class ThreadCpusScope {
 public:
  explicit ThreadCpusScope(const CpuList& cpus);
  ~ThreadCpusScope();
  ThreadCpusScope(const ThreadCpusScope&) = delete;
  ThreadCpusScope& operator=(const ThreadCpusScope&) = delete;

 private:
  bool set_ = false;
  cpu_set_t previous_{};
};

/// Every thread of some process trees pinned for a scope, each thread's own
/// CPUs restored at its end: a service perfgate did not start outlives the run
/// and must find itself as it was. Threads born meanwhile inherit the pin and
/// keep it (a process's new threads take its creator's CPUs).
class PinnedTrees {
 public:
  PinnedTrees(const ProcReader& proc, const std::vector<pid_t>& roots, const CpuList& cpus);
  ~PinnedTrees();
  PinnedTrees(const PinnedTrees&) = delete;
  PinnedTrees& operator=(const PinnedTrees&) = delete;
  /// How many threads were pinned.
  size_t threads() const { return saved_.size(); }

 private:
  std::vector<std::pair<pid_t, CpuList>> saved_;
};

}  // namespace perfgate
