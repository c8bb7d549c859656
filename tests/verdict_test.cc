#include "perfgate/core/verdict.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "perfgate/core/spending_boundary.h"

namespace perfgate {
namespace {

// A run whose kept iterations scatter by +-`spread` (a fraction) around each
// figure, symmetrically, so that the median is the figure itself.
RunFigures figures(double rps, double p99_ms, double err_pct = 0, double spread = 0.005,
                   int n = 8) {
  RunFigures f;
  auto scatter = [&](const char* key, double figure) {
    auto& values = f.values[key];
    for (int i = 0; i < n; ++i) {
      double offset = n > 1 ? (2.0 * i - (n - 1)) / (n - 1) : 0;  // -1 .. +1
      values.push_back(figure * (1 + spread * offset));
    }
    f.summary[key] = figure;
  };
  scatter("throughput_rps", rps);
  scatter("latency_p99_ms", p99_ms);
  scatter("error_rate_pct", err_pct);
  return f;
}

// A baseline pooled from `runs` runs like figures(), whose own figures differ by
// +-`run_spread` from one run to the next. With `runs` 0, eight iterations and
// no run figures: the rank test of the iterations, whose bands most tests here
// check (a stored baseline of one or two runs and no pool decides nothing:
// young_store_simulation_test.cc).
BaselineSample baseline(double rps, double p99_ms, double err_pct = 0, int runs = 0,
                        double run_spread = 0.005) {
  BaselineSample b;
  b.pooled = figures(rps, p99_ms, err_pct, 0.005, 8 * std::max(runs, 1));
  for (const auto& [key, figure] : b.pooled.summary)
    for (int i = 0; i < runs; ++i) {
      double offset = runs > 1 ? (2.0 * i - (runs - 1)) / (runs - 1) : 0;
      b.run_figures[key].push_back(figure * (1 + run_spread * offset));
    }
  return b;
}

ThresholdSet limits() {
  ThresholdSet t;
  t["throughput_rps"].warn_pct = 3;
  t["throughput_rps"].fail_pct = 5;
  t["latency_p99_ms"].warn_pct = 10;
  t["latency_p99_ms"].fail_pct = 20;
  t["latency_p99_ms"].max = 50;
  t["error_rate_pct"].max = 0.1;
  return t;
}

const MetricCheck& check(const Judgement& j, const std::string& key) {
  for (const auto& c : j.checks)
    if (c.metric == key) return c;
  throw std::runtime_error("no check " + key);
}

TEST(VerdictTest, NoBaselinePassesWithAbsoluteLimitsOnly) {
  auto j = judge(figures(1000, 10), nullptr, limits(), {});
  EXPECT_EQ(j.verdict, Verdict::kPass);
  EXPECT_FALSE(check(j, "throughput_rps").baseline);
  EXPECT_FALSE(check(j, "throughput_rps").test);
  EXPECT_NE(check(j, "throughput_rps").message.find("no baseline"), std::string::npos);
}

TEST(VerdictTest, AbsoluteMaxFailsWithoutBaseline) {
  auto j = judge(figures(1000, 62.5), nullptr, limits(), {});
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_EQ(check(j, "latency_p99_ms").verdict, Verdict::kFail);
  EXPECT_NE(check(j, "latency_p99_ms").message.find("above the max 50.000 ms"), std::string::npos);
}

TEST(VerdictTest, ThroughputDropBands) {
  auto base = baseline(1000, 10);
  EXPECT_EQ(judge(figures(980, 10), &base, limits(), {}).verdict, Verdict::kPass);  // -2%
  EXPECT_EQ(judge(figures(960, 10), &base, limits(), {}).verdict, Verdict::kWarn);  // -4%
  auto j = judge(figures(940, 10), &base, limits(), {});                            // -6%
  EXPECT_EQ(j.verdict, Verdict::kFail);
  const auto& c = check(j, "throughput_rps");
  EXPECT_NEAR(*c.change_pct, -6.0, 1e-9);
  EXPECT_NE(c.message.find("fail limit -5%"), std::string::npos);
  ASSERT_TRUE(c.test);
  EXPECT_TRUE(c.test->significant);
  EXPECT_LT(c.test->p_value, 0.001);
  EXPECT_LT(c.test->ci_low_pct, -6.0);
  EXPECT_GT(c.test->ci_high_pct, -7.0);
  EXPECT_LT(c.test->ci_high_pct, -5.0);
  // Two tested metrics share the 95 % budget: each interval is at 97.5 %.
  EXPECT_NE(c.message.find("97.5% CI"), std::string::npos) << c.message;
}

TEST(VerdictTest, ImprovementsNeverFail) {
  auto base = baseline(1000, 10);
  auto j = judge(figures(2000, 5), &base, limits(), {});
  EXPECT_EQ(j.verdict, Verdict::kPass);
  EXPECT_NEAR(*check(j, "latency_p99_ms").change_pct, -50.0, 1e-9);
  EXPECT_TRUE(check(j, "latency_p99_ms").test->significant);
}

TEST(VerdictTest, LatencyGrowthBands) {
  auto base = baseline(1000, 10);
  EXPECT_EQ(judge(figures(1000, 11.5), &base, limits(), {}).verdict, Verdict::kWarn);
  EXPECT_EQ(judge(figures(1000, 12.5), &base, limits(), {}).verdict, Verdict::kFail);
}

// The decision table: past fail and significant fails; past fail within the
// noise warns; past warn warns whatever the noise; inside warn passes.
TEST(VerdictTest, PastFailButWithinTheNoiseOnlyWarns) {
  auto base = baseline(1000, 10);
  // Iterations scattered by +-40%: a 6% drop is not told from chance.
  auto j = judge(figures(940, 10, 0, 0.4), &base, limits(), {});
  const auto& c = check(j, "throughput_rps");
  ASSERT_TRUE(c.test);
  EXPECT_FALSE(c.test->significant);
  EXPECT_GT(c.test->p_value, 0.05);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  // So noisy that it could not have told a 5 % change from none: inconclusive.
  EXPECT_TRUE(c.inconclusive);
  EXPECT_NE(c.message.find("inconclusive"), std::string::npos) << c.message;
  EXPECT_EQ(j.verdict, Verdict::kWarn);
}

TEST(VerdictTest, IntervalOfAPositiveFigureStopsAtMinus100Percent) {
  auto base = baseline(1000, 10);
  // Three slow baseline iterations out of eight (40 ms against a median of 10):
  // the shift interval of a steady now would reach down to about -300 %.
  base.pooled.values["latency_p99_ms"] = {10, 10, 10, 10, 10, 40, 40, 40};
  auto j = judge(figures(1000, 10), &base, limits(), {});
  const auto& c = check(j, "latency_p99_ms");
  ASSERT_TRUE(c.test);
  EXPECT_DOUBLE_EQ(c.test->ci_low_pct, -100.0);
}

TEST(VerdictTest, TooFewIterationsCannotFail) {
  auto base = baseline(1000, 10);
  // One iteration against eight: the rank test's smallest p-value is 2/9.
  auto j = judge(figures(500, 10, 0, 0.005, 1), &base, limits(), {});
  EXPECT_EQ(check(j, "throughput_rps").verdict, Verdict::kWarn);
  EXPECT_EQ(check(j, "throughput_rps").test->n_now, 1);
}

TEST(VerdictTest, PastWarnWarnsEvenWhenNotSignificant) {
  auto base = baseline(1000, 10);
  auto j = judge(figures(960, 10, 0, 0.4), &base, limits(), {});
  EXPECT_EQ(check(j, "throughput_rps").verdict, Verdict::kWarn);
}

TEST(VerdictTest, SignificantChangeInsideTheLimitsPasses) {
  auto base = baseline(1000, 10);
  auto j = judge(figures(985, 10), &base, limits(), {});  // -1.5%, tight iterations
  EXPECT_TRUE(check(j, "throughput_rps").test->significant);
  EXPECT_EQ(j.verdict, Verdict::kPass);
}

// Iterations of one run share its luck; whole runs that differ by +-8% from each
// other make a 6% drop of one more run unremarkable, however tight its iterations.
TEST(VerdictTest, RunToRunNoiseOfThreeOrMoreBaselineRunsCounts) {
  auto noisy = baseline(1000, 10, 0, 5, 0.08);
  auto j = judge(figures(940, 10), &noisy, limits(), {});
  const auto& c = check(j, "throughput_rps");
  ASSERT_TRUE(c.test);
  EXPECT_EQ(c.test->baseline_runs, 5);
  EXPECT_NE(c.test->method.find("run-level"), std::string::npos);
  EXPECT_FALSE(c.test->significant);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  auto steady = baseline(1000, 10, 0, 5, 0.005);
  EXPECT_EQ(check(judge(figures(940, 10), &steady, limits(), {}), "throughput_rps").verdict,
            Verdict::kFail);
}

TEST(VerdictTest, HigherConfidenceNeedsStrongerEvidence) {
  auto base = baseline(1000, 10, 0, 5, 0.015);
  auto now = figures(900, 10);
  auto c95 = check(judge(now, &base, limits(), {}, {95}), "throughput_rps");
  auto c999 = check(judge(now, &base, limits(), {}, {99.9}), "throughput_rps");
  EXPECT_EQ(c95.verdict, Verdict::kFail);
  EXPECT_EQ(c999.verdict, Verdict::kWarn);
  EXPECT_GT(c999.test->ci_high_pct - c999.test->ci_low_pct,
            c95.test->ci_high_pct - c95.test->ci_low_pct);
}

TEST(VerdictTest, DriftPastTheFailLimitWarns) {
  auto recent = baseline(1000, 10);
  auto older = baseline(1100, 10);
  auto j = judge(figures(990, 10), &recent, limits(), {}, {}, &older);  // -1%, but -10% since
  const auto& c = check(j, "throughput_rps");
  ASSERT_TRUE(c.drift_pct);
  EXPECT_NEAR(*c.drift_pct, -10.0, 1e-9);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_NE(c.message.find("drifted -10.0%"), std::string::npos) << c.message;
  // Within the limit since then: nothing to say.
  auto close = baseline(1020, 10);
  EXPECT_EQ(judge(figures(990, 10), &recent, limits(), {}, {}, &close).verdict, Verdict::kPass);
}

TEST(VerdictTest, ZeroBaselineHasNoRelativeChange) {
  auto base = baseline(1000, 10, 0);
  auto j = judge(figures(1000, 10, 0.05), &base, limits(), {});
  EXPECT_FALSE(check(j, "error_rate_pct").change_pct);
  EXPECT_FALSE(check(j, "error_rate_pct").test);
  EXPECT_EQ(j.verdict, Verdict::kPass);
  EXPECT_EQ(judge(figures(1000, 10, 0.5), &base, limits(), {}).verdict, Verdict::kFail);
}

TEST(VerdictTest, UngatedMetricsAreReportedNotJudged) {
  auto now = figures(1000, 10);
  now.summary["latency_p50_ms"] = 99;
  now.values["latency_p50_ms"] = {99, 99, 99};
  auto base = baseline(1000, 10);
  base.pooled.summary["latency_p50_ms"] = 1;
  base.pooled.values["latency_p50_ms"] = {1, 1, 1};
  auto j = judge(now, &base, limits(), {});
  EXPECT_FALSE(check(j, "latency_p50_ms").gated);
  EXPECT_EQ(check(j, "latency_p50_ms").verdict, Verdict::kPass);
  EXPECT_EQ(j.verdict, Verdict::kPass);
}

TEST(VerdictTest, ServiceCostIsGatedWhenTheProfileSetsLimits) {
  auto now = figures(1000, 10);
  now.summary["service_cpu_us_per_request"] = 60;
  now.values["service_cpu_us_per_request"] = {59, 60, 60, 61, 60, 59, 61, 60};
  auto base = baseline(1000, 10);
  base.pooled.summary["service_cpu_us_per_request"] = 40;
  base.pooled.values["service_cpu_us_per_request"] = {39, 40, 40, 41, 40, 39, 41, 40};
  auto t = limits();
  t["service_cpu_us_per_request"].fail_pct = 20;
  auto j = judge(now, &base, t, {});
  const auto& c = check(j, "service_cpu_us_per_request");
  EXPECT_TRUE(c.gated);
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_EQ(j.verdict, Verdict::kFail);
}

TEST(VerdictTest, SaturationTurnsFailIntoWarnThatSaysWhy) {
  auto base = baseline(1000, 10);
  Saturation s{true, {"generator thread 0 at 97% of a core"}, {}};
  auto j = judge(figures(500, 10), &base, limits(), s);
  EXPECT_EQ(j.verdict, Verdict::kWarn);
  const auto& c = check(j, "throughput_rps");
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_NE(c.message.find("saturated"), std::string::npos);
  EXPECT_NE(c.message.find("97%"), std::string::npos);
  ASSERT_FALSE(j.notes.empty());
}

TEST(VerdictTest, SaturatedPassIsStillInconclusive) {
  Saturation s{true, {"steal 12%"}, {}};
  EXPECT_EQ(judge(figures(1000, 10), nullptr, limits(), s).verdict, Verdict::kWarn);
}

// Paired mode: both sides drift together from one pair to the next (the runner's
// neighbours come and go), while the candidate is a steady 7 % slower within each pair.
struct PairedRuns {
  RunFigures now;
  BaselineSample base;
};
PairedRuns drifting_pairs(double ratio) {
  PairedRuns p;
  for (int i = 0; i < 8; ++i) {
    double level = 1000 + 60 * i;  // 1000 .. 1420 req/s, pair by pair
    p.base.pooled.values["throughput_rps"].push_back(level);
    // Each pair a little off the ratio, differently: no ties among the ratios.
    p.now.values["throughput_rps"].push_back(level * ratio * (1 + 0.001 * (i - 3.5)));
  }
  p.base.pooled.summary["throughput_rps"] = 1210;
  p.now.summary["throughput_rps"] = 1210 * ratio;
  p.base.paired = true;
  return p;
}

TEST(VerdictTest, PairedRatiosSeeAChangeThatDriftHides) {
  ThresholdSet t;
  t["throughput_rps"].fail_pct = 5;
  auto p = drifting_pairs(0.93);
  auto j = judge(p.now, &p.base, t, {});
  const auto& c = check(j, "throughput_rps");
  ASSERT_TRUE(c.test);
  EXPECT_NE(c.test->method.find("wilcoxon-signed-rank"), std::string::npos) << c.test->method;
  EXPECT_NEAR(c.test->p_value, 2.0 / 256, 1e-12);  // all 8 pairs one way, exact
  EXPECT_NEAR(c.test->ci_low_pct, -7.2, 0.2);
  EXPECT_NEAR(c.test->ci_high_pct, -6.8, 0.2);
  EXPECT_EQ(c.test->n_now, 8);
  EXPECT_EQ(c.test->n_base, 8);
  EXPECT_EQ(j.verdict, Verdict::kFail) << c.message;
  // The same values as independent samples: the drift swamps the 7 %.
  p.base.paired = false;
  auto unpaired = judge(p.now, &p.base, t, {});
  EXPECT_GT(check(unpaired, "throughput_rps").test->p_value, 0.05);
  EXPECT_EQ(unpaired.verdict, Verdict::kWarn);
}

TEST(VerdictTest, PairedSidesThatAgreePass) {
  ThresholdSet t;
  t["throughput_rps"].warn_pct = 3;
  t["throughput_rps"].fail_pct = 5;
  auto p = drifting_pairs(1.0);
  auto j = judge(p.now, &p.base, t, {});
  EXPECT_EQ(j.verdict, Verdict::kPass) << check(j, "throughput_rps").message;
  EXPECT_GT(check(j, "throughput_rps").test->p_value, 0.5);
}

TEST(VerdictTest, PairedSidesOfUnequalLengthHaveNoTest) {
  ThresholdSet t;
  t["throughput_rps"].fail_pct = 5;
  auto p = drifting_pairs(0.5);
  p.base.pooled.values["throughput_rps"].pop_back();
  auto j = judge(p.now, &p.base, t, {});
  EXPECT_FALSE(check(j, "throughput_rps").test);
  // Two pooled figures are no test of pairs: undecided, never a fail (it was
  // "the limit alone decides", which failed a busy machine's run).
  EXPECT_EQ(j.verdict, Verdict::kWarn);
  EXPECT_TRUE(check(j, "throughput_rps").inconclusive);
}

// Paired pairs whose log-ratios are `ratios` (as fractions of change), around a
// level that moves, so that the medians' ratio and the pairs' estimate differ.
struct Pairs {
  RunFigures now;
  BaselineSample base;
};
Pairs pairs_of(const std::vector<double>& changes) {
  Pairs p;
  for (size_t i = 0; i < changes.size(); ++i) {
    double level = 1000 + 40 * static_cast<double>(i);
    p.base.pooled.values["throughput_rps"].push_back(level);
    p.now.values["throughput_rps"].push_back(level * (1 + changes[i]));
  }
  for (auto* f : {&p.now, &p.base.pooled}) {
    auto v = f->values["throughput_rps"];
    std::sort(v.begin(), v.end());
    f->summary["throughput_rps"] =
        v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  p.base.paired = true;
  return p;
}

ThresholdSet throughput_limits(double warn, double fail) {
  ThresholdSet t;
  t["throughput_rps"].warn_pct = warn;
  t["throughput_rps"].fail_pct = fail;
  return t;
}

// Issue 26, finding 3: the limit judges the estimate whose interval is reported
// (the pairs' Hodges-Lehmann), not the ratio of the two sides' medians.
TEST(VerdictTest, TheLimitJudgesTheEstimateWhoseIntervalIsReported) {
  auto p = pairs_of({-0.02, -0.021, -0.019, -0.022, -0.018, -0.02, -0.021, -0.019, -0.02, -0.02});
  p.now.summary["throughput_rps"] *= 0.9;  // medians 10 % apart, pairs 2 %
  auto j = judge(p.now, &p.base, throughput_limits(3, 5), {});
  const auto& c = check(j, "throughput_rps");
  ASSERT_TRUE(c.test);
  // change_pct is what the two figures say (the contract's); the limits judge
  // the test's estimate, the centre of the interval beside it.
  EXPECT_NEAR(*c.change_pct, -11.7, 0.1);
  EXPECT_NEAR(*judged_change_pct(c), -2.0, 0.1);
  EXPECT_DOUBLE_EQ(*judged_change_pct(c), c.test->estimate_pct);
  EXPECT_EQ(c.verdict, Verdict::kPass) << c.message;
}

// Issue 26, finding 4: a fail needs the interval wholly past the warn limit, so a
// change near the warn limit with a loose interval does not fail, and one surely
// past it fails. Issue 39: neither surely past nor surely within, it is
// inconclusive and says what would decide, computed for a fail.
TEST(VerdictTest, AFailNeedsTheIntervalWhollyPastTheWarnLimit) {
  // Pairs around -5.5 %: past fail (5 %), but the interval (-8.5..-2.55 %, R's
  // exact algorithm) reaches inside the warn limit (3 %).
  auto loose = pairs_of({0.005, -0.115, -0.01, -0.1, -0.025, -0.085, -0.055, -0.0475, -0.0625,
                         -0.055, -0.0025, -0.1075});
  auto j = judge(loose.now, &loose.base, throughput_limits(3, 5), {});
  const auto& c = check(j, "throughput_rps");
  EXPECT_LT(*c.change_pct, -5);
  EXPECT_GT(c.test->ci_high_pct, -3);
  EXPECT_EQ(c.verdict, Verdict::kWarn) << c.message;
  EXPECT_TRUE(c.inconclusive);
  // Half-width 3 %, detectable 4.29 %: it fails with 80 % power a change of
  // max(5, 3 + 3) + 1.29 = 7.3 %, and decides once 4.29 fits in 5 - 3:
  // 12 x (4.29 / 2)^2 = 55 pairs.
  EXPECT_NE(c.message.find("it would fail only a change of 7.3% (80% power at 95%)"),
            std::string::npos)
      << c.message;
  EXPECT_NE(c.message.find("about 55 pairs would decide (this run has 12)"), std::string::npos)
      << c.message;
  auto tight = pairs_of({-0.060, -0.061, -0.059, -0.062, -0.058, -0.060, -0.061, -0.059, -0.060,
                         -0.060, -0.061, -0.059});
  EXPECT_EQ(judge(tight.now, &tight.base, throughput_limits(3, 5), {}).verdict, Verdict::kFail);
}

// Issue 46, item 3: at a sequential look the fail limit judges the near end of
// the interval at the look's estimate level, not the estimate, which would
// get a chance to cross at every look. One look (no estimate level) judges
// the estimate as before; a level of (nearly) nothing is the estimate again.
TEST(VerdictTest, ASequentialLookJudgesTheFailLimitOnTheEstimatesBound) {
  auto p = pairs_of({-0.026, -0.076, -0.041, -0.061, -0.046, -0.056, -0.036, -0.066, -0.048, -0.054,
                     -0.043, -0.058});
  auto once = judge(p.now, &p.base, throughput_limits(3, 5), {});
  const auto& one = check(once, "throughput_rps");
  EXPECT_LT(*judged_change_pct(one), -5);  // -5.1 %: past the fail limit
  EXPECT_LT(one.test->ci_high_pct, -3);    // and surely past the warn limit
  EXPECT_EQ(one.verdict, Verdict::kFail) << one.message;
  EXPECT_FALSE(one.test->estimate_bound);  // one look: nothing else to judge

  DecisionSettings look{95};
  look.estimate_level = 60;
  auto seq = judge(p.now, &p.base, throughput_limits(3, 5), {}, look);
  const auto& c = check(seq, "throughput_rps");
  ASSERT_TRUE(c.test->estimate_bound);
  EXPECT_EQ(c.test->estimate_bound->confidence_pct, 60);
  EXPECT_GT(c.test->estimate_bound->ci_high_pct, -5);  // its near end is not past -5 %
  EXPECT_LT(c.test->estimate_bound->ci_low_pct, *c.change_pct);
  EXPECT_DOUBLE_EQ(*c.change_pct, *one.change_pct);  // the same estimate and interval
  EXPECT_DOUBLE_EQ(c.test->ci_high_pct, one.test->ci_high_pct);
  EXPECT_EQ(c.verdict, Verdict::kWarn) << c.message;
  EXPECT_TRUE(c.inconclusive);
  EXPECT_NE(c.message.find("the estimate is past the limit but not the near end of its 60% "
                           "interval, which a sequential look's fail needs"),
            std::string::npos)
      << c.message;

  look.estimate_level = kLeastLevelPct;
  auto nothing = judge(p.now, &p.base, throughput_limits(3, 5), {}, look);
  EXPECT_EQ(check(nothing, "throughput_rps").verdict, Verdict::kFail);
  EXPECT_NE(check(nothing, "throughput_rps")
                .message.find("; past it at the sequential look's "
                              "estimate level"),
            std::string::npos);
}

// Warns have a noise model: past the warn limit but with an interval that
// reaches zero is noise, not a warning.
TEST(VerdictTest, PastWarnWithinTheNoisePasses) {
  // The pairs' estimate is -3.76 %, 95 % CI -8.0..+0.5 % (R's exact algorithm,
  // the signed-rank distribution counted in Python).
  auto p = pairs_of({0.03, -0.11, 0.02, -0.10, 0.01, -0.09, -0.05, -0.06, 0.04, -0.08, -0.07, 0.0});
  auto j = judge(p.now, &p.base, throughput_limits(3, 15), {});
  const auto& c = check(j, "throughput_rps");
  EXPECT_LT(*c.change_pct, -3);
  EXPECT_GT(c.test->ci_high_pct, 0);
  EXPECT_EQ(c.verdict, Verdict::kPass) << c.message;
  EXPECT_FALSE(c.inconclusive);
}

// Issue 26, finding 6: a run that could not have failed is inconclusive (warn),
// never a pass, and says what would decide.
TEST(VerdictTest, ARunThatCouldNotHaveFailedIsInconclusive) {
  auto p = pairs_of({0.2, -0.25, 0.1, -0.15, 0.3, -0.2, 0.05, -0.1, 0.15, -0.3, 0.0, 0.12});
  auto j = judge(p.now, &p.base, throughput_limits(5, 8), {});
  const auto& c = check(j, "throughput_rps");
  ASSERT_TRUE(c.test && c.test->detectable_pct);
  EXPECT_GT(*c.test->detectable_pct, 8);
  EXPECT_TRUE(c.inconclusive);
  EXPECT_EQ(j.verdict, Verdict::kWarn);
  EXPECT_NE(c.message.find("inconclusive"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("pairs would decide (this run has 12)"), std::string::npos) << c.message;
}

// Issue 39, finding 3: a pass needs the interval's regressing end within the
// fail limit. This run could tell a 5 % change from none (detectable under 5 %),
// and its estimate is inside the warn limit, so it passed before; but its
// interval reaches past -5 %, so a change at the fail limit is not ruled out.
TEST(VerdictTest, APassNeedsTheIntervalWithinTheFailLimit) {
  auto p =
      pairs_of({-0.09, 0.05, -0.075, 0.035, -0.06, 0.02, -0.05, 0.01, -0.04, 0.0, -0.03, -0.01});
  auto j = judge(p.now, &p.base, throughput_limits(3, 5), {});
  const auto& c = check(j, "throughput_rps");
  ASSERT_TRUE(c.test && c.test->detectable_pct);
  ASSERT_LT(*c.test->detectable_pct, 5) << c.message;
  ASSERT_GT(*c.change_pct, -3) << c.message;
  ASSERT_LT(c.test->ci_low_pct, -5) << c.message;
  EXPECT_EQ(c.verdict, Verdict::kWarn) << c.message;
  EXPECT_TRUE(c.inconclusive);
  EXPECT_NE(c.message.find("neither surely within nor surely past it"), std::string::npos)
      << c.message;
  // The same pairs, a little tighter: surely within -5 %, a pass.
  auto tight = pairs_of(
      {-0.035, 0.002, -0.03, -0.006, -0.025, -0.01, -0.02, -0.012, -0.018, -0.014, -0.016, -0.015});
  auto t = judge(tight.now, &tight.base, throughput_limits(3, 5), {});
  EXPECT_EQ(t.verdict, Verdict::kPass) << check(t, "throughput_rps").message;
}

// A paired metric missing from some pairs has no test: its two figures alone
// never fail it (a run failed on service CPU +51.8 % with no interval, beside a
// busy neighbour); it is inconclusive. An absolute limit still fails.
TEST(VerdictTest, APairedMetricWithoutATestIsInconclusiveNeverAFail) {
  auto p = pairs_of({0, 0, 0, 0, 0, 0, 0, 0});
  p.now.summary["service_cpu_us_per_request"] = 150;
  p.base.pooled.summary["service_cpu_us_per_request"] = 100;
  ThresholdSet limits;
  limits["service_cpu_us_per_request"].warn_pct = 5;
  limits["service_cpu_us_per_request"].fail_pct = 8;
  auto j = judge(p.now, &p.base, limits, {});
  const auto& c = check(j, "service_cpu_us_per_request");
  EXPECT_FALSE(c.test);
  EXPECT_EQ(c.verdict, Verdict::kWarn) << c.message;
  EXPECT_TRUE(c.inconclusive);
  EXPECT_NE(c.message.find("not measured in every pair"), std::string::npos) << c.message;
  // Stored mode keeps the figures' comparison (one value a side is its design).
  p.base.paired = false;
  EXPECT_EQ(check(judge(p.now, &p.base, limits, {}), "service_cpu_us_per_request").verdict,
            Verdict::kFail);
}

// A count past a million is no plan: the message says the noise is the problem.
TEST(VerdictTest, AnAbsurdCountOfPairsIsNotPrinted) {
  auto p = pairs_of({0.5, -0.4, 0.3, -0.5, 0.45, -0.35, 0.2, -0.3, 0.4, -0.45, 0.1, -0.2});
  auto j = judge(p.now, &p.base, throughput_limits(0.05, 0.1), {});
  const auto& c = check(j, "throughput_rps");
  EXPECT_TRUE(c.inconclusive);
  EXPECT_NE(c.message.find("more than a million pairs would decide"), std::string::npos)
      << c.message;
  // And what decides instead, within minutes.
  EXPECT_NE(c.message.find(", more than a run takes: the counted cost (cost.instrument, "
                           "docs/cost.md) decides the service's work per request"),
            std::string::npos)
      << c.message;
}

// The detectable change is the one caught with 80 % power, 1.43 half-widths at
// 95 % (SciPy: 1 + norm.ppf(0.8) / norm.ppf(0.975) = 1.4294064790024281).
TEST(VerdictTest, DetectableChangeIsAtEightyPercentPower) {
  auto p = pairs_of(
      {-0.01, 0.01, -0.005, 0.005, 0.0, 0.002, -0.002, 0.008, -0.008, 0.003, -0.003, 0.001});
  auto j = judge(p.now, &p.base, throughput_limits(3, 5), {});
  const auto& t = *check(j, "throughput_rps").test;
  EXPECT_NEAR(*t.detectable_pct, (t.ci_high_pct - t.ci_low_pct) / 2 * 1.4294064790024281, 1e-9);
}

// Issue 26, finding 1: six pairs at a look's 99.17 % cannot reach the level
// (p >= 2/64): the look neither fails nor passes, it is inconclusive.
TEST(VerdictTest, ALevelOutOfReachIsInconclusiveNotADecision) {
  auto p = pairs_of({-0.10, -0.11, -0.09, -0.10, -0.12, -0.08});
  auto j = judge(p.now, &p.base, throughput_limits(3, 5), {}, {99.1666666667});
  const auto& c = check(j, "throughput_rps");
  ASSERT_TRUE(c.test);
  EXPECT_FALSE(c.test->reaches_level);
  EXPECT_FALSE(c.test->detectable_pct);
  EXPECT_EQ(c.verdict, Verdict::kWarn) << c.message;
  EXPECT_NE(c.message.find("cannot reach"), std::string::npos) << c.message;
  EXPECT_EQ(judge(p.now, &p.base, throughput_limits(3, 5), {}, {95}).verdict, Verdict::kFail);
}

// Issue 26, finding 5: every tested metric spends a share of one budget.
TEST(VerdictTest, TestedMetricsShareOneFalseFailBudget) {
  auto base = baseline(1000, 10);
  auto j = judge(figures(1000, 10), &base, limits(), {});
  EXPECT_EQ(j.family, 2);  // throughput and p99; the error-rate max keeps its own alpha
  EXPECT_NEAR(j.confidence_pct, 97.5, 1e-9);
  EXPECT_NEAR(check(j, "throughput_rps").test->confidence_pct, j.confidence_pct, 1e-12);
  EXPECT_EQ(family_bound(limits()), 2);
  EXPECT_NEAR(family_confidence(95, 1), 95, 1e-12);
  EXPECT_NEAR(family_confidence(95, 4), 98.75, 1e-12);
  EXPECT_EQ(min_pairs_to_reach(95), 6);     // 2/2^6 = 0.031 < 0.05
  EXPECT_EQ(min_pairs_to_reach(98.75), 8);  // 2/2^8 = 0.0078 < 0.0125
  EXPECT_EQ(min_pairs_to_reach(99.1666), 8);
}

// Issue 26, finding 5: an absolute error-rate max is judged on the binomial
// bound of the counted failures, so that a rate just over the max in one run
// of thousands of requests does not fail. Issue 46: nor does it warn unless
// its bound at 95 % is past the max (plausibly past it).
TEST(VerdictTest, AnErrorRateMaxFailsOnlyWhenSurelyPast) {
  ThresholdSet t;
  t["error_rate_pct"].max = 0.1;
  RunFigures near = figures(1000, 10, 0.111);
  near.attempts = 36000;
  near.failures = 40;  // 0.111 %: Wilson's lower bound at 95 % is below 0.1 %
  auto j = judge(near, nullptr, t, {});
  EXPECT_EQ(check(j, "error_rate_pct").verdict, Verdict::kPass)
      << check(j, "error_rate_pct").message;
  EXPECT_NE(check(j, "error_rate_pct").message.find("within the noise of 36000 requests"),
            std::string::npos);
  RunFigures plausible = figures(1000, 10, 0.131);
  plausible.attempts = 36000;
  plausible.failures = 47;  // 0.131 %: the bound is 0.103 % at 95 %, 0.098 % at 97.5 %
  auto warned = judge(plausible, nullptr, t, {});
  EXPECT_EQ(check(warned, "error_rate_pct").verdict, Verdict::kWarn)
      << check(warned, "error_rate_pct").message;
  EXPECT_NE(check(warned, "error_rate_pct").message.find("plausibly but not surely past it"),
            std::string::npos)
      << check(warned, "error_rate_pct").message;
  RunFigures far = figures(1000, 10, 0.3);
  far.attempts = 36000;
  far.failures = 108;  // 0.3 %: the bound is well past the max
  EXPECT_EQ(judge(far, nullptr, t, {}).verdict, Verdict::kFail);
}

// A p99 of windows with 5 responses beyond it each is the slowest few requests:
// its relative limits are not judged, whichever way it moved, and the line says
// what would make it judgeable. With enough responses the same figures are judged.
TEST(VerdictTest, AQuantileOfTooFewResponsesIsNotJudged) {
  auto base = baseline(1000, 10);
  for (double p99 : {10.0, 30.0}) {
    auto now = figures(1000, p99);
    now.unit_responses.assign(8, 500);  // 5 beyond the p99 a window
    auto j = judge(now, &base, limits(), {});
    const auto& c = check(j, "latency_p99_ms");
    EXPECT_EQ(c.verdict, Verdict::kWarn) << c.message;
    EXPECT_TRUE(c.inconclusive);
    EXPECT_NE(c.message.find("rests on 5.0 responses beyond it a window (of 500); judging it "
                             "needs 10, 1000 responses a window"),
              std::string::npos)
        << c.message;
    now.unit_responses.assign(8, 1000);
    EXPECT_EQ(check(judge(now, &base, limits(), {}), "latency_p99_ms").verdict,
              p99 > 10 ? Verdict::kFail : Verdict::kPass);
  }
  // Paired, the pairs' test stands on a thin tail: its ratios carry the tail's
  // scatter, and the signed-rank test measures it.
  auto paired_base = baseline(1000, 10);
  paired_base.paired = true;
  for (double p99 : {10.0, 30.0}) {
    auto now = figures(1000, p99);
    now.unit_responses.assign(8, 500);
    auto pj = judge(now, &paired_base, limits(), {});
    const auto& c = check(pj, "latency_p99_ms");
    EXPECT_EQ(c.test->unit, "pairs");
    EXPECT_EQ(c.verdict, p99 > 10 ? Verdict::kFail : Verdict::kPass) << c.message;
  }
  // An absolute limit still holds on a thin tail: 60 ms is past the 50 ms max.
  auto now = figures(1000, 60);
  now.unit_responses.assign(8, 500);
  auto j = judge(now, &base, limits(), {});
  const auto& c = check(j, "latency_p99_ms");
  EXPECT_EQ(c.verdict, Verdict::kFail) << c.message;
  EXPECT_FALSE(c.inconclusive);
}

// Run-level tests rest on the whole run: 8 windows of 200 responses make 16
// responses beyond the run's p99, enough, where one window's 2 would not be.
TEST(VerdictTest, ARunLevelTestCountsTheWholeRunsTail) {
  auto base = baseline(1000, 10, 0, 5, 0.01);
  auto now = figures(1000, 10);
  now.unit_responses.assign(8, 200);
  auto j = judge(now, &base, limits(), {});
  const auto& c = check(j, "latency_p99_ms");
  ASSERT_TRUE(c.test);
  EXPECT_EQ(c.test->unit, "runs");
  EXPECT_FALSE(c.inconclusive) << c.message;
}

TEST(VerdictTest, ExitCodesAndOrdering) {
  EXPECT_EQ(to_int(exit_status_of(Verdict::kPass)), 0);
  EXPECT_EQ(to_int(exit_status_of(Verdict::kFail)), 1);
  EXPECT_EQ(to_int(exit_status_of(Verdict::kWarn)), 2);
  EXPECT_EQ(to_int(exit_status_of(Verdict::kError)), 3);
  EXPECT_EQ(worst(Verdict::kWarn, Verdict::kFail), Verdict::kFail);
  EXPECT_EQ(worst(Verdict::kError, Verdict::kFail), Verdict::kError);
  EXPECT_EQ(to_string(Verdict::kWarn), "warn");
}

}  // namespace
}  // namespace perfgate

namespace perfgate {
namespace {

// Issue 28: `count: 1` printed "change this run detects: throughput_rps 0.0%":
// one iteration against baseline runs of one iteration each, alike, gives an
// interval of no width, which claims no detectable change of any size.
TEST(VerdictTest, AnIntervalOfNoWidthClaimsNoDetectableChange) {
  // Five runs of five days: their own spread (none), not a young store's prior.
  auto base = baseline(1000, 10, 0, 5, 0.0);
  auto j = judge(figures(990, 10, 0, 0.005, 1), &base, limits(), {});
  const auto& c = check(j, "throughput_rps");
  ASSERT_TRUE(c.test);
  EXPECT_EQ(c.test->n_now, 1);
  EXPECT_FALSE(c.test->detectable_pct) << *c.test->detectable_pct;
}

}  // namespace
}  // namespace perfgate
