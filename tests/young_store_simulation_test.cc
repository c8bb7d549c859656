// Stored mode's noise model against a simulation (issue 39, findings 5 and 6;
// issue 46). A run's figure is 1000 x exp(day + launch): each day its own luck
// (day_sd), each launch within a day its own (launch_sd). Fixed seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <random>
#include <set>

#include "perfgate/core/run_noise.h"
#include "perfgate/core/verdict.h"
#include "perfgate/store/run_record.h"

namespace perfgate {
namespace {

struct World {
  double day_sd = 0;
  int calibration_days = 1;
  int window = 1;
  double launch_sd = 0.01;
  int calibration_runs = 5;
};

struct Rates {
  double significant = 0;  // the test's p below 5 %
  double fails = 0;
  double passes = 0;
  double judged = 0;  // a run-level test reached its level
  double prior = 0;   // the stated prior decided
};

ThresholdSet limits(double warn = 3, double fail = 5) {
  ThresholdSet t;
  t["throughput_rps"] = {warn, fail, std::nullopt, std::nullopt};
  return t;
}

void count(const MetricCheck& c, Rates& r) {
  r.significant += c.test && c.test->significant;
  r.fails += c.verdict == Verdict::kFail;
  r.passes += c.verdict == Verdict::kPass;
  r.judged += c.test && c.test->unit == "runs" && c.test->reaches_level;
  r.prior += c.test && c.test->spread == "prior";
}

void average(Rates& r, int trials) {
  for (double* rate : {&r.significant, &r.fails, &r.passes, &r.judged, &r.prior}) *rate /= trials;
}

// `trials` runs that lost `loss` (a fraction) of their throughput, judged each
// against a store of `world`: calibration jobs of five back-to-back runs, one
// job a day; a window of main's runs, one a day; the judged run on another day.
Rates simulate(const World& world, double loss, int trials, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z;
  auto run_on = [&](double day) { return 1000 * std::exp(day + world.launch_sd * z(rng)); };
  Rates r;
  for (int i = 0; i < trials; ++i) {
    std::vector<std::vector<double>> jobs(static_cast<size_t>(world.calibration_days));
    for (auto& job : jobs) {
      double day = world.day_sd * z(rng);
      for (int k = 0; k < world.calibration_runs; ++k) job.push_back(run_on(day));
    }
    BaselineSample base;
    auto& runs = base.run_figures["throughput_rps"];
    for (int k = 0; k < world.window; ++k) runs.push_back(run_on(world.day_sd * z(rng)));
    base.pooled.values["throughput_rps"] = runs;
    base.pooled.summary["throughput_rps"] = runs.front();
    base.run_noise["throughput_rps"] = pooled_run_noise(jobs);
    RunFigures now;
    double value = run_on(world.day_sd * z(rng)) * (1 - loss);
    now.values["throughput_rps"] = {value};
    now.summary["throughput_rps"] = value;
    count(judge(now, &base, limits(), {}).checks.at(0), r);
  }
  average(r, trials);
  return r;
}

// Nominal 5 % two-sided; a change at the warn limit fails at most 2.5 %. The
// margins are about three standard errors of 3000 trials.
constexpr int kTrials = 3000;
constexpr double kTypeOne = 0.05 + 0.012;
constexpr double kFailAtWarn = 0.025 + 0.009;

// Finding 5: one calibration job is one day. Its five runs share that day's
// luck, so their spread is the launches' alone; main's runs and the judged run
// come from other days. Before, the pool judged with the launches' spread:
// type-I 11-28 % with a day sd of 1.1-2 %. A pool of one day judges nothing
// now: the stated prior does (issue 46), wider than these runners' noise.
TEST(YoungStoreSimulation, OneCalibrationJobIsOneDay) {
  for (double day_sd : {0.011, 0.02}) {
    for (int window = 1; window <= 4; ++window) {
      World world{day_sd, 1, window};
      auto same = simulate(world, 0, kTrials, 39 + window);
      auto at_warn = simulate(world, 0.03, kTrials, 390 + window);
      SCOPED_TRACE("day sd " + std::to_string(day_sd) + ", window " + std::to_string(window));
      EXPECT_LE(same.significant, kTypeOne);
      EXPECT_LE(at_warn.fails, kFailAtWarn);
      EXPECT_EQ(same.judged, 1);
      if (window <= 2) {
        EXPECT_GT(same.prior, 0.9);  // the window rarely overrules it
      }
    }
  }
}

// Calibrations on three or five days: the day component is in the pool, and the
// pool, not the prior, judges a young window of one or two runs at its level.
TEST(YoungStoreSimulation, CalibrationsOnThreeDaysOrMoreHoldTheLevel) {
  for (int days : {3, 5}) {
    for (double day_sd : {0.0, 0.011, 0.02}) {
      for (int window = 1; window <= 2; ++window) {
        World world{day_sd, days, window};
        auto same = simulate(world, 0, kTrials, 3900 + days + window);
        auto at_warn = simulate(world, 0.03, kTrials, 39000 + days + window);
        SCOPED_TRACE(std::to_string(days) + " days, day sd " + std::to_string(day_sd) +
                     ", window " + std::to_string(window));
        EXPECT_EQ(same.judged, 1);
        EXPECT_LE(same.significant, kTypeOne);
        EXPECT_LE(at_warn.fails, kFailAtWarn);
        EXPECT_LT(same.prior, 0.05);  // only where the window's runs overrule the pool
      }
    }
  }
}

// ---- the stated prior from the second run (issue 46, item 2) ----------------

// The demo profile's relative limits (ci/profiles/hello.json): three tested
// metrics share the run's 95 % (98.33 % each).
ThresholdSet demo_limits() {
  ThresholdSet t;
  t["throughput_rps"] = {10.0, 25.0, std::nullopt, std::nullopt};
  t["latency_p99_ms"] = {25.0, 50.0, std::nullopt, std::nullopt};
  t["service_cpu_us_per_request"] = {25.0, 50.0, std::nullopt, std::nullopt};
  return t;
}

constexpr const char* kDemoMetrics[] = {"throughput_rps", "latency_p99_ms",
                                        "service_cpu_us_per_request"};

// A metric's figure `regression` (a fraction, in its worse direction) worse.
double worse_by(const std::string& metric, double figure, double regression) {
  return metric == "throughput_rps" ? figure * (1 - regression) : figure * (1 + regression);
}

// Per metric, the share of `trials` judged runs that failed: a window of
// `window` runs (of `days` days), each metric's whole runs scattering by
// `scatter` times its prior (log SD), the judged run `regression` times its
// fail limit worse on every metric. No pool: the prior judges.
std::map<std::string, double> demo_fails(int window, int days, double scatter, double regression,
                                         int trials, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z;
  auto limits = demo_limits();
  std::map<std::string, double> fails;
  for (int i = 0; i < trials; ++i) {
    BaselineSample base;
    RunFigures now;
    for (std::string metric : kDemoMetrics) {
      double sd = scatter * run_noise_prior(metric)->log_sd;
      auto& runs = base.run_figures[metric];
      for (int k = 0; k < window; ++k) runs.push_back(100 * std::exp(sd * z(rng)));
      base.pooled.values[metric] = runs;
      base.pooled.summary[metric] = runs.front();
      base.run_days[metric] = days;
      double fail = *limits.at(metric).fail_pct / 100;
      double value = worse_by(metric, 100 * std::exp(sd * z(rng)), regression * fail);
      now.values[metric] = {value};
      now.summary[metric] = value;
    }
    auto j = judge(now, &base, limits, {});
    for (const auto& c : j.checks) {
      // The prior, unless the window's runs scatter significantly more (F test).
      EXPECT_TRUE(c.test->spread == "prior" || (window >= 2 && c.test->spread == "window"))
          << c.test->method;
      fails[c.metric] += (c.verdict == Verdict::kFail) / static_cast<double>(trials);
    }
  }
  return fails;
}

// From the second run on, with whole runs scattering as much as the prior says
// or less: an unchanged build fails at most alpha / 2 per metric (2.5 % at 95 %,
// split over three: less). A change of twice the fail limit fails at least 95 %
// of the time where the prior allows it, ln(1 + 2F) - ln(1 + W) >= sqrt(2) s_p
// (t + 1.645): throughput's halving at the demo's 10 / 25 %. A doubling of p99
// or CPU per request (25 / 50 %, a prior of 12 %) sits at the edge of the
// second run's interval, so it fails about half the time there, and at least
// 95 % once four runs of four days narrow the prior (docs/statistics.md, "The
// stated prior"). Windows of one to four runs, of as many days or of one.
TEST(YoungStoreSimulation, ThePriorDecidesFromTheSecondRun) {
  for (int window = 1; window <= 4; ++window) {
    for (int days : std::set<int>{1, window}) {
      for (double scatter : {0.5, 1.0}) {
        SCOPED_TRACE("window " + std::to_string(window) + " of " + std::to_string(days) +
                     " days, scatter " + std::to_string(scatter) + " x the prior");
        auto seed = static_cast<uint64_t>(460 + 10 * window + days + static_cast<int>(scatter * 2));
        for (const auto& [metric, rate] : demo_fails(window, days, scatter, 0, 2000, seed))
          EXPECT_LE(rate, 0.025 + 0.01) << metric;
        for (const auto& [metric, rate] : demo_fails(window, days, scatter, 2, 2000, seed + 100)) {
          if (metric == "throughput_rps" || (window == 4 && days == 4 && scatter == 0.5))
            EXPECT_GE(rate, 0.95) << metric;
          else
            EXPECT_GE(rate, 0.45) << metric;
        }
      }
    }
  }
}

// A metric without a stated prior (none is stated for absolute-only or counted
// metrics) keeps the old rule: one or two runs and no pool, no test.
TEST(YoungStoreSimulation, AMetricWithoutAPriorHasNoTestOfOneOrTwoRuns) {
  EXPECT_FALSE(run_noise_prior("error_rate_pct"));
  EXPECT_FALSE(run_noise_prior("instructions_per_request"));
  for (std::string metric : kDemoMetrics) {
    auto prior = run_noise_prior(metric);
    ASSERT_TRUE(prior) << metric;
    EXPECT_TRUE(prior->prior);
    EXPECT_GE(prior->df, 1);
  }
}

// ---- the window drawn as select_baseline draws it (issue 46, item 1) --------

// A store's life: three calibration days of five runs (the pool), then main's
// runs, `per_day` a day, each judged against the last five eligible runs (the
// real eligibility rule: RunRecord::eligible_as_baseline with the run's
// shows_regression), the period's runs that are no baseline in its spread. After `history` main
// runs, an unchanged run and one that lost exactly the warn limit, each on a new day, are judged
// against that window.
struct History {
  double day_sd = 0.02;
  double run_sd = 0.02;
  int per_day = 1;
  int history = 10;
};

struct MainRun {
  double figure = 0;
  int day = 0;
  int index = 0;  // in main's history
};

// The judged run against `window` (newest first) with `others` (the period's runs
// that are no baseline) in its spread; `out` gets the check. Returns whether the
// store would keep the run as a baseline.
bool judged(const std::deque<MainRun>& window, const std::vector<MainRun>& others,
            const RunNoise& pool, double value, const ThresholdSet& t, MetricCheck* out = nullptr) {
  BaselineSample base;
  auto& runs = base.run_figures["throughput_rps"];
  std::set<int> days;
  for (const auto& run : window) {
    runs.push_back(run.figure);
    days.insert(run.day);
  }
  for (const auto& run : others)
    if (run.index > window.back().index)
      base.spread_figures["throughput_rps"].push_back(run.figure);
  base.pooled.values["throughput_rps"] = runs;
  base.pooled.summary["throughput_rps"] = runs.front();
  base.run_days["throughput_rps"] = static_cast<int>(days.size());
  base.run_noise["throughput_rps"] = pool;
  RunFigures now;
  now.values["throughput_rps"] = {value};
  now.summary["throughput_rps"] = value;
  auto j = judge(now, &base, t, {});
  if (out) *out = j.checks.at(0);
  RunRecord record;  // what the store would make of it
  record.verdict = j.verdict;
  record.regressed = shows_regression(j.checks);
  return record.eligible_as_baseline();
}

struct LifeRates {
  double type_one = 0;      // the unchanged run's test significant at 5 %
  double fail_at_warn = 0;  // the run at the warn limit failed
};

LifeRates simulate_life(const History& h, int trials, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z;
  auto t = limits(5, 8);
  LifeRates out;
  for (int i = 0; i < trials; ++i) {
    std::vector<std::vector<double>> jobs(3);
    std::vector<std::string> labels;
    for (auto& job : jobs) {
      double day = h.day_sd * z(rng);
      for (int k = 0; k < 5; ++k) job.push_back(1000 * std::exp(day + h.run_sd * z(rng)));
      labels.push_back(std::to_string(labels.size()));
    }
    RunNoise pool = pooled_run_noise(jobs, labels);
    std::deque<MainRun> window;
    std::vector<MainRun> others;
    int day = 3;
    double luck = h.day_sd * z(rng);
    for (int run = 0; run < h.history; ++run) {
      if (run > 0 && run % h.per_day == 0) {
        ++day;
        luck = h.day_sd * z(rng);
      }
      MainRun next{1000 * std::exp(luck + h.run_sd * z(rng)), day, run};
      if (!window.empty() && !judged(window, others, pool, next.figure, t)) {
        others.push_back(next);
        continue;
      }
      window.push_front(next);
      if (window.size() > 5) window.pop_back();
    }
    double probe_day = h.day_sd * z(rng);
    MetricCheck same, at_warn;
    judged(window, others, pool, 1000 * std::exp(probe_day + h.run_sd * z(rng)), t, &same);
    judged(window, others, pool, 0.95 * 1000 * std::exp(probe_day + h.run_sd * z(rng)), t,
           &at_warn);
    out.type_one += same.test && same.test->significant;
    out.fail_at_warn += at_warn.verdict == Verdict::kFail;
  }
  out.type_one /= trials;
  out.fail_at_warn /= trials;
  return out;
}

// Before issue 46 only passed runs were eligible, so the window kept the runs
// that landed near the old window: with day and run sd 2 % its type-I was
// 6.8-12.7 % (10.9-17.6 % with main several times a day), and a loss at the
// warn limit failed 5.9-9.1 %. Now a run is a baseline unless it surely
// regressed, and a window of runs of fewer days than runs keeps the pool.
TEST(YoungStoreSimulation, TheWindowAsSelectBaselineDrawsItHoldsTheLevel) {
  uint64_t seed = 4600;
  for (double day_sd : {0.01, 0.03}) {
    for (double run_sd : {0.01, 0.03}) {
      for (int per_day : {1, 4}) {
        History h{day_sd, run_sd, per_day, 12};
        SCOPED_TRACE("day sd " + std::to_string(day_sd) + ", run sd " + std::to_string(run_sd) +
                     ", " + std::to_string(per_day) + " a day");
        auto rates = simulate_life(h, 2000, ++seed);
        // The table in docs/statistics.md, "A run is a baseline unless it regressed".
        std::printf(
            "[ young store ] day sd %.0f%%, run sd %.0f%%, %d a day: type-I %5.1f%%, a loss "
            "at the warn limit fails %5.1f%%\n",
            day_sd * 100, run_sd * 100, per_day, rates.type_one * 100, rates.fail_at_warn * 100);
        EXPECT_LE(rates.type_one, 0.055 + 0.012);
        EXPECT_LE(rates.fail_at_warn, 0.025 + 0.01);
      }
    }
  }
}

}  // namespace
}  // namespace perfgate
