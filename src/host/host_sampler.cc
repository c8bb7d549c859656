#include "perfgate/host/host_sampler.h"
#include "perfgate/profile/json_text.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

namespace perfgate {
namespace {

// Counters only grow, but a process leaving the service's tree takes its ticks
// with it: a drop reads as zero, not as a huge unsigned wrap.
uint64_t delta(uint64_t before, uint64_t after) {
  return after > before ? after - before : 0;
}

double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

void fill_cpu(const CpuStat& a, const CpuStat& b, HostSample& s) {
  uint64_t total = delta(a.all.total(), b.all.total());
  s.cpu_busy_pct = pct(delta(a.all.busy(), b.all.busy()), total);
  s.user_pct = pct(delta(a.all.user + a.all.nice, b.all.user + b.all.nice), total);
  s.system_pct = pct(delta(a.all.system, b.all.system), total);
  s.iowait_pct = pct(delta(a.all.iowait, b.all.iowait), total);
  s.irq_pct = pct(delta(a.all.irq + a.all.softirq, b.all.irq + b.all.softirq), total);
  s.steal_pct = pct(delta(a.all.steal, b.all.steal), total);
  for (size_t i = 0; i < a.cores.size() && i < b.cores.size(); ++i) {
    double core = pct(delta(a.cores[i].busy(), b.cores[i].busy()),
                      delta(a.cores[i].total(), b.cores[i].total()));
    s.max_core_busy_pct = std::max(s.max_core_busy_pct, core);
  }
}

void fill_net(const HostSnapshot& a, const HostSnapshot& b, HostSample& s) {
  for (const auto& after : b.net) {
    auto before = std::find_if(a.net.begin(), a.net.end(),
                               [&](const NetDevice& d) { return d.name == after.name; });
    if (before == a.net.end()) continue;  // an interface that came up mid-interval
    s.net_rx_bytes += delta(before->rx_bytes, after.rx_bytes);
    s.net_tx_bytes += delta(before->tx_bytes, after.tx_bytes);
    s.net_rx_packets += delta(before->rx_packets, after.rx_packets);
    s.net_tx_packets += delta(before->tx_packets, after.tx_packets);
    s.net_drops += delta(before->rx_drop + before->tx_drop, after.rx_drop + after.tx_drop);
    s.net_errors += delta(before->rx_errs + before->tx_errs, after.rx_errs + after.tx_errs);
  }
  if (a.tcp_retrans && b.tcp_retrans) s.tcp_retrans = delta(*a.tcp_retrans, *b.tcp_retrans);
}

// Threads born mid-interval count from zero; the busiest come first.
void fill_threads(const HostSnapshot& a, const HostSnapshot& b, double ticks_per_s,
                  double capacity_s, pid_t sampler_tid, HostSample& s) {
  double seconds = s.seconds();
  double own_s = 0;
  for (const auto& t : b.own_threads) {
    auto before = std::find_if(a.own_threads.begin(), a.own_threads.end(),
                               [&](const ProcStat& p) { return p.pid == t.pid; });
    uint64_t start = before == a.own_threads.end() ? 0 : before->cpu_ticks();
    double cpu_s = static_cast<double>(delta(start, t.cpu_ticks())) / ticks_per_s;
    own_s += cpu_s;
    if (t.pid != sampler_tid && seconds > 0)
      s.load_threads.push_back({t.pid, t.comm, 100.0 * cpu_s / seconds});
  }
  std::sort(s.load_threads.begin(), s.load_threads.end(),
            [](const auto& x, const auto& y) { return x.cpu_pct > y.cpu_pct; });
  if (s.load_threads.size() > 8) s.load_threads.resize(8);
  s.own_cpu_pct = capacity_s > 0 ? 100.0 * own_s / capacity_s : 0.0;
}

// The CPUs that the threads of `after` which used CPU since `before` last ran on.
std::vector<int> busy_cpus(const std::vector<ProcStat>& before, const std::vector<ProcStat>& after,
                           pid_t leave_out) {
  std::vector<int> cpus;
  for (const auto& t : after) {
    if (t.pid == leave_out || t.processor < 0) continue;
    auto was = std::find_if(before.begin(), before.end(),
                            [&](const ProcStat& p) { return p.pid == t.pid; });
    if (was != before.end() && t.cpu_ticks() > was->cpu_ticks()) cpus.push_back(t.processor);
  }
  return cpus;
}

std::optional<bool> shared_cpu(const HostSnapshot& a, const HostSnapshot& b, pid_t sampler_tid) {
  auto load = busy_cpus(a.own_threads, b.own_threads, sampler_tid);
  auto service = busy_cpus(a.service_threads, b.service_threads, 0);
  if (load.empty() || service.empty()) return std::nullopt;
  for (int cpu : load)
    if (std::find(service.begin(), service.end(), cpu) != service.end()) return true;
  return false;
}

}  // namespace

HostSnapshot take_snapshot(const ProcReader& proc, std::optional<pid_t> service,
                           SteadyClock::time_point now) {
  if (!service) return take_snapshot(proc, nullptr, CgroupReader(""), now);
  ServiceWatch watch{{*service}, ""};
  return take_snapshot(proc, &watch, CgroupReader(""), now);
}

namespace {

struct WatchedCpu {
  std::optional<double> cpu_total_s;
  std::vector<std::pair<pid_t, uint64_t>> run_ns;
  uint64_t rss_kib = 0;
  std::optional<uint64_t> wait_ns;
  std::vector<ProcStat> threads;
};

std::optional<uint64_t> plus(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a || !b) return std::nullopt;
  return *a + *b;
}

// A cgroup counts every task that ever ran in it, exited workers included;
// when it is gone the watch is no longer measured, not measured as idle.
WatchedCpu read_watch(const ProcReader& proc, const ServiceWatch& watch,
                      const CgroupReader& cgroups) {
  WatchedCpu out;
  if (!watch.cgroup.empty()) {
    if (auto usec = cgroups.usage_usec(watch.cgroup)) {
      out.cpu_total_s = static_cast<double>(*usec) / 1e6;
      out.rss_kib = cgroups.memory_bytes(watch.cgroup).value_or(0) / 1024;
      if (auto us = cgroups.cpu_wait_usec(watch.cgroup)) out.wait_ns = *us * 1000;
    }
    return out;
  }
  uint64_t ticks = 0;
  std::vector<pid_t> seen;
  out.wait_ns = 0;
  bool every_thread_in_ns = true;  // else a process's ns would be missing from the sum
  for (pid_t root : watch.roots)
    for (pid_t pid : proc.process_tree(root, getpid())) {  // perfgate's CPU is not the service's
      if (std::find(seen.begin(), seen.end(), pid) != seen.end()) continue;
      seen.push_back(pid);
      if (auto p = proc.process(pid)) ticks += p->cpu_ticks();
      auto threads = proc.threads(std::to_string(pid));
      out.rss_kib += proc.rss_kib(std::to_string(pid)).value_or(0);
      // A process gone since process_tree() waits no more: it adds nothing.
      auto stats = proc.task_schedstats(std::to_string(pid));
      every_thread_in_ns = every_thread_in_ns && !stats.empty() && stats.size() == threads.size();
      for (const auto& [tid, stat] : stats) {
        *out.wait_ns += stat.wait_ns;
        out.run_ns.emplace_back(tid, stat.run_ns);
      }
      std::move(threads.begin(), threads.end(), std::back_inserter(out.threads));
    }
  out.cpu_total_s = static_cast<double>(ticks) / ticks_per_second();
  if (!every_thread_in_ns) out.run_ns.clear();
  std::sort(out.run_ns.begin(), out.run_ns.end());
  return out;
}

}  // namespace

