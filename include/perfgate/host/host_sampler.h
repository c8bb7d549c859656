#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "perfgate/core/units.h"
#include "perfgate/host/proc_reader.h"
#include "perfgate/host/service_discovery.h"

namespace perfgate {

using SteadyClock = std::chrono::steady_clock;

/// The raw /proc counters at one moment; two of them make a HostSample.
struct HostSnapshot {
  SteadyClock::time_point at;
  std::optional<CpuStat> cpu;
  std::optional<MemInfo> memory;
  std::vector<NetDevice> net;
  std::optional<uint64_t> tcp_retrans;
  std::optional<LoadAvg> load;
  std::optional<Pressure> cpu_pressure, memory_pressure, io_pressure;
  std::vector<ProcStat> own_threads;  // perfgate's threads, the sampler's own included
  uint64_t own_rss_kib = 0;
  std::optional<double> service_cpu_total_s;  // the service's CPU so far, when it is known
  /// The service's threads' CPU so far in ns (schedstat), by thread id; empty
  /// for a cgroup watch (its usage_usec is already fine) or without schedstat.
  std::vector<std::pair<pid_t, uint64_t>> service_run_ns;
  uint64_t service_rss_kib = 0;
  /// The service's threads (a process tree's; none for a cgroup watch): which
  /// CPU each last ran on, beside the load threads' in own_threads.
  std::vector<ProcStat> service_threads;
  std::optional<double> companion_cpu_total_s;  // the companion's CPU so far, when watched
  /// How long the run's own tasks (perfgate's threads, the service's, the
  /// companion's) have waited for a CPU, summed over tasks, in ns; absent when
  /// the kernel does not say for any of them.
  std::optional<uint64_t> run_wait_ns;
};

/// What the sampler counts as the service: process trees (a root and its
/// descendants each), or a whole cgroup v2 when `cgroup` is set.
struct ServiceWatch {
  std::vector<pid_t> roots;
  std::string cgroup;
  static ServiceWatch of(const AttributedService& service) {
    return {service.roots, service.cgroup};
  }
};

/// Reads one snapshot. `service` is the root PID of the service's process tree.
HostSnapshot take_snapshot(const ProcReader& proc, std::optional<pid_t> service,
                           SteadyClock::time_point now);
/// The same, with the service as a watch (trees or a cgroup); nullptr = unknown.
HostSnapshot take_snapshot(const ProcReader& proc, const ServiceWatch* service,
                           const CgroupReader& cgroups, SteadyClock::time_point now);
/// The same, also reading `companion`: processes that are part of the measurement
/// but not this service (the other side of a paired run measured at the same
/// moments), so that their CPU is neither the service's nor foreign.
HostSnapshot take_snapshot(const ProcReader& proc, const ServiceWatch* service,
                           const ServiceWatch* companion, const CgroupReader& cgroups,
                           SteadyClock::time_point now);

/// One thread's CPU over an interval, in percent of one core.
struct ThreadLoad {
  pid_t tid = 0;
  std::string comm;
  double cpu_pct = 0;
};

/// What the host did between two snapshots. CPU figures are percentages of all
/// cores unless named per core or per thread.
struct HostSample {
  SteadyClock::time_point start, end;
  double cpu_busy_pct = 0, user_pct = 0, system_pct = 0, iowait_pct = 0, irq_pct = 0, steal_pct = 0;
  double max_core_busy_pct = 0;  // the busiest core, % of that core
  double memory_available_pct = 0;
  uint64_t swap_used_kib = 0;
  uint64_t net_rx_bytes = 0, net_tx_bytes = 0, net_rx_packets = 0, net_tx_packets = 0;
  uint64_t net_drops = 0, net_errors = 0, tcp_retrans = 0;  // all interfaces, lo included
  double load1 = 0;
  /// CPU: the share of the interval in which some task waited for a CPU (PSI
  /// "some" total); memory and io: PSI "some" avg10.
  std::optional<double> cpu_pressure_pct, memory_pressure_pct, io_pressure_pct;
  std::optional<double> cpu_stall_s;     // the same CPU stall, in seconds
  std::optional<double> run_wait_s;      // the run's own tasks' waits, summed, in seconds
  double own_cpu_pct = 0;                // perfgate, all its threads
  std::vector<ThreadLoad> load_threads;  // perfgate's busiest threads, the sampler left out
  uint64_t own_rss_kib = 0;
  std::optional<double> service_cpu_s;  // CPU-seconds the service tree used in the interval
  std::optional<double> service_cpu_pct;
  uint64_t service_rss_kib = 0;
  std::optional<double> companion_cpu_pct;  // the companion watch's, % of all cores
  /// At the sample's end, a busy load thread and a busy service thread had last
  /// run on the same CPU (busy: used CPU in the interval). Unknown without both.
  /// On few cores the scheduler keeps a run's load and service apart or mixed
  /// for the whole run, and the two cost the service differently per request.
  std::optional<bool> shared_cpu;
  /// Host busy minus steal, perfgate, the service and its companion, >= 0: what
  /// other processes of this machine used. Steal is the hypervisor's, which
  /// /proc/stat counts busy but no process's ticks hold; it has its own rule.
  double foreign_cpu_pct = 0;

