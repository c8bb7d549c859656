// The load machine line of a run, and of a paired run's both sides together
// (cli/measurement.h): figures of whole windows, never of one short sample.
#include <gtest/gtest.h>

#include "gate/measurement.h"

namespace perfgate {
namespace {

// A side of `windows.size()` kept iterations with these host figures.
Measurement side(const std::vector<WindowSummary>& windows) {
  Measurement m;
  for (size_t i = 0; i < windows.size(); ++i) {
    Iteration it;
    it.index = static_cast<int>(i);
    m.load.iterations.push_back(it);
    m.windows.push_back(windows[i]);
    m.windows.back().iteration = static_cast<int>(i);
  }
  return m;
}

// A window of four samples in which one tiny sample at the edge read a tick or
// two as hundreds of % (its per-sample maxima), while the window as a whole was quiet.
WindowSummary window(double host_mean, double thread, double foreign, double steal) {
  WindowSummary w;
  w.samples = 4;
  w.host_cpu_mean_pct = host_mean;
  w.host_cpu_max_pct = 100;
  w.generator_thread_pct = thread;
  w.generator_thread_max_pct = 351;
  w.foreign_cpu_mean_pct = foreign;
  w.foreign_cpu_max_pct = 100;
  w.steal_mean_pct = steal;
  w.steal_max_pct = 50;
  w.memory_available_min_pct = 80;
  return w;
}

TEST(HostSummary, PairedRunCombinesBothSidesWindowByWindow) {
  auto candidate = side({window(40, 60, 2, 0), window(50, 65, 4, 1)});
  auto baseline = side({window(30, 55, 8, 0), window(60, 70, 3, 2)});
  baseline.windows[1].memory_available_min_pct = 70;
  baseline.windows[1].foreign_cpu_pressure_pct = 12;
  baseline.windows[0].cpu_pressure_pct = 40;  // the run's own waiting: not what is judged
  candidate.service = AttributedService{};
  candidate.service->name = "api";
  MetricSet metrics = {{"service_cpu_us_per_request", 41.5}};
  auto h = host_summary({&candidate, &baseline}, metrics);
  EXPECT_EQ(h.samples, 16);
  EXPECT_DOUBLE_EQ(h.host_cpu_mean_pct, (40 + 50 + 30 + 60) / 4.0);  // equal sample counts
  EXPECT_DOUBLE_EQ(h.host_cpu_max_pct, 60);
  EXPECT_DOUBLE_EQ(h.generator_thread_max_pct, 70);  // not the short sample's 351 %
  EXPECT_DOUBLE_EQ(h.foreign_cpu_max_pct, 8);        // not 100 %
  EXPECT_DOUBLE_EQ(h.steal_max_pct, 2);
  EXPECT_DOUBLE_EQ(h.memory_available_min_pct, 70);
  EXPECT_EQ(h.cpu_pressure_max_pct, 12);
  ASSERT_TRUE(h.service);
  EXPECT_EQ(h.service->name, "api");  // the candidate's service, named first
  EXPECT_EQ(h.service_cpu_us_per_request, 41.5);
}

TEST(HostSummary, DiscardedWindowsAndUnsampledOnesDoNotCount) {
  auto m = side({window(95, 99, 90, 9), window(20, 30, 1, 0), window(0, 0, 0, 0)});
  m.load.iterations[0].discarded = true;
  m.windows[2].samples = 0;
  auto h = host_summary(m, {});
  EXPECT_EQ(h.samples, 4);
  EXPECT_DOUBLE_EQ(h.host_cpu_mean_pct, 20);
  EXPECT_DOUBLE_EQ(h.generator_thread_max_pct, 30);
  EXPECT_FALSE(h.service_cpu_us_per_request);
}

// The run's placement figure weighs each kept window by its samples, and
// windows that could not tell (no busy service thread seen) do not count.
TEST(HostSummary, SharedCpuIsSampleWeightedOverWindowsThatCouldTell) {
  auto m = side({window(50, 60, 1, 0), window(50, 60, 1, 0), window(50, 60, 1, 0)});
  m.windows[0].shared_cpu_pct = 10;
  m.windows[1].shared_cpu_pct = 40;
  m.windows[1].samples = 8;
  auto h = host_summary(m, {});
  ASSERT_TRUE(h.shared_cpu_pct);
  EXPECT_DOUBLE_EQ(*h.shared_cpu_pct, (10 * 4 + 40 * 8) / 12.0);
  for (auto& w : m.windows) w.shared_cpu_pct.reset();
  EXPECT_FALSE(host_summary(m, {}).shared_cpu_pct);
}

}  // namespace
}  // namespace perfgate