HostSnapshot take_snapshot(const ProcReader& proc, const ServiceWatch* service,
                           const CgroupReader& cgroups, SteadyClock::time_point now) {
  return take_snapshot(proc, service, nullptr, cgroups, now);
}

HostSnapshot take_snapshot(const ProcReader& proc, const ServiceWatch* service,
                           const ServiceWatch* companion, const CgroupReader& cgroups,
                           SteadyClock::time_point now) {
  HostSnapshot s;
  s.at = now;
  s.cpu = proc.cpu();
  s.memory = proc.memory();
  s.net = proc.net_devices();
  s.tcp_retrans = proc.tcp_retrans();
  s.load = proc.loadavg();
  s.cpu_pressure = proc.pressure("cpu");
  s.memory_pressure = proc.pressure("memory");
  s.io_pressure = proc.pressure("io");
  s.own_threads = proc.threads("self");
  s.own_rss_kib = proc.rss_kib("self").value_or(0);
  s.run_wait_ns = proc.wait_ns("self");
  // Both sides' services in one cgroup (one container, one unit): counted once,
  // as this side's service, or a duet would take it from foreign CPU twice.
  if (companion && service && !service->cgroup.empty() && companion->cgroup == service->cgroup)
    companion = nullptr;
  if (companion) {
    auto watched = read_watch(proc, *companion, cgroups);
    s.companion_cpu_total_s = watched.cpu_total_s;
    s.run_wait_ns = plus(s.run_wait_ns, watched.wait_ns);
  }
  if (!service) return s;
  auto watched = read_watch(proc, *service, cgroups);
  s.service_threads = std::move(watched.threads);
  s.service_cpu_total_s = watched.cpu_total_s;
  s.service_run_ns = std::move(watched.run_ns);
  s.service_rss_kib = watched.rss_kib;
  s.run_wait_ns = plus(s.run_wait_ns, watched.wait_ns);
  return s;
}

