#include "perfgate/host/host_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <thread>

namespace perfgate {
namespace {

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(PERFGATE_SOURCE_DIR) / "tests/fixtures/proc" / name;
}

// The debian-vm fixture's two captures, one second apart, with service PID 200.
HostSample vm_sample(SteadyClock::time_point t0 = SteadyClock::time_point{}) {
  auto a = take_snapshot(ProcReader(fixture("debian-vm/t0")), 200, t0);
  auto b = take_snapshot(ProcReader(fixture("debian-vm/t1")), 200, t0 + std::chrono::seconds(1));
  return diff_snapshots(a, b, 100.0, 102);
}

TEST(HostSamplerTest, HostCpuBreakdownFromDeltas) {
  auto s = vm_sample();
  EXPECT_DOUBLE_EQ(s.cpu_busy_pct, 70.0);
  EXPECT_DOUBLE_EQ(s.user_pct, 50.0);
  EXPECT_DOUBLE_EQ(s.system_pct, 10.0);
  EXPECT_DOUBLE_EQ(s.irq_pct, 5.0);
  EXPECT_DOUBLE_EQ(s.steal_pct, 5.0);
  EXPECT_DOUBLE_EQ(s.iowait_pct, 0.0);
  EXPECT_DOUBLE_EQ(s.max_core_busy_pct, 80.0);
}

TEST(HostSamplerTest, MemoryNetworkLoadAndPressure) {
  auto s = vm_sample();
  EXPECT_DOUBLE_EQ(s.memory_available_pct, 20.0);
  EXPECT_EQ(s.swap_used_kib, 100000u);
  EXPECT_EQ(s.net_rx_bytes, 6000u);
  EXPECT_EQ(s.net_tx_bytes, 3000u);
  EXPECT_EQ(s.net_rx_packets, 60u);
  EXPECT_EQ(s.net_tx_packets, 30u);
  EXPECT_EQ(s.net_drops, 2u);
  EXPECT_EQ(s.net_errors, 1u);
  EXPECT_EQ(s.tcp_retrans, 7u);
  EXPECT_DOUBLE_EQ(s.load1, 1.75);
  // PSI's stall over this interval (0.4 s of 1 s), not the kernel's avg10 (3.25).
  EXPECT_DOUBLE_EQ(s.cpu_pressure_pct.value(), 40.0);
  EXPECT_DOUBLE_EQ(s.cpu_stall_s.value(), 0.4);
  // perfgate's threads waited 150 + 10 ms, the service tree 100 + 20 ms; PID 300 is not the run's.
  EXPECT_NEAR(s.run_wait_s.value(), 0.28, 1e-12);
}

TEST(HostSamplerTest, ParsesSchedstatAndSumsAProcesssThreads) {
  auto s = parse_schedstat("709000000 152000000 90\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->run_ns, 709000000u);
  EXPECT_EQ(s->wait_ns, 152000000u);
  EXPECT_FALSE(parse_schedstat("12"));
  EXPECT_FALSE(parse_schedstat("x y z"));
  ProcReader proc(fixture("debian-vm/t1"));
  EXPECT_EQ(proc.wait_ns("self").value(), 163000000u);
  EXPECT_EQ(proc.wait_ns("200").value(), 105000000u);
  EXPECT_FALSE(proc.wait_ns("1"));  // no schedstat: unknown, not zero
}

// A CPU-bound service and its load on too few cores wait for each other in every
// run alike: the cpu_pressure rule judges only the waiting they do not account for.
TEST(HostSamplerTest, WindowPressureLeavesOutTheRunsOwnWaits) {
  auto t0 = SteadyClock::time_point{} + std::chrono::seconds(10);
  std::vector<HostSample> samples;
  for (int i = 0; i < 2; ++i) samples.push_back(vm_sample(t0 + std::chrono::seconds(i)));
  TimeWindow w{t0, t0 + std::chrono::seconds(2)};
  auto sum = summarize_window(samples, w, 0);
  EXPECT_DOUBLE_EQ(sum.cpu_pressure_pct.value(), 40.0);
  EXPECT_NEAR(sum.run_cpu_wait_pct.value(), 28.0, 1e-9);
  EXPECT_NEAR(sum.foreign_cpu_pressure_pct.value(), 12.0, 1e-9);

  // The run's waits are summed over tasks, PSI counts a moment once: never below 0.
  samples[0].run_wait_s = samples[1].run_wait_s = 0.9;
  sum = summarize_window(samples, w, 0);
  EXPECT_DOUBLE_EQ(sum.foreign_cpu_pressure_pct.value(), 0.0);

  // Where the kernel keeps no schedstat, the whole pressure is judged, as before.
  samples[0].run_wait_s = samples[1].run_wait_s = std::nullopt;
  sum = summarize_window(samples, w, 0);
  EXPECT_FALSE(sum.run_cpu_wait_pct);
  EXPECT_DOUBLE_EQ(sum.foreign_cpu_pressure_pct.value(), 40.0);

  // Without PSI there is no pressure figure at all.
  samples[0].cpu_stall_s = samples[1].cpu_stall_s = std::nullopt;
  EXPECT_FALSE(summarize_window(samples, w, 0).foreign_cpu_pressure_pct);
}

TEST(HostSamplerTest, WithoutAServiceOnlyPerfgatesWaitsAreTheRuns) {
  auto a = take_snapshot(ProcReader(fixture("debian-vm/t0")), std::nullopt, {});
  auto b = take_snapshot(ProcReader(fixture("debian-vm/t1")), std::nullopt,
                         SteadyClock::time_point{} + std::chrono::seconds(1));
  EXPECT_NEAR(diff_snapshots(a, b, 100.0).run_wait_s.value(), 0.16, 1e-12);
}

TEST(HostSamplerTest, OwnThreadsServiceAndForeignCpu) {
  auto s = vm_sample();
  EXPECT_DOUBLE_EQ(s.own_cpu_pct, 37.0);  // 74 ticks of 200
  ASSERT_EQ(s.load_threads.size(), 2u);   // the sampler (TID 102) left out
  EXPECT_EQ(s.load_threads[0].tid, 101);
  EXPECT_DOUBLE_EQ(s.load_threads[0].cpu_pct, 70.0);
  EXPECT_EQ(s.own_rss_kib, 20480u);
  EXPECT_DOUBLE_EQ(s.service_cpu_s.value(), 0.3);
  EXPECT_DOUBLE_EQ(s.service_cpu_pct.value(), 15.0);
  EXPECT_EQ(s.service_rss_kib, 15000u);
  // 70 % busy, of which 5 % steal (the hypervisor's, no process's), 37 % perfgate, 15 % the
  // service.
  EXPECT_NEAR(s.foreign_cpu_pct, 13.0, 1e-9);
}

TEST(HostSamplerTest, NoServiceMeansAllOtherCpuIsForeign) {
  auto a = take_snapshot(ProcReader(fixture("debian-vm/t0")), std::nullopt, {});
  auto b = take_snapshot(ProcReader(fixture("debian-vm/t1")), std::nullopt,
                         SteadyClock::time_point{} + std::chrono::seconds(1));
  auto s = diff_snapshots(a, b, 100.0);
  EXPECT_FALSE(s.service_cpu_s);
  EXPECT_NEAR(s.foreign_cpu_pct, 28.0, 1e-9);
}

// The other side of a paired run measured at the same moments is part of the
// measurement: its CPU is neither this side's service's nor foreign.
TEST(HostSamplerTest, CompanionCpuIsNotForeign) {
  CgroupReader no_cgroups("");
  ServiceWatch other{{200}, ""};
  auto a = take_snapshot(ProcReader(fixture("debian-vm/t0")), nullptr, &other, no_cgroups, {});
  auto b = take_snapshot(ProcReader(fixture("debian-vm/t1")), nullptr, &other, no_cgroups,
                         SteadyClock::time_point{} + std::chrono::seconds(1));
  auto s = diff_snapshots(a, b, 100.0);
  EXPECT_FALSE(s.service_cpu_s);
  EXPECT_DOUBLE_EQ(s.companion_cpu_pct.value(), 15.0);  // 30 ticks of 200, its worker's included
  EXPECT_NEAR(s.foreign_cpu_pct, 13.0, 1e-9);           // 28 without the companion

  ServiceWatch self{{200}, ""}, idle{{300}, ""};
  a = take_snapshot(ProcReader(fixture("debian-vm/t0")), &self, &idle, no_cgroups, {});
  b = take_snapshot(ProcReader(fixture("debian-vm/t1")), &self, &idle, no_cgroups,
                    SteadyClock::time_point{} + std::chrono::seconds(1));
  s = diff_snapshots(a, b, 100.0, 102);
  EXPECT_DOUBLE_EQ(s.service_cpu_pct.value(), 15.0);
  EXPECT_DOUBLE_EQ(s.companion_cpu_pct.value(), 0.0);
  EXPECT_NEAR(s.foreign_cpu_pct, 13.0, 1e-9);
}

ProcStat task(pid_t tid, int cpu, uint64_t ticks) {
  ProcStat t;
  t.pid = tid;
  t.processor = cpu;
  t.utime_ticks = ticks;
  return t;
}

// Two snapshots a second apart: load thread 101 busy on `load_cpu`, the
// sampler (102) on CPU 1, the service's thread 200 on `service_cpu` with
// `service_ticks` more CPU ticks than before.
HostSample placed(int load_cpu, int service_cpu, uint64_t service_ticks) {
  HostSnapshot a, b;
  b.at = a.at + std::chrono::seconds(1);
  a.own_threads = {task(101, load_cpu, 10), task(102, 1, 5)};
  b.own_threads = {task(101, load_cpu, 40), task(102, 1, 6)};
  a.service_threads = {task(200, service_cpu, 10)};
  b.service_threads = {task(200, service_cpu, 10 + service_ticks)};
  return diff_snapshots(a, b, 100.0, 102);
}

TEST(HostSamplerTest, SharedCpuWhenBusyLoadAndServiceThreadsLastRanOnOne) {
  EXPECT_EQ(placed(0, 0, 20).shared_cpu, std::optional<bool>(true));
  // The sampler's CPU is not the load's: 102, busy on CPU 1, sits beside the service.
  EXPECT_EQ(placed(0, 1, 20).shared_cpu, std::optional<bool>(false));
  // An idle service thread says nothing about where the service runs.
  EXPECT_FALSE(placed(0, 0, 0).shared_cpu);
  HostSnapshot a, b;  // no service threads known (a remote service, a cgroup watch)
  a.own_threads = {task(101, 0, 1)};
  b.own_threads = {task(101, 0, 9)};
  EXPECT_FALSE(diff_snapshots(a, b, 100.0).shared_cpu);
}

TEST(HostSamplerTest, WindowSharedCpuIsTheShareOfSamplesThatCouldTell) {
  auto t0 = SteadyClock::time_point{} + std::chrono::seconds(10);
  std::vector<HostSample> samples;
  for (int i = 0; i < 4; ++i) {
    auto s = vm_sample(t0 + std::chrono::seconds(i));
    s.shared_cpu = i == 0   ? std::optional<bool>(true)
                   : i == 3 ? std::optional<bool>()
                            : std::optional<bool>(false);
    samples.push_back(s);
  }
  TimeWindow all{t0, t0 + std::chrono::seconds(4)};
  auto sum = summarize_window(samples, all, 0);
  ASSERT_TRUE(sum.shared_cpu_pct);
  EXPECT_NEAR(*sum.shared_cpu_pct, 100.0 / 3, 1e-9);  // 1 of the 3 that could tell
  EXPECT_STREQ(placement_class(*sum.shared_cpu_pct), "mixed");
  EXPECT_STREQ(placement_class(12), "apart");
  for (auto& s : samples) s.shared_cpu.reset();
  EXPECT_FALSE(summarize_window(samples, all, 0).shared_cpu_pct);
  // The store keeps it per window.
  auto doc = nlohmann::json::parse(host_samples_json({sum}, samples, t0, 4));
  EXPECT_TRUE(doc["windows"][0].contains("shared_cpu_pct"));
}

TEST(HostSamplerTest, WindowTakesSamplesByMidpoint) {
  auto t0 = SteadyClock::time_point{} + std::chrono::seconds(10);
  std::vector<HostSample> samples;
  for (int i = 0; i < 4; ++i) samples.push_back(vm_sample(t0 + std::chrono::seconds(i)));
  samples[1].foreign_cpu_pct = 50;
  samples[1].memory_available_pct = 4;
  TimeWindow w{t0 + std::chrono::seconds(1), t0 + std::chrono::seconds(3)};
  auto sum = summarize_window(samples, w, 3);
  EXPECT_EQ(sum.iteration, 3);
  EXPECT_EQ(sum.samples, 2);
  EXPECT_DOUBLE_EQ(sum.host_cpu_mean_pct, 70.0);
  EXPECT_DOUBLE_EQ(sum.foreign_cpu_mean_pct, 31.5);
  EXPECT_DOUBLE_EQ(sum.foreign_cpu_max_pct, 50.0);
  EXPECT_DOUBLE_EQ(sum.generator_thread_pct, 70.0);
  EXPECT_DOUBLE_EQ(sum.service_cpu_s.value(), 0.6);
  EXPECT_DOUBLE_EQ(sum.memory_available_min_pct, 4.0);
  EXPECT_EQ(sum.net_drops, 4u);
}

// Windows shorter than half a sample (50 ms windows, 250 ms samples) may hold
// no midpoint: they take the host's state from the sample covering them, or a
// window that stalled on a busy machine would look unmeasured, not saturated.
TEST(HostSamplerTest, AWindowWithoutAMidpointTakesTheSampleCoveringIt) {
  auto t0 = SteadyClock::time_point{} + std::chrono::seconds(10);
  std::vector<HostSample> samples = {vm_sample(t0)};  // [t0, t0 + 1 s), midpoint t0 + 0.5 s
  samples[0].foreign_cpu_pct = 80;
  using std::chrono::milliseconds;
  TimeWindow own{t0 + milliseconds(450), t0 + milliseconds(550)};
  TimeWindow covered{t0 + milliseconds(600), t0 + milliseconds(700)};
  TimeWindow after{t0 + milliseconds(1000), t0 + milliseconds(1100)};
  auto first = summarize_window(samples, own, 0);
  EXPECT_EQ(first.samples, 1);
  EXPECT_DOUBLE_EQ(first.service_cpu_s.value(), 0.3);
  EXPECT_EQ(first.net_drops, 2u);

  auto second = summarize_window(samples, covered, 1);
  EXPECT_EQ(second.samples, 1);
  EXPECT_DOUBLE_EQ(second.foreign_cpu_mean_pct, 80.0);
  EXPECT_DOUBLE_EQ(second.steal_mean_pct, 5.0);
  // The sample's sums belong to the window holding its midpoint: not counted twice.
  EXPECT_FALSE(second.service_cpu_s);
  EXPECT_EQ(second.net_drops, 0u);

  EXPECT_EQ(summarize_window(samples, after, 2).samples, 0);  // nothing covers it
}

TEST(HostSamplerTest, SamplesJsonIsBoundedAndGivesServiceCpuBack) {
  std::vector<HostSample> samples(10, vm_sample());
  std::vector<WindowSummary> windows(2);
  windows[1].iteration = 1;
  windows[1].service_cpu_s = 0.25;
  auto text = host_samples_json(windows, samples, {}, 4);
  auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["samples"].size(), 4u);
  EXPECT_EQ(doc["samples_total"], 10);
  auto cpu = service_cpu_by_iteration(text, 3);
  EXPECT_FALSE(cpu[0]);
  EXPECT_DOUBLE_EQ(cpu[1].value(), 0.25);
  EXPECT_FALSE(cpu[2]);
  EXPECT_FALSE(service_cpu_by_iteration("", 2)[0]);
}

// More busy threads than cores must wait for each other: the live sampler sees
// that as the run's own waiting (where the kernel keeps schedstat).
TEST(HostSamplerTest, LiveSamplerCountsTheRunsOwnWaits) {
  if (!ProcReader("/").wait_ns("self")) GTEST_SKIP() << "no /proc/self/task/*/schedstat here";
  HostSampler sampler(ProcReader("/"), std::chrono::milliseconds(50), std::nullopt);
  sampler.start();
  auto start = SteadyClock::now();
  {
    std::vector<std::jthread> busy;
    unsigned n = std::max(1u, std::thread::hardware_concurrency()) + 1;
    for (unsigned i = 0; i < n; ++i)
      busy.emplace_back([start] {
        volatile uint64_t x = 0;
        while (SteadyClock::now() - start < std::chrono::milliseconds(400)) x = x + 1;
      });
  }
  auto end = SteadyClock::now();
  sampler.stop();
  auto sum = summarize_window(sampler.samples(), {start, end}, 0);
  ASSERT_GT(sum.samples, 0);
  ASSERT_TRUE(sum.run_cpu_wait_pct);
  // n + 1 spinning threads on n cores: together they wait about a whole window.
  EXPECT_GT(*sum.run_cpu_wait_pct, 10.0);
  if (sum.cpu_pressure_pct) {
    EXPECT_LE(*sum.foreign_cpu_pressure_pct, *sum.cpu_pressure_pct);
  }
}

// The service's CPU in nanoseconds from its threads' schedstat, where the
// stat files' 10 ms ticks would make a short window's figure a whole number
// of ticks; a thread that ended since (its last ns gone with it) makes the
// ticks answer for that sample.
TEST(HostSamplerTest, ServiceCpuIsReadInNanosecondsWhileEveryThreadLives) {
  HostSnapshot a, b;
  a.service_cpu_total_s = 1.00;
  b.service_cpu_total_s = 1.03;  // three ticks
  a.service_run_ns = {{200, 1'000'000'000}, {201, 5'000'000}};
  b.service_run_ns = {{200, 1'021'234'567}, {201, 5'500'000}, {202, 1'000'000}};
  auto s = diff_snapshots(a, b, 100.0, 0);
  ASSERT_TRUE(s.service_cpu_s);
  EXPECT_NEAR(*s.service_cpu_s, 0.022734567, 1e-12);     // 202 was born since: all of it
  b.service_run_ns.erase(b.service_run_ns.begin() + 1);  // 201 ended
  EXPECT_NEAR(diff_snapshots(a, b, 100.0, 0).service_cpu_s.value(), 0.03, 1e-12);
  a.service_run_ns.clear();  // no schedstat: ticks
  EXPECT_NEAR(diff_snapshots(a, b, 100.0, 0).service_cpu_s.value(), 0.03, 1e-12);
}

TEST(HostSamplerTest, LiveServiceCpuIsNotAWholeNumberOfTicks) {
  if (!ProcReader("/").wait_ns("self")) GTEST_SKIP() << "no /proc/self/task/*/schedstat here";
  auto a = take_snapshot(ProcReader("/"), getpid(), SteadyClock::now());
  volatile uint64_t x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + 1;  // some CPU of our own
  auto b = take_snapshot(ProcReader("/"), getpid(), SteadyClock::now());
  ASSERT_FALSE(a.service_run_ns.empty());
  auto cpu = diff_snapshots(a, b, 100.0, 0).service_cpu_s.value();
  EXPECT_GT(cpu, 0.0);
  double ticks = cpu * 100;
  EXPECT_GT(std::abs(ticks - std::round(ticks)), 1e-6) << cpu;
}

// Aligned to a run's windows, the sampler ends a sample at each edge (never
// before it), however long its interval: a window's service CPU is then read
// at its own edges.
TEST(HostSamplerTest, AnAlignedSamplerSamplesAtTheWindowEdges) {
  HostSampler sampler(ProcReader("/"), std::chrono::seconds(10), std::nullopt);
  sampler.start();
  auto t0 = SteadyClock::now() + std::chrono::milliseconds(50);
  const auto warmup = std::chrono::milliseconds(300), window = std::chrono::milliseconds(300);
  sampler.align(t0, warmup, window, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  sampler.stop();
  auto samples = sampler.samples();
  std::vector<SteadyClock::time_point> edges = {t0, t0 + warmup, t0 + warmup + window,
                                                t0 + warmup + 2 * window};
  // Each edge ends a sample at or after it and before the next edge.
  for (size_t i = 0; i < edges.size(); ++i) {
    auto ends_after = std::find_if(samples.begin(), samples.end(),
                                   [&](const HostSample& s) { return s.end >= edges[i]; });
    ASSERT_NE(ends_after, samples.end()) << "edge " << i;
    if (i + 1 < edges.size()) {
      EXPECT_LT(ends_after->end, edges[i + 1]) << "edge " << i;
    }
  }
  // With a 10 s interval, nothing but the edges (and stop()) made these samples.
  EXPECT_EQ(samples.size(), edges.size() + 1);
}

TEST(HostSamplerTest, LiveSamplerRecordsAtItsInterval) {
  HostSampler sampler(ProcReader("/"), std::chrono::milliseconds(20), std::nullopt);
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  sampler.stop();
  auto samples = sampler.samples();
  ASSERT_GE(samples.size(), 3u);
  for (const auto& s : samples) {
    EXPECT_GE(s.cpu_busy_pct, 0.0);
    EXPECT_LE(s.cpu_busy_pct, 100.0);
    EXPECT_GT(s.own_rss_kib, 0u);
  }
}

}  // namespace
}  // namespace perfgate
