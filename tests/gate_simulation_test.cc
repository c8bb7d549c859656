// The verdict's error rates, simulated through the real decision code (judge()
// and next_step()) with fixed seeds: A/A runs must not fail more than the
// run's one-sided budget (2.5 % at 95 %) across every gated metric at once,
// with launches that differ and windows that drift; real losses must be caught.
// docs/statistics.md, "Error rates", quotes what these print.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "perfgate/core/sequential.h"
#include "perfgate/core/statistics.h"
#include "perfgate/core/verdict.h"

namespace perfgate {
namespace {

// The pull-request recipe's limits (ci/profiles/pr-paired.json).
ThresholdSet recipe_limits() {
  ThresholdSet limits;
  limits["throughput_rps"] = {5, 8, std::nullopt, std::nullopt};
  limits["latency_p99_ms"] = {15, 30, std::nullopt, std::nullopt};
  limits["service_cpu_us_per_request"] = {5, 8, std::nullopt, std::nullopt};
  return limits;
}

// How a simulated service behaves. Log-scale standard deviations.
struct World {
  double launch_sd = 0.04;      // a launch's own speed: ±7 % uniform has sd 4 %
  double window_sd = 0.02;      // one window's noise
  double p99_sd = 0.06;         // a window's p99 scatters more than its throughput
  double drift_rho = 0.8;       // AR(1) of the machine's speed from pair to pair
  double drift_sd = 0.03;       // its stationary deviation; both sides of a pair share it
  bool launch_per_pair = true;  // false: one launch a side for the whole run
  double cost_change = 0;       // the candidate's true change of CPU per request (log)
  double throughput_change = 0;
};

// One paired run of `pairs` pairs: each pair's two windows, A then B, in the
// same minute, so the machine's drift hits both; each side's launch speed is
// drawn per pair (the launch as the unit) or once per run.
struct PairedRun {
  std::vector<double> tput_a, tput_b, p99_a, p99_b, cost_a, cost_b;
};

PairedRun simulate(const World& w, int pairs, std::mt19937_64& rng) {
  std::normal_distribution<double> unit(0, 1);
  PairedRun r;
  double drift = w.drift_sd * unit(rng);
  double innovation = w.drift_sd * std::sqrt(1 - w.drift_rho * w.drift_rho);
  double launch_a = w.launch_sd * unit(rng), launch_b = w.launch_sd * unit(rng);
  for (int i = 0; i < pairs; ++i) {
    if (w.launch_per_pair) {
      launch_a = w.launch_sd * unit(rng);
      launch_b = w.launch_sd * unit(rng);
    }
    drift = w.drift_rho * drift + innovation * unit(rng);
    // A slow launch or minute costs CPU per request and throughput alike.
    auto side = [&](double launch, double tput_shift, double cost_shift, std::vector<double>& tput,
                    std::vector<double>& p99, std::vector<double>& cost) {
      double speed = launch + drift;
      tput.push_back(10000 * std::exp(-speed + tput_shift + w.window_sd * unit(rng)));
      cost.push_back(50 * std::exp(speed + cost_shift + w.window_sd * unit(rng)));
      p99.push_back(2 * std::exp(speed + w.p99_sd * unit(rng)));
    };
    side(launch_a, 0, 0, r.tput_a, r.p99_a, r.cost_a);
    side(launch_b, w.throughput_change, w.cost_change, r.tput_b, r.p99_b, r.cost_b);
  }
  return r;
}

RunFigures figures(const std::vector<double>& tput, const std::vector<double>& p99,
                   const std::vector<double>& cost) {
  RunFigures f;
  f.values = {
      {"throughput_rps", tput}, {"latency_p99_ms", p99}, {"service_cpu_us_per_request", cost}};
  for (const auto& [key, values] : f.values) f.summary[key] = stats::median(values);
  return f;
}

Judgement judge_run(const PairedRun& r, const ThresholdSet& limits, double confidence) {
  RunFigures now = figures(r.tput_b, r.p99_b, r.cost_b);
  BaselineSample base;
  base.pooled = figures(r.tput_a, r.p99_a, r.cost_a);
  base.paired = true;
  return judge(now, &base, limits, {}, {confidence});
}

struct Rates {
  double fail = 0, warn = 0, inconclusive = 0;
};

Rates rates(const World& w, int pairs, int runs, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Rates out;
  for (int i = 0; i < runs; ++i) {
    auto j = judge_run(simulate(w, pairs, rng), recipe_limits(), 95);
    out.fail += j.verdict == Verdict::kFail;
    out.warn += j.verdict == Verdict::kWarn;
    bool inconclusive = std::any_of(j.checks.begin(), j.checks.end(),
                                    [](const MetricCheck& c) { return c.inconclusive; });
    out.inconclusive += inconclusive;
  }
  out.fail /= runs;
  out.warn /= runs;
  out.inconclusive /= runs;
  return out;
}

TEST(GateSimulationTest, AaFalseFailsStayInOneBudgetAcrossEveryGatedMetric) {
  World w;  // launches ±7 %, AR(1) 0.8 windows, three gated metrics
  auto aa = rates(w, 16, 2000, 20261202);
  std::printf("A/A, 16 pairs, a launch per pair: fail %.4f warn %.4f inconclusive %.4f\n", aa.fail,
              aa.warn, aa.inconclusive);
  EXPECT_LE(aa.fail, 0.025);
  // Warns have a noise model too: an A/A run warns only past the warn limit and
  // clear of zero at the run's level, or when it could not have failed.
  EXPECT_LE(aa.warn - aa.inconclusive, 0.05);
}

TEST(GateSimulationTest, OneLaunchPerRunMakesPairsAgreeByLuckTheSimulationSeesIt) {
  // The design the launch-per-pair replaced: every pair of a run shares its two
  // launches, so one lucky draw moves every pair the same way. The rule cannot
  // tell, which is why paired mode restarts its services per pair.
  World w;
  w.launch_per_pair = false;
  auto shared = rates(w, 16, 2000, 20261203);
  std::printf("A/A, 16 pairs, one launch per run: fail %.4f\n", shared.fail);
  EXPECT_GT(shared.fail, 0.025);
}

TEST(GateSimulationTest, CatchesACostlierService) {
  World w;
  w.cost_change = std::log(1.15);
  auto caught = rates(w, 16, 500, 20261204);
  std::printf("+15%% CPU per request, 16 pairs: fail %.4f warn %.4f\n", caught.fail, caught.warn);
  EXPECT_GE(caught.fail, 0.6);
  w.launch_sd = 0.01;  // a quieter service: a 10 % cost is caught almost always
  w.cost_change = std::log(1.10);
  auto quiet = rates(w, 16, 500, 20261205);
  std::printf("+10%% CPU per request, quiet launches, 16 pairs: fail %.4f\n", quiet.fail);
  EXPECT_GE(quiet.fail, 0.9);
}

TEST(GateSimulationTest, AChangeAtTheWarnLimitRarelyFails) {
  // The threshold hypothesis: a fail needs the interval wholly past the warn
  // limit, so a true change at the warn limit fails at most alpha / 2.
  World w;
  w.launch_sd = 0.01;
  w.throughput_change = std::log(0.95);  // -5 %: the warn limit
  auto at_warn = rates(w, 16, 2000, 20261206);
  std::printf("-5%% throughput (the warn limit), 16 pairs: fail %.4f\n", at_warn.fail);
  EXPECT_LE(at_warn.fail, 0.025);
}

TEST(GateSimulationTest, TooFewPairsForTheLimitsIsInconclusiveNeverAPass) {
  // Loud launches, few pairs: the run cannot tell an 8 % change from none.
  World w;
  w.launch_sd = 0.08;
  auto few = rates(w, 8, 300, 20261207);
  std::printf("A/A, 8 pairs, launches ±14 %%: fail %.4f inconclusive %.4f\n", few.fail,
              few.inconclusive);
  EXPECT_GE(few.inconclusive, 0.8);
  EXPECT_GE(few.warn + few.fail, 0.8);  // such runs warn: hardly ever a pass
  EXPECT_LE(few.fail, 0.025);
}

// The clamp case of issue 26: count 6, max_count 16. The first look judges at
// 99.17 % per look, which six pairs cannot reach (p >= 2/64); that look must not
// stop the run as decided, and a -10 % loss must end as a fail once enough
// pairs have been measured.
TEST(GateSimulationTest, ASequentialLookThatCannotReachItsLevelExtends) {
  SequentialPlan plan{6, 16, 2};
  ThresholdSet limits;
  limits["throughput_rps"] = {3, 5, std::nullopt, std::nullopt};
  std::mt19937_64 rng(20261208);
  std::normal_distribution<double> noise(0, 0.02);
  int fails = 0, runs = 200;
  for (int s = 0; s < runs; ++s) {
    std::vector<double> a, b;
    auto add = [&](int n) {
      for (int i = 0; i < n; ++i) {
        a.push_back(1000 * std::exp(noise(rng)));
        b.push_back(900 * std::exp(noise(rng)));
      }
    };
    add(plan.count);
    int taken = plan.count;
    while (true) {
      RunFigures now{{{"throughput_rps", stats::median(b)}}, {{"throughput_rps", b}}};
      BaselineSample base;
      base.pooled = {{{"throughput_rps", stats::median(a)}}, {{"throughput_rps", a}}};
      base.paired = true;
      auto j = judge(now, &base, limits, {}, {plan.look_confidence(95)});
      if (taken == plan.count) {
        ASSERT_FALSE(j.checks.front().test->reaches_level);
        ASSERT_NE(j.verdict, Verdict::kFail);
      }
      auto step = next_step(j, false, false, taken, plan);
      if (taken == plan.count) {
        ASSERT_TRUE(step.more) << "a look that cannot reach its level";
      }
      if (!step.more) {
        fails += j.verdict == Verdict::kFail;
        break;
      }
      add(plan.next_batch(taken));
      taken += plan.next_batch(taken);
    }
  }
  std::printf("-10%% at 2%% noise, count 6 max_count 16: fail %d of %d\n", fails, runs);
  EXPECT_GE(fails, runs * 95 / 100);
}

// The power table of docs/statistics.md, printed by bench/power_table.sh (too
// slow for every test run: disabled, run with --gtest_also_run_disabled_tests).
TEST(GateSimulationTest, DISABLED_PowerTable) {
  // 32 and 48: what it takes to catch +10 % 19 times in 20 when launches differ.
  const int kPairCounts[] = {8, 12, 16, 24, 32, 48};
  struct Loss {
    const char* name;
    double tput, cost;
  };
  const Loss losses[] = {{"A/A", 0, 0},
                         {"-5% throughput", std::log(0.95), 0},
                         {"-10% throughput", std::log(0.90), 0},
                         {"+5% CPU/request", 0, std::log(1.05)},
                         {"+10% CPU/request", 0, std::log(1.10)}};
  for (double launch_sd : {0.01, 0.04}) {
    std::printf("\nlaunch sd %.0f%% (fail rate; in parentheses, inconclusive)\n", launch_sd * 100);
    std::printf("%-18s", "pairs");
    for (int pairs : kPairCounts) std::printf("%16d", pairs);
    std::printf("\n");
    for (const auto& loss : losses) {
      std::printf("%-18s", loss.name);
      for (int pairs : kPairCounts) {
        World w;
        w.launch_sd = launch_sd;
        w.throughput_change = loss.tput;
        w.cost_change = loss.cost;
        auto r = rates(w, pairs, 1000, 20261210 + pairs);
        char cell[32];
        std::snprintf(cell, sizeof cell, "%.1f%% (%.0f%%)", r.fail * 100, r.inconclusive * 100);
        std::printf("%16s", cell);
      }
      std::printf("\n");
    }
  }
}

}  // namespace
}  // namespace perfgate