// The service's CPU between two snapshots in ns when every thread seen at `a`
// is still there at `b` (threads born since count from zero, their whole
// life being inside); a thread that ended took its last ns with it, and the
// ticks, which keep an ended thread's time, answer instead.
namespace {

std::optional<double> precise_service_cpu_s(const HostSnapshot& a, const HostSnapshot& b) {
  if (a.service_run_ns.empty() || b.service_run_ns.empty()) return std::nullopt;
  uint64_t total = 0;
  auto later = b.service_run_ns.begin();
  for (const auto& [tid, ns] : a.service_run_ns) {
    later = std::lower_bound(later, b.service_run_ns.end(), std::pair<pid_t, uint64_t>(tid, 0));
    if (later == b.service_run_ns.end() || later->first != tid) return std::nullopt;
  }
  uint64_t before = 0;
  for (const auto& [tid, ns] : b.service_run_ns) total += ns;
  for (const auto& [tid, ns] : a.service_run_ns) before += ns;
  return static_cast<double>(delta(before, total)) / 1e9;
}

}  // namespace

HostSample diff_snapshots(const HostSnapshot& a, const HostSnapshot& b, double ticks_per_s,
                          pid_t sampler_tid) {
  HostSample s;
  s.start = a.at;
  s.end = b.at;
  // The host's own tick count is the CPU capacity of the interval: all cores,
  // measured by the same clock as the per-process ticks.
  double capacity_s = 0;
  if (a.cpu && b.cpu) {
    fill_cpu(*a.cpu, *b.cpu, s);
    capacity_s = static_cast<double>(delta(a.cpu->all.total(), b.cpu->all.total())) / ticks_per_s;
  }
  if (b.memory) {
    s.memory_available_pct = b.memory->available_pct();
    s.swap_used_kib = b.memory->swap_used_kib();
  }
  fill_net(a, b, s);
  if (b.load) s.load1 = b.load->one;
  // The stall over this very interval, not the kernel's 10 s average, which
  // would carry a burst into the windows after it.
  if (a.cpu_pressure && b.cpu_pressure && s.seconds() > 0) {
    s.cpu_stall_s =
        static_cast<double>(delta(a.cpu_pressure->some_total_us, b.cpu_pressure->some_total_us)) /
        1e6;
    s.cpu_pressure_pct = std::min(100.0, 100.0 * *s.cpu_stall_s / s.seconds());
  }
  if (a.run_wait_ns && b.run_wait_ns)
    s.run_wait_s = static_cast<double>(delta(*a.run_wait_ns, *b.run_wait_ns)) / 1e9;
  if (b.memory_pressure) s.memory_pressure_pct = b.memory_pressure->some_avg10;
  if (b.io_pressure) s.io_pressure_pct = b.io_pressure->some_avg10;
  fill_threads(a, b, ticks_per_s, capacity_s, sampler_tid, s);
  s.shared_cpu = shared_cpu(a, b, sampler_tid);
  s.own_rss_kib = b.own_rss_kib;
  if (a.service_cpu_total_s && b.service_cpu_total_s) {
    s.service_cpu_s = precise_service_cpu_s(a, b).value_or(
        std::max(0.0, *b.service_cpu_total_s - *a.service_cpu_total_s));
    s.service_cpu_pct = capacity_s > 0 ? 100.0 * *s.service_cpu_s / capacity_s : 0.0;
    s.service_rss_kib = b.service_rss_kib;
  }
  if (a.companion_cpu_total_s && b.companion_cpu_total_s && capacity_s > 0)
    s.companion_cpu_pct =
        100.0 * std::max(0.0, *b.companion_cpu_total_s - *a.companion_cpu_total_s) / capacity_s;
  s.foreign_cpu_pct =
      std::max(0.0, s.cpu_busy_pct - s.steal_pct - s.own_cpu_pct - s.service_cpu_pct.value_or(0.0) -
                        s.companion_cpu_pct.value_or(0.0));
  return s;
}

