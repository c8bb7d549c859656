#include "perfgate/host/saturation.h"

#include <gtest/gtest.h>

namespace perfgate {
namespace {

// A quiet window: every figure well inside the default limits.
WindowSummary quiet() {
  WindowSummary w;
  w.samples = 4;
  w.host_cpu_mean_pct = 40;
  w.generator_thread_pct = 30;
  w.foreign_cpu_mean_pct = 3;
  w.memory_available_min_pct = 60;
  return w;
}

Saturation eval(const std::vector<WindowSummary>& kept, bool remote = false, bool paired = false) {
  return evaluate_saturation(kept, SaturationSpec{}, SaturationContext{remote, paired});
}

TEST(SaturationTest, QuietWindowsAreNotSaturated) {
  auto s = eval({quiet(), quiet(), quiet()});
  EXPECT_FALSE(s.saturated);
  EXPECT_TRUE(s.reasons.empty());
}

TEST(SaturationTest, NoSamplesMakesNoClaim) {
  EXPECT_FALSE(eval({WindowSummary{}, WindowSummary{}}).saturated);
  EXPECT_FALSE(eval({}).saturated);
}

struct RuleCase {
  const char* name;
  void (*disturb)(WindowSummary&);
  bool remote;
  const char* reason;
  bool busy_host = false;  // the host's load, which a paired run's sides share
};

class SaturationRuleTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(SaturationRuleTest, EachRuleNamesItsFigure) {
  const auto& rule = GetParam();
  std::vector<WindowSummary> kept(5, quiet());
  for (int i = 0; i < 4; ++i) rule.disturb(kept[i]);
  auto s = eval(kept, rule.remote);
  ASSERT_TRUE(s.saturated) << rule.name;
  ASSERT_EQ(s.reasons.size(), 1u);
  EXPECT_EQ(s.reasons[0], rule.reason);
  EXPECT_TRUE(s.shared.empty());
  // Each reason comes with what to do: the limit's profile key, and for a busy
  // host paired mode as the way out that needs no quieter machine.
  auto advice = saturation_advice(s);
  ASSERT_EQ(advice.size(), 1u) << rule.name;
  if (std::string(rule.name) != "nic") {
    EXPECT_NE(advice[0].find("is the limit"), std::string::npos) << advice[0];
  }
  EXPECT_EQ(advice[0].find("paired mode") != std::string::npos, rule.busy_host) << advice[0];
}

TEST(SaturationTest, ALaptopsBrowserSaysWhichLimitAndThePairedWayOut) {
  std::vector<WindowSummary> kept(5, quiet());
  for (auto& w : kept) w.foreign_cpu_mean_pct = 27;
  auto advice = saturation_advice(eval(kept));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0],
            "other processes used the CPU: stop them for the run (a browser, a build), or gate in "
            "paired mode, where a busy host slows both builds alike (docs/ci.md, \"Paired mode\"); "
            "saturation.foreign_cpu is the limit");
}