  double seconds() const { return std::chrono::duration<double>(end - start).count(); }
};

/// The sample between two snapshots. `sampler_tid` is left out of load_threads:
/// the sampler's own cost is perfgate's, but it never sets the pace of the load.
HostSample diff_snapshots(const HostSnapshot& before, const HostSnapshot& after, double ticks_per_s,
                          pid_t sampler_tid = 0);

/// A measurement window on the steady clock, [start, end).
struct TimeWindow {
  SteadyClock::time_point start, end;
};

/// The host over one iteration's window (samples whose midpoint lies in it).
struct WindowSummary {
  int iteration = 0;
  int samples = 0;
  double host_cpu_mean_pct = 0, host_cpu_max_pct = 0;
  double steal_mean_pct = 0, steal_max_pct = 0;
  /// The busiest perfgate thread over the whole window, % of a core: the engine's
  /// threads are unnamed, so this is the busiest TID, not a named load thread.
  double generator_thread_pct = 0;
  double generator_thread_max_pct = 0;  // the busiest thread in any one sample
  double foreign_cpu_mean_pct = 0, foreign_cpu_max_pct = 0;
  std::optional<double> service_cpu_s;
  double memory_available_min_pct = 100;
  /// PSI "some" over the window: the share of it in which any task waited for a CPU.
  std::optional<double> cpu_pressure_pct;
  /// The run's own tasks' waits for a CPU, summed, as a share of the window: a
  /// CPU-bound service and its load on too few cores wait for each other.
  std::optional<double> run_cpu_wait_pct;
  /// The pressure the run's own waits do not account for: other tasks kept from
  /// a CPU, what the `cpu_pressure` rule judges. The pressure itself where the
  /// kernel keeps no per-task schedstat. A lower bound: PSI counts a moment once
  /// however many tasks wait, the run's waits are summed.
  std::optional<double> foreign_cpu_pressure_pct;
  uint64_t net_drops = 0, net_errors = 0, tcp_retrans = 0;
  uint64_t own_rss_max_kib = 0, service_rss_max_kib = 0;
  /// The share of the window's samples in which load and service shared a CPU
  /// (HostSample::shared_cpu), of those that could tell.
  std::optional<double> shared_cpu_pct;
};

WindowSummary summarize_window(const std::vector<HostSample>& samples, const TimeWindow& window,
                               int iteration);

/// Below this share of samples with load and service on one CPU, a run's
/// placement is "apart", else "mixed". On this project's 2-core VM, A/A runs of
/// a co-located CPU-bound service fell in two groups: 2-20 % (9-17 % more
/// service CPU per request) and 28-61 % (issue 27).
inline constexpr double kApartBelowSharedPct = 25;

/// Fewer samples that could tell do not place a run (its class is unknown, and
/// it is comparable with either): at 20 the share's binomial noise is still
/// about 10 points, and classes this machine showed lie 8 or more from the cut.
/// A short test run of a few hundred milliseconds is not evidence of placement.
inline constexpr int kMinPlacementSamples = 20;

/// The share that places a run: `pct` when `samples` reach kMinPlacementSamples.
inline std::optional<double> placing_share(std::optional<double> pct, int samples) {
  return samples >= kMinPlacementSamples ? pct : std::nullopt;
}

/// "apart" or "mixed" (kApartBelowSharedPct).
inline const char* placement_class(double shared_cpu_pct) {
  return shared_cpu_pct < kApartBelowSharedPct ? "apart" : "mixed";
}

/// What the store keeps of a run's host (JSON): the per-iteration summaries and at
/// most `max_samples` raw samples, thinned evenly; times are seconds from `origin`.
/// The attributed service, when there is one, is kept under "service".
std::string host_samples_json(const std::vector<WindowSummary>& windows,
                              const std::vector<HostSample>& samples,
                              SteadyClock::time_point origin, size_t max_samples = 2000,
                              const AttributedService* service = nullptr);
/// The service a host_samples_json() document names, if any.
std::optional<AttributedService> attributed_service_of(const std::string& json);

/// Per iteration index, the service CPU-seconds a host_samples_json() document
/// holds (nullopt where it has none): a stored baseline's service cost.
std::vector<std::optional<double>> service_cpu_by_iteration(const std::string& json,
                                                            size_t iterations);

/// Per iteration index, the stored window's shared_cpu_pct and its sample
/// count (nullopt where the document has none): a stored run's placement.
struct WindowShare {
  double shared_cpu_pct = 0;
  int samples = 0;
};
std::vector<std::optional<WindowShare>> shared_cpu_by_iteration(const std::string& json,
                                                                size_t iterations);

/// Samples the host on its own thread every `interval` from start() to stop().
/// Keeps at most `max_samples` (the oldest stay: a run's shape shows in its start).
class HostSampler {
 public:
  HostSampler(ProcReader proc, Nanos interval, std::optional<ServiceWatch> service,
              size_t max_samples = 20000);
  /// Also watches `companion` (see take_snapshot): its CPU is not foreign.
  HostSampler(ProcReader proc, Nanos interval, std::optional<ServiceWatch> service,
              std::optional<ServiceWatch> companion);
  ~HostSampler() { stop(); }
  HostSampler(const HostSampler&) = delete;
  HostSampler& operator=(const HostSampler&) = delete;