namespace {

bool in_window(const HostSample& s, const TimeWindow& w) {
  auto mid = s.start + (s.end - s.start) / 2;
  return mid >= w.start && mid < w.end;
}

bool overlaps(const HostSample& s, const TimeWindow& w) {
  return s.start < w.end && s.end > w.start;
}

// Stall and wait seconds over the window's samples; the run's waits count only
// beside a stall measured in the same samples.
struct CpuWaits {
  double seconds = 0, stall_s = 0, run_wait_s = 0;
  bool stall = false, run_wait = false;
};

void add_waits(const HostSample& s, CpuWaits& c) {
  if (!s.cpu_stall_s) return;
  c.seconds += s.seconds();
  c.stall_s += *s.cpu_stall_s;
  c.stall = true;
  if (!s.run_wait_s) return;
  c.run_wait_s += *s.run_wait_s;
  c.run_wait = true;
}

void fill_pressure(const CpuWaits& c, WindowSummary& w) {
  if (!c.stall || c.seconds <= 0) return;
  w.cpu_pressure_pct = std::min(100.0, 100.0 * c.stall_s / c.seconds);
  w.foreign_cpu_pressure_pct = w.cpu_pressure_pct;
  if (!c.run_wait) return;
  w.run_cpu_wait_pct = 100.0 * c.run_wait_s / c.seconds;
  w.foreign_cpu_pressure_pct =
      std::clamp(100.0 * (c.stall_s - c.run_wait_s) / c.seconds, 0.0, 100.0);
}

void add_sample(const HostSample& s, WindowSummary& w, std::map<pid_t, double>& thread_cpu_s) {
  ++w.samples;
  w.host_cpu_mean_pct += s.cpu_busy_pct;
  w.host_cpu_max_pct = std::max(w.host_cpu_max_pct, s.cpu_busy_pct);
  w.steal_mean_pct += s.steal_pct;
  w.steal_max_pct = std::max(w.steal_max_pct, s.steal_pct);
  w.foreign_cpu_mean_pct += s.foreign_cpu_pct;
  w.foreign_cpu_max_pct = std::max(w.foreign_cpu_max_pct, s.foreign_cpu_pct);
  for (const auto& t : s.load_threads) {
    thread_cpu_s[t.tid] += t.cpu_pct / 100.0 * s.seconds();
    w.generator_thread_max_pct = std::max(w.generator_thread_max_pct, t.cpu_pct);
  }
  if (s.service_cpu_s) w.service_cpu_s = w.service_cpu_s.value_or(0.0) + *s.service_cpu_s;
  w.memory_available_min_pct = std::min(w.memory_available_min_pct, s.memory_available_pct);
  w.net_drops += s.net_drops;
  w.net_errors += s.net_errors;
  w.tcp_retrans += s.tcp_retrans;
  w.own_rss_max_kib = std::max(w.own_rss_max_kib, s.own_rss_kib);
  w.service_rss_max_kib = std::max(w.service_rss_max_kib, s.service_rss_kib);
}

}  // namespace