// Paired mode: a busy host falls on both sides' alternating windows, so it is
// noted, not saturation; the load thread, memory, a remote host and the network
// still make the run inconclusive.
TEST_P(SaturationRuleTest, PairedModeSharesOnlyTheBusyHostRules) {
  const auto& rule = GetParam();
  std::vector<WindowSummary> kept(5, quiet());
  for (int i = 0; i < 4; ++i) rule.disturb(kept[i]);
  auto s = eval(kept, rule.remote, true);
  EXPECT_EQ(s.saturated, !rule.busy_host) << rule.name;
  const auto& found = rule.busy_host ? s.shared : s.reasons;
  ASSERT_EQ(found.size(), 1u) << rule.name;
  EXPECT_EQ(found[0], rule.reason);
  EXPECT_EQ((rule.busy_host ? s.reasons : s.shared).size(), 0u) << rule.name;
  // Noted, nothing to do; a paired side's reason is advised as its rule is.
  EXPECT_EQ(saturation_advice(s).size(), rule.busy_host ? 0u : 1u) << rule.name;
  Saturation sided = s;
  for (auto& reason : sided.reasons) reason = "baseline side: " + reason;
  EXPECT_EQ(saturation_advice(sided), saturation_advice(s)) << rule.name;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, SaturationRuleTest,
    ::testing::Values(
        RuleCase{"thread", [](WindowSummary& w) { w.generator_thread_pct = 97; }, false,
                 "load thread at 97% of a core (limit 90%) in 4 of 5 iterations", false},
        RuleCase{"foreign", [](WindowSummary& w) { w.foreign_cpu_mean_pct = 87; }, false,
                 "foreign CPU 87% of the host (limit 25%) in 4 of 5 iterations", true},
        RuleCase{"steal", [](WindowSummary& w) { w.steal_mean_pct = 12; }, false,
                 "CPU steal 12% (limit 5%) in 4 of 5 iterations", true},
        RuleCase{"memory", [](WindowSummary& w) { w.memory_available_min_pct = 2; }, false,
                 "memory available 2% (limit 5%) in 4 of 5 iterations", false},
        RuleCase{"pressure", [](WindowSummary& w) { w.foreign_cpu_pressure_pct = 45; }, false,
                 "CPU pressure from other tasks 45% (limit 20%) in 4 of 5 iterations", true},
        RuleCase{"remote host", [](WindowSummary& w) { w.host_cpu_mean_pct = 95; }, true,
                 "host CPU 95% busy (limit 90%) in 4 of 5 iterations", false},
        RuleCase{"nic", [](WindowSummary& w) { w.net_drops = 3; }, false,
                 "network interfaces dropped 12 and errored 0 packets", false}),
    [](const auto& info) {
      std::string name = info.param.name;
      for (auto& c : name)
        if (c == ' ') c = '_';
      return name;
    });

TEST(SaturationTest, BusyHostIsNoReasonWhenTheServiceIsLocal) {
  std::vector<WindowSummary> kept(3, quiet());
  for (auto& w : kept) w.host_cpu_mean_pct = 99;
  EXPECT_FALSE(eval(kept, false).saturated);
  EXPECT_TRUE(eval(kept, true).saturated);
}

TEST(SaturationTest, OneDisturbedIterationInFiveIsNotEnough) {
  std::vector<WindowSummary> kept(5, quiet());
  kept[2].foreign_cpu_mean_pct = 90;
  EXPECT_FALSE(eval(kept).saturated);
  kept[3].foreign_cpu_mean_pct = 80;
  kept[4].foreign_cpu_mean_pct = 70;
  auto s = eval(kept);
  ASSERT_TRUE(s.saturated);
  EXPECT_EQ(s.reasons[0], "foreign CPU 90% of the host (limit 25%) in 3 of 5 iterations");
}

// A stalled window is explained by every rule it is past: on a shared runner
// the first (steal) would otherwise hide the one that starved the run.
TEST(SaturationTest, AWindowNamesEveryRuleItIsPast) {
  auto w = quiet();
  EXPECT_EQ(window_saturation(w, SaturationSpec{}, {}), std::nullopt);
  w.steal_mean_pct = 6;
  w.memory_available_min_pct = 4;
  auto why = window_saturation(w, SaturationSpec{}, {});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("steal 6% (limit 5%)"), std::string::npos) << *why;
  EXPECT_NE(why->find("memory available 4%"), std::string::npos) << *why;
  EXPECT_NE(why->find(", "), std::string::npos) << *why;
  w.samples = 0;  // nothing measured: no claim
  EXPECT_EQ(window_saturation(w, SaturationSpec{}, {}), std::nullopt);
}

TEST(SaturationTest, ProfileLimitsOverrideDefaults) {
  SaturationSpec spec;
  spec.foreign_cpu_pct = 2;
  auto s = evaluate_saturation({quiet()}, spec, {});
  ASSERT_TRUE(s.saturated);
  EXPECT_EQ(s.reasons[0], "foreign CPU 3% of the host (limit 2%) in 1 of 1 iterations");
}

TEST(SaturationTest, LoopbackUrls) {
  EXPECT_TRUE(is_loopback_url("http://127.0.0.1:8080/"));
  EXPECT_TRUE(is_loopback_url("http://localhost/x"));
  EXPECT_TRUE(is_loopback_url("https://[::1]:443/"));
  EXPECT_TRUE(is_loopback_url("http://user:pw@127.1.2.3/"));
  EXPECT_FALSE(is_loopback_url("http://10.0.0.5:8080/"));
  EXPECT_FALSE(is_loopback_url("https://example.com/127.0.0.1"));
}

}  // namespace
}  // namespace perfgate