  void start();
  /// Joins the thread after one last sample; safe to call twice.
  void stop();
  std::vector<HostSample> samples() const;
  /// From now on, samples end at the run's window edges (t0, t0 + warmup, then
  /// every `duration`), each window cut into pieces of about the interval, so
  /// that a window's service CPU is read at its own edges and not at the
  /// nearest regular sample's (a quarter of a second off at each edge). After
  /// the last window, regular samples again.
  void align(SteadyClock::time_point t0, Nanos warmup, Nanos duration, int iterations);

 private:
  void loop(std::stop_token stop);
  /// The next moment to sample after `after`: the next aligned edge or piece
  /// boundary when there is one, else `regular`.
  SteadyClock::time_point next_sample(SteadyClock::time_point after,
                                      SteadyClock::time_point regular);
  void add(const HostSnapshot& before, const HostSnapshot& after, pid_t tid);

  ProcReader proc_;
  Nanos interval_;
  std::optional<ServiceWatch> service_;
  std::optional<ServiceWatch> companion_;
  CgroupReader cgroups_;
  size_t max_samples_;
  double ticks_per_s_;
  mutable std::mutex mutex_;
  std::vector<HostSample> samples_;
  std::vector<SteadyClock::time_point> schedule_;  // aligned sample ends, in order
  std::condition_variable_any rescheduled_;
  std::jthread thread_;
};

}  // namespace perfgate