// Samples straddle window edges; each counts once, in the window holding its
// midpoint, so service CPU-seconds are off by at most half a sample per edge.
// A window shorter than half a sample may hold no midpoint at all; it then takes
// the host's state from the samples overlapping it, so that a window that
// stalled on a saturated machine is seen as saturated. Those samples are
// already counted in a neighbour, so their sums (service CPU, drops) are not.
WindowSummary summarize_window(const std::vector<HostSample>& samples, const TimeWindow& window,
                               int iteration) {
  WindowSummary w;
  w.iteration = iteration;
  std::map<pid_t, double> thread_cpu_s;
  double seconds = 0;
  CpuWaits waits;
  bool own_midpoint = std::any_of(samples.begin(), samples.end(),
                                  [&](const HostSample& s) { return in_window(s, window); });
  int told = 0, shared = 0;
  for (const auto& s : samples) {
    if (own_midpoint ? !in_window(s, window) : !overlaps(s, window)) continue;
    add_sample(s, w, thread_cpu_s);
    add_waits(s, waits);
    seconds += s.seconds();
    if (s.shared_cpu) {
      ++told;
      shared += *s.shared_cpu ? 1 : 0;
    }
  }
  if (w.samples == 0) return w;
  if (told) w.shared_cpu_pct = 100.0 * shared / told;
  if (!own_midpoint) {
    w.service_cpu_s.reset();
    w.net_drops = w.net_errors = w.tcp_retrans = 0;
  }
  fill_pressure(waits, w);
  w.host_cpu_mean_pct /= w.samples;
  w.steal_mean_pct /= w.samples;
  w.foreign_cpu_mean_pct /= w.samples;
  for (const auto& [tid, cpu_s] : thread_cpu_s)
    w.generator_thread_pct = std::max(w.generator_thread_pct, 100.0 * cpu_s / seconds);
  return w;
}

