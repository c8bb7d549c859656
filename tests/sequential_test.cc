// Sequential runs' decision rule (core/sequential.h): when a run measures
// more, at what level every look judges, and an A/A simulation of the
// false-fail rate with and without the split of alpha over the looks.
#include "perfgate/core/sequential.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "perfgate/core/statistics.h"

namespace perfgate {
namespace {

MetricCheck check(const std::string& metric, double ci_low, double ci_high) {
  MetricCheck c;
  c.metric = metric;
  c.gated = true;
  c.thresholds.warn_pct = 3;
  c.thresholds.fail_pct = 5;
  ChangeTest t;
  t.ci_low_pct = ci_low;
  t.ci_high_pct = ci_high;
  c.test = t;
  return c;
}

TEST(SequentialPlanTest, LooksOnceAtCountThenAfterEveryBatch) {
  EXPECT_EQ((SequentialPlan{6, 0, 2}.looks()), 1);
  EXPECT_EQ((SequentialPlan{6, 6, 2}.looks()), 1);
  EXPECT_EQ((SequentialPlan{6, 7, 2}.looks()), 2);  // a last batch of one
  EXPECT_EQ((SequentialPlan{6, 16, 2}.looks()), 6);
  EXPECT_EQ((SequentialPlan{6, 16, 2}.next_batch(14)), 2);
  EXPECT_EQ((SequentialPlan{6, 7, 2}.next_batch(6)), 1);
  EXPECT_EQ((SequentialPlan{6, 16, 2}.next_batch(16)), 0);
}

TEST(SequentialPlanTest, BonferroniSplitsAlphaOverTheLooks) {
  // Known values: 100 * (1 - alpha / K), by hand (0.05 / 6 = 0.008333...).
  EXPECT_DOUBLE_EQ((SequentialPlan{6, 6, 2}.look_confidence(95)), 95);
  EXPECT_NEAR((SequentialPlan{6, 16, 2}.look_confidence(95)), 99.166666666666667, 1e-12);
  EXPECT_NEAR((SequentialPlan{10, 20, 2}.look_confidence(99)), 99.833333333333333, 1e-12);
}

TEST(SequentialTest, UndecidedWhileTheIntervalStraddlesALimit) {
  // Throughput: worse is down. -8..-2 % straddles both -3 % and -5 %.
  EXPECT_TRUE(undecided(check("throughput_rps", -8, -2)));
  EXPECT_TRUE(undecided(check("throughput_rps", -4, 1)));     // the warn limit
  EXPECT_FALSE(undecided(check("throughput_rps", -2, 1)));    // clear pass
  EXPECT_FALSE(undecided(check("throughput_rps", -12, -6)));  // clear fail
  EXPECT_FALSE(undecided(check("throughput_rps", 2, 12)));    // an improvement
  // Latency: worse is up.
  EXPECT_TRUE(undecided(check("latency_p99_ms", 4, 6)));
  EXPECT_FALSE(undecided(check("latency_p99_ms", -8, 2)));
  // Nothing to decide: not gated, or no test.
  auto ungated = check("throughput_rps", -8, -2);
  ungated.gated = false;
  EXPECT_FALSE(undecided(ungated));
  auto untested = check("throughput_rps", -8, -2);
  untested.test.reset();
  EXPECT_FALSE(undecided(untested));
}

TEST(SequentialTest, DetectableChangeIsTheTestsAtEightyPercentPower) {
  auto tested = check("throughput_rps", -4, 2);
  tested.test->detectable_pct = 4.29;
  EXPECT_DOUBLE_EQ(*detectable_change_pct(tested), 4.29);
  auto untested = check("throughput_rps", -4, 2);
  untested.test.reset();
  EXPECT_FALSE(detectable_change_pct(untested));
  EXPECT_FALSE(detectable_change_pct(check("throughput_rps", -4, 2)));  // level out of reach
}

TEST(SequentialTest, ALookThatCannotReachItsLevelOrCouldNotHaveFailedIsUndecided) {
  auto unreachable = check("throughput_rps", -12, -8);  // clear of both limits...
  EXPECT_FALSE(undecided(unreachable));
  unreachable.test->reaches_level = false;  // ...but at a level its samples cannot reach
  EXPECT_TRUE(undecided(unreachable));
  auto inconclusive = check("throughput_rps", -2, 1);
  inconclusive.inconclusive = true;
  EXPECT_TRUE(undecided(inconclusive));
  // Against whole runs, more iterations of this one decide nothing more.
  auto run_level = check("throughput_rps", -8, -2);
  run_level.test->unit = "runs";
  EXPECT_FALSE(undecided(run_level));
}

TEST(SequentialTest, MeasuresMoreOnlyWhenUndecidedAndAllowed) {
  Judgement j;
  j.checks = {check("throughput_rps", -8, -2), check("latency_p99_ms", -1, 1)};
  SequentialPlan plan{6, 10, 2};
  auto step = next_step(j, false, false, 6, plan);
  EXPECT_TRUE(step.more);
  EXPECT_EQ(step.undecided, std::vector<std::string>{"throughput_rps"});
  EXPECT_FALSE(next_step(j, true, false, 6, plan).more);    // saturated
  EXPECT_FALSE(next_step(j, false, true, 6, plan).more);    // a signal
  EXPECT_FALSE(next_step(j, false, false, 10, plan).more);  // max_count
  EXPECT_EQ(stop_reason(next_step(j, false, false, 10, plan), false, false, 10, plan, "pairs"),
            "max_count 10 reached: still undecided (throughput_rps)");
  j.checks.front() = check("throughput_rps", -12, -6);
  auto decided = next_step(j, false, false, 8, plan);
  EXPECT_FALSE(decided.more);
  EXPECT_EQ(stop_reason(decided, false, false, 8, plan, "pairs"), "decided after 8 pairs");
}

// A/A paired sequences through judge() and next_step(): both sides drawn from
// one distribution, limits so small that only significance decides a fail, so
// that any fail is a false one. Looking after every batch at the full alpha
// inflates the rate; the split keeps it at or below alpha.
double false_fail_rate(bool split, int sequences) {
  SequentialPlan plan{6, 16, 2};
  double confidence = split ? plan.look_confidence(95) : 95;
  ThresholdSet limits;
  limits["throughput_rps"].warn_pct = 0.01;
  limits["throughput_rps"].fail_pct = 0.02;
  std::mt19937_64 rng(20261201);
  std::normal_distribution<double> noise(0, 0.04);
  int fails = 0;
  for (int s = 0; s < sequences; ++s) {
    std::vector<double> cand, base;
    auto add = [&](int n) {
      for (int i = 0; i < n; ++i) {
        cand.push_back(1000 * (1 + noise(rng)));
        base.push_back(1000 * (1 + noise(rng)));
      }
    };
    add(plan.count);
    int taken = plan.count;
    while (true) {
      RunFigures now{{{"throughput_rps", stats::median(cand)}}, {{"throughput_rps", cand}}};
      BaselineSample sample;
      sample.pooled = {{{"throughput_rps", stats::median(base)}}, {{"throughput_rps", base}}};
      sample.paired = true;
      auto j = judge(now, &sample, limits, {}, {confidence});
      auto step = next_step(j, false, false, taken, plan);
      if (!step.more) {
        fails += j.verdict == Verdict::kFail ? 1 : 0;
        break;
      }
      int n = plan.next_batch(taken);
      add(n);
      taken += n;
    }
  }
  return static_cast<double>(fails) / sequences;
}

TEST(SequentialTest, SplitAlphaKeepsFalseFailsOfOptionalStoppingAtAlpha) {
  // A fail is one-sided: one look at 95 % fails an A/A run 2.5 % of the time.
  double naive = false_fail_rate(false, 800);
  double split = false_fail_rate(true, 800);
  EXPECT_LE(split, 0.025) << "naive " << naive;
  EXPECT_GT(naive, 0.025) << "split " << split;  // six looks at 5 % each: optional stopping
  EXPECT_GT(naive, split);
  std::printf("A/A false fails over 800 sequences: %.4f each look at 95%%, %.4f split\n", naive,
              split);
}

}  // namespace
}  // namespace perfgate