namespace {

using nlohmann::json;

double since(SteadyClock::time_point t, SteadyClock::time_point origin) {
  return std::chrono::duration<double>(t - origin).count();
}

json optional_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

json window_json(const WindowSummary& w) {
  return {{"iteration", w.iteration},
          {"samples", w.samples},
          {"host_cpu_mean_pct", w.host_cpu_mean_pct},
          {"host_cpu_max_pct", w.host_cpu_max_pct},
          {"steal_mean_pct", w.steal_mean_pct},
          {"steal_max_pct", w.steal_max_pct},
          {"generator_thread_pct", w.generator_thread_pct},
          {"generator_thread_max_pct", w.generator_thread_max_pct},
          {"foreign_cpu_mean_pct", w.foreign_cpu_mean_pct},
          {"foreign_cpu_max_pct", w.foreign_cpu_max_pct},
          {"service_cpu_s", optional_json(w.service_cpu_s)},
          {"memory_available_min_pct", w.memory_available_min_pct},
          {"cpu_pressure_pct", optional_json(w.cpu_pressure_pct)},
          {"run_cpu_wait_pct", optional_json(w.run_cpu_wait_pct)},
          {"foreign_cpu_pressure_pct", optional_json(w.foreign_cpu_pressure_pct)},
          {"net_drops", w.net_drops},
          {"net_errors", w.net_errors},
          {"tcp_retrans", w.tcp_retrans},
          {"own_rss_max_kib", w.own_rss_max_kib},
          {"service_rss_max_kib", w.service_rss_max_kib},
          {"shared_cpu_pct", optional_json(w.shared_cpu_pct)}};
}

json sample_json(const HostSample& s, SteadyClock::time_point origin) {
  double top = s.load_threads.empty() ? 0.0 : s.load_threads.front().cpu_pct;
  return {
      {"t_s", since(s.end, origin)},
      {"cpu_busy_pct", s.cpu_busy_pct},
      {"user_pct", s.user_pct},
      {"system_pct", s.system_pct},
      {"iowait_pct", s.iowait_pct},
      {"irq_pct", s.irq_pct},
      {"steal_pct", s.steal_pct},
      {"max_core_busy_pct", s.max_core_busy_pct},
      {"memory_available_pct", s.memory_available_pct},
      {"swap_used_kib", s.swap_used_kib},
      {"net_rx_bytes", s.net_rx_bytes},
      {"net_tx_bytes", s.net_tx_bytes},
      {"net_drops", s.net_drops},
      {"net_errors", s.net_errors},
      {"tcp_retrans", s.tcp_retrans},
      {"load1", s.load1},
      {"cpu_pressure_pct", optional_json(s.cpu_pressure_pct)},
      {"run_cpu_wait_pct",
       s.run_wait_s && s.seconds() > 0 ? json(100.0 * *s.run_wait_s / s.seconds()) : json(nullptr)},
      {"own_cpu_pct", s.own_cpu_pct},
      {"generator_thread_max_pct", top},
      {"own_rss_kib", s.own_rss_kib},
      {"service_cpu_pct", optional_json(s.service_cpu_pct)},
      {"service_rss_kib", s.service_rss_kib},
      {"foreign_cpu_pct", s.foreign_cpu_pct}};
}

}  // namespace

std::string host_samples_json(const std::vector<WindowSummary>& windows,
                              const std::vector<HostSample>& samples,
                              SteadyClock::time_point origin, size_t max_samples,
                              const AttributedService* service) {
  json doc = {{"version", 1}, {"windows", json::array()}, {"samples", json::array()}};
  for (const auto& w : windows) doc["windows"].push_back(window_json(w));
  // Every step-th sample, so a long run keeps its whole shape within the bound.
  size_t step = max_samples ? (samples.size() + max_samples - 1) / max_samples : 0;
  for (size_t i = 0; step && i < samples.size(); i += step)
    doc["samples"].push_back(sample_json(samples[i], origin));
  doc["samples_total"] = samples.size();
  if (service)
    doc["service"] = {{"name", service->name},     {"pid", service->pid},
                      {"roots", service->roots},   {"listener", service->listener},
                      {"cgroup", service->cgroup}, {"how", service->how}};
  return json_text(doc);
}

std::optional<AttributedService> attributed_service_of(const std::string& text) {
  auto doc = parse_json_or_discarded(text);
  if (!doc.is_object() || !doc.contains("service") || !doc["service"].is_object())
    return std::nullopt;
  const auto& s = doc["service"];
  AttributedService out;
  out.name = s.value("name", "");
  out.pid = s.value("pid", 0);
  out.roots = s.value("roots", std::vector<pid_t>{});
  out.listener = s.value("listener", "");
  out.cgroup = s.value("cgroup", "");
  out.how = s.value("how", "");
  return out;
}

std::vector<std::optional<double>> service_cpu_by_iteration(const std::string& text,
                                                            size_t iterations) {
  std::vector<std::optional<double>> out(iterations);
  auto doc = parse_json_or_discarded(text);
  if (!doc.is_object() || !doc.contains("windows")) return out;  // older runs keep none
  for (const auto& w : doc["windows"]) {
    auto i = w.value("iteration", -1);
    const auto& cpu = w.value("service_cpu_s", json());
    if (i >= 0 && static_cast<size_t>(i) < iterations && cpu.is_number())
      out[static_cast<size_t>(i)] = cpu.get<double>();
  }
  return out;
}

std::vector<std::optional<WindowShare>> shared_cpu_by_iteration(const std::string& text,
                                                                size_t iterations) {
  std::vector<std::optional<WindowShare>> out(iterations);
  auto doc = parse_json_or_discarded(text);
  if (!doc.is_object() || !doc.contains("windows")) return out;
  for (const auto& w : doc["windows"]) {
    auto i = w.value("iteration", -1);
    const auto& pct = w.value("shared_cpu_pct", json());
    if (i >= 0 && static_cast<size_t>(i) < iterations && pct.is_number())
      out[static_cast<size_t>(i)] = WindowShare{pct.get<double>(), w.value("samples", 0)};
  }
  return out;
}

HostSampler::HostSampler(ProcReader proc, Nanos interval, std::optional<ServiceWatch> service,
                         size_t max_samples)
    : proc_(std::move(proc)),
      interval_(interval),
      service_(std::move(service)),
      cgroups_(proc_.root()),
      max_samples_(max_samples),
      ticks_per_s_(ticks_per_second()) {}

HostSampler::HostSampler(ProcReader proc, Nanos interval, std::optional<ServiceWatch> service,
                         std::optional<ServiceWatch> companion)
    : HostSampler(std::move(proc), interval, std::move(service)) {
  companion_ = std::move(companion);
}

void HostSampler::start() {
  if (thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

void HostSampler::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

std::vector<HostSample> HostSampler::samples() const {
  std::lock_guard lock(mutex_);
  return samples_;
}

void HostSampler::add(const HostSnapshot& before, const HostSnapshot& after, pid_t tid) {
  std::lock_guard lock(mutex_);
  if (samples_.size() < max_samples_)
    samples_.push_back(diff_snapshots(before, after, ticks_per_s_, tid));
}

void HostSampler::align(SteadyClock::time_point t0, Nanos warmup, Nanos duration, int iterations) {
  std::vector<SteadyClock::time_point> points;
  auto cut = [&](SteadyClock::time_point from, Nanos length) {
    auto pieces = std::max<int64_t>(1, (length + interval_ / 2) / interval_);
    for (int64_t k = 1; k <= pieces; ++k) points.push_back(from + length * k / pieces);
  };
  points.push_back(t0);
  if (warmup > Nanos(0)) cut(t0, warmup);
  for (int i = 0; i < iterations; ++i) cut(t0 + warmup + duration * i, duration);
  {
    std::lock_guard lock(mutex_);
    schedule_ = std::move(points);
  }
  rescheduled_.notify_all();
}

SteadyClock::time_point HostSampler::next_sample(SteadyClock::time_point after,
                                                 SteadyClock::time_point regular) {
  std::lock_guard lock(mutex_);
  auto passed = std::upper_bound(schedule_.begin(), schedule_.end(), after);
  schedule_.erase(schedule_.begin(), passed);
  return schedule_.empty() ? regular : schedule_.front();
}

// Sleeps on a condition variable rather than sleep_for, so stop() returns at
// once instead of after up to one interval, and align() takes effect at once.
void HostSampler::loop(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "pg-sampler");
  auto tid = static_cast<pid_t>(syscall(SYS_gettid));
  const ServiceWatch* service = service_ ? &*service_ : nullptr;
  const ServiceWatch* companion = companion_ ? &*companion_ : nullptr;
  auto before = take_snapshot(proc_, service, companion, cgroups_, SteadyClock::now());
  auto regular = before.at + interval_;
  // At least one sample, even when stop() came while the first snapshot was
  // read (a short run on a starved host): a run with no sample has no claim.
  do {
    for (;;) {
      auto next = next_sample(before.at, regular);
      std::unique_lock lock(mutex_);
      bool changed = rescheduled_.wait_until(lock, stop, next, [&] {
        return !schedule_.empty() && schedule_.front() < next && schedule_.front() > before.at;
      });
      if (!changed) break;
    }
    auto after = take_snapshot(proc_, service, companion, cgroups_, SteadyClock::now());
    add(before, after, tid);
    regular = after.at + interval_;  // a slow read skips ahead instead of bursting
    before = std::move(after);
  } while (!stop.stop_requested());
}

}  // namespace perfgate
