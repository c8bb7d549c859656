// Sequential runs' decision rule (core/sequential.h): when a run measures
// more, at what level every look judges, and an A/A simulation of the
// false-fail rate with and without the split of alpha over the looks.
#include "perfgate/core/sequential.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "perfgate/core/spending_boundary.h"
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
  t.estimate_pct = (ci_low + ci_high) / 2;
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

TEST(SequentialTest, UndecidedUntilAFailCrossingOrSurelyWithinTheFailLimit) {
  // Throughput: worse is down. -8..-2 % straddles both -3 % and -5 %.
  EXPECT_TRUE(undecided(check("throughput_rps", -8, -2)));
  EXPECT_TRUE(undecided(check("throughput_rps", -6, 0)));     // reaches past the fail limit
  EXPECT_FALSE(undecided(check("throughput_rps", -4, 1)));    // surely within -5 %: a pass
  EXPECT_FALSE(undecided(check("throughput_rps", -2, 1)));    // clear pass
  EXPECT_FALSE(undecided(check("throughput_rps", -12, -6)));  // clear fail
  EXPECT_FALSE(undecided(check("throughput_rps", 2, 12)));    // an improvement
  // Latency: worse is up.
  EXPECT_TRUE(undecided(check("latency_p99_ms", 4, 6)));
  EXPECT_FALSE(undecided(check("latency_p99_ms", -8, 2)));
  EXPECT_FALSE(undecided(check("latency_p99_ms", 4, 5)));  // a warn, surely within the fail limit
  // Nothing to decide: not gated, or no test.
  auto ungated = check("throughput_rps", -8, -2);
  ungated.gated = false;
  EXPECT_FALSE(undecided(ungated));
  auto untested = check("throughput_rps", -8, -2);
  untested.test.reset();
  EXPECT_FALSE(undecided(untested));
}

// Issue 39, finding 2: a fail whose interval still straddles the fail limit
// (estimate past it, near end past the warn limit) is a crossing: the run stops
// there, since the boundary bounds the chance that any look crosses, and a later
// look may not undo the fail.
TEST(SequentialTest, AFailCrossingStopsTheRunEvenWhenItsIntervalStraddlesTheFailLimit) {
  auto crossing = check("throughput_rps", -9, -4);  // estimate -6.5 %, near end -4 %
  EXPECT_FALSE(undecided(crossing));
  Judgement j;
  j.checks = {crossing};
  EXPECT_FALSE(next_step(j, false, false, 6, SequentialPlan{6, 16, 2}).more);
  // Past the fail limit but not surely past the warn limit: not yet a fail.
  EXPECT_TRUE(undecided(check("throughput_rps", -11, -2)));
}

// Issue 46, item 3: at a sequential look the estimate alone crossing the fail
// limit is no fail crossing; the near end of its interval at the look's
// estimate level must cross.
TEST(SequentialTest, AtASequentialLookAFailCrossingNeedsTheEstimatesBoundPastTheLimit) {
  auto crossing = check("throughput_rps", -9, -4);  // estimate -6.5 %, near end -4 %
  crossing.test->estimate_bound = ChangeTest::EstimateBound{60, -7, -4.5};
  EXPECT_TRUE(undecided(crossing));  // -4.5 %: not past the fail limit
  crossing.test->estimate_bound->ci_high_pct = -5.5;
  EXPECT_FALSE(undecided(crossing));
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
  EXPECT_FALSE(undecided(inconclusive));
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

// A fail on one metric decides the run: it stops though another metric is
// undecided (the bench's +10 % CPU runs failed on CPU per request at their
// first looks and measured on to 44 pairs, 76 s, for throughput's sake).
TEST(SequentialTest, AFailOnAnyMetricStopsTheRun) {
  Judgement j;
  auto cpu = check("service_cpu_us_per_request", 6, 12);
  cpu.verdict = Verdict::kFail;
  j.checks = {check("throughput_rps", -8, -2), cpu};
  SequentialPlan plan{6, 10, 2};
  auto step = next_step(j, false, false, 6, plan);
  EXPECT_FALSE(step.more);
  EXPECT_EQ(step.failed, std::vector<std::string>{"service_cpu_us_per_request"});
  EXPECT_EQ(step.undecided, std::vector<std::string>{"throughput_rps"});
  EXPECT_EQ(stop_reason(step, false, false, 6, plan, "pairs"),
            "failed after 6 pairs (service_cpu_us_per_request): more could not undo the run's "
            "fail; still undecided (throughput_rps)");
  // An inconclusive warn is no fail: the run measures on.
  j.checks.back().verdict = Verdict::kWarn;
  EXPECT_TRUE(next_step(j, false, false, 6, plan).more);
}

// paired.block 3: batches of whole launches, never a launch split across
// two batches (issue 39, finding 11).
TEST(SequentialTest, BlocksExtendByWholeLaunches) {
  SequentialPlan plan{6, 14, 3};
  plan.block = 3;
  EXPECT_EQ(plan.next_batch(6), 3);
  EXPECT_EQ(plan.next_batch(12), 0);  // 2 pairs left: less than a launch
  plan.block = 1;
  EXPECT_EQ(plan.next_batch(12), 2);
}

TEST(SpendingBoundaryTest, SpendingFunctionsMatchSciPy) {
  // SciPy: 2 - 2 * norm.cdf(norm.ppf(1 - a / 2) / sqrt(t)) and a * log(1 + (e - 1) t), a = 0.025.
  EXPECT_NEAR(spent_alpha(Spending::kOBrienFleming, 0.025, 0.25), 7.366808435937955e-06, 1e-12);
  EXPECT_NEAR(spent_alpha(Spending::kOBrienFleming, 0.025, 0.5), 0.0015253227579890005, 1e-12);
  EXPECT_NEAR(spent_alpha(Spending::kOBrienFleming, 0.025, 0.75), 0.009649324953511895, 1e-12);
  EXPECT_NEAR(spent_alpha(Spending::kPocock, 0.025, 0.25), 0.00893435048771971, 1e-12);
  EXPECT_NEAR(spent_alpha(Spending::kPocock, 0.025, 0.5), 0.015502862673956938, 1e-12);
  EXPECT_NEAR(spent_alpha(Spending::kPocock, 0.025, 0.75), 0.020699723481071745, 1e-12);
  for (auto shape : {Spending::kPocock, Spending::kOBrienFleming})
    EXPECT_DOUBLE_EQ(spent_alpha(shape, 0.025, 1), 0.025);
}

TEST(SpendingBoundaryTest, TheTableIsDeterministicAndSpendsNoMoreThanAllowed) {
  std::vector<int> ns{6, 8, 10, 12, 14, 16};
  const auto& pocock = signed_rank_boundary(Spending::kPocock, ns, 95);
  ASSERT_EQ(pocock.size(), ns.size());
  // Six pairs all one way: one-sided 1/64 = 0.0156 > Pocock's 0.0104 at t = 6/16, so
  // the first look cannot fail; it extends.
  EXPECT_FALSE(pocock[0].reachable);
  EXPECT_TRUE(pocock.back().reachable);
  for (size_t k = 0; k < ns.size(); ++k) {
    EXPECT_EQ(pocock[k].n, ns[k]);
    EXPECT_GT(pocock[k].confidence_pct, 95);  // every look stricter than a single look
    EXPECT_LT(pocock[k].confidence_pct, 100);
    std::printf("pocock look %zu: n %d spent %.5f level %.6f%%%s\n", k + 1, pocock[k].n,
                pocock[k].spent, pocock[k].confidence_pct, pocock[k].reachable ? "" : " (no fail)");
  }
  // The same table from a fresh computation (a different confidence, then back:
  // the cache holds both; a copy of another key's computation must agree too).
  std::vector<BoundaryLook> copy = pocock;
  const auto& again = signed_rank_boundary(Spending::kPocock, ns, 95);
  for (size_t k = 0; k < ns.size(); ++k) EXPECT_EQ(again[k].confidence_pct, copy[k].confidence_pct);
  // O'Brien-Fleming: stricter early, more lenient at the last look.
  const auto& obf = signed_rank_boundary(Spending::kOBrienFleming, ns, 95);
  EXPECT_GE(obf[0].confidence_pct, pocock[0].confidence_pct);
  EXPECT_LE(obf.back().confidence_pct, pocock.back().confidence_pct);
  // Past kExactMaxPairs the normal limit: its levels are near Pocock's constant
  // two-sided z of about 2.3 to 2.5 for a few equal looks.
  const auto& big = signed_rank_boundary(Spending::kPocock, {200, 400, 600}, 95);
  for (const auto& l : big) {
    EXPECT_GT(l.confidence_pct, 97.5);
    EXPECT_LT(l.confidence_pct, 99.5);
  }
}

TEST(SequentialPlanTest, PairedPlanJudgesEachLookAtItsBoundaryLevel) {
  SequentialPlan plan{6, 16, 2, Spending::kPocock};
  const auto& table = signed_rank_boundary(Spending::kPocock, {6, 8, 10, 12, 14, 16}, 95);
  EXPECT_EQ(plan.look_of(6), 0);
  EXPECT_EQ(plan.look_of(8), 1);
  EXPECT_EQ(plan.look_of(16), 5);
  EXPECT_DOUBLE_EQ(plan.look_confidence(95, 6), table[0].confidence_pct);
  EXPECT_DOUBLE_EQ(plan.look_confidence(95, 12), table[3].confidence_pct);
  EXPECT_TRUE(plan.can_ever_fail(95));
  // Discarded pairs and blocks: the test's counts.
  SequentialPlan blocks{8, 16, 2, Spending::kPocock, 2, 2};
  EXPECT_EQ(blocks.kept(8), 3);
  EXPECT_EQ(blocks.kept(16), 7);
  // Bonferroni, as stored mode keeps: the same level at every look.
  SequentialPlan stored{6, 16, 2};
  EXPECT_DOUBLE_EQ(stored.look_confidence(95, 6), stored.look_confidence(95, 16));
  // Three pairs up to five: no look can fail at 95 %.
  EXPECT_FALSE((SequentialPlan{3, 5, 2, Spending::kPocock}.can_ever_fail(95)));
}

// Paired sequences through judge() and next_step(): each pair's log ratio drawn
// from a normal of mean `loss` (negative: throughput lost) and sd `noise`.
struct Simulated {
  double fail_rate = 0;
  double mean_pairs = 0;
  double pass_rate = 0;
  double inconclusive_rate = 0;
};

Simulated simulate(Spending shape, bool split, bool futility, double loss, double noise,
                   const ThresholdSet& limits, int sequences, std::uint64_t seed = 20261201) {
  SequentialPlan plan{6, 16, 2, shape};
  plan.futility = futility;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> draw(0, 1);
  int fails = 0, passes = 0, inconclusive = 0;
  long pairs = 0;
  for (int s = 0; s < sequences; ++s) {
    std::vector<double> cand, base;
    auto add = [&](int n) {
      for (int i = 0; i < n; ++i) {
        double b = 1000 * (1 + 0.01 * draw(rng));
        base.push_back(b);
        cand.push_back(b * std::exp(loss + noise * draw(rng)));
      }
    };
    add(plan.count);
    int taken = plan.count;
    while (true) {
      RunFigures now{{{"throughput_rps", stats::median(cand)}}, {{"throughput_rps", cand}}};
      BaselineSample sample;
      sample.pooled = {{{"throughput_rps", stats::median(base)}}, {{"throughput_rps", base}}};
      sample.paired = true;
      DecisionSettings settings{95};
      if (split)
        settings.look_level = [&plan, taken](double level) {
          return plan.look_confidence(level, taken);
        };
      auto j = judge(now, &sample, limits, {}, settings);
      auto step = next_step(j, false, false, taken, plan);
      if (!step.more) {
        fails += j.verdict == Verdict::kFail ? 1 : 0;
        passes += j.verdict == Verdict::kPass ? 1 : 0;
        inconclusive += j.checks.front().inconclusive ? 1 : 0;
        break;
      }
      int n = plan.next_batch(taken);
      add(n);
      taken += n;
    }
    pairs += taken;
  }
  double n = sequences;
  return {fails / n, pairs / n, passes / n, inconclusive / n};
}

ThresholdSet tiny_limits() {
  // So small that only significance decides a fail: any A/A fail is a false one.
  ThresholdSet limits;
  limits["throughput_rps"].warn_pct = 0.01;
  limits["throughput_rps"].fail_pct = 0.02;
  return limits;
}

ThresholdSet pr_limits() {
  ThresholdSet limits;
  limits["throughput_rps"].warn_pct = 3;
  limits["throughput_rps"].fail_pct = 5;
  return limits;
}

TEST(SequentialTest, SpendingBoundariesKeepFalseFailsOfOptionalStoppingAtAlpha) {
  // A fail is one-sided: one look at 95 % fails an A/A run 2.5 % of the time.
  auto limits = tiny_limits();
  double naive = simulate(Spending::kBonferroni, false, false, 0, 0.05, limits, 2000).fail_rate;
  double bonferroni = simulate(Spending::kBonferroni, true, false, 0, 0.05, limits, 2000).fail_rate;
  double pocock = simulate(Spending::kPocock, true, false, 0, 0.05, limits, 2000).fail_rate;
  double obf = simulate(Spending::kOBrienFleming, true, false, 0, 0.05, limits, 2000).fail_rate;
  std::printf(
      "A/A false fails over 2000 sequences (6..16 pairs): %.4f each look at 95%%, %.4f "
      "bonferroni, %.4f pocock, %.4f obrien-fleming\n",
      naive, bonferroni, pocock, obf);
  EXPECT_GT(naive, 0.025);  // six looks at 5 % each: optional stopping
  EXPECT_LE(bonferroni, 0.025);
  EXPECT_LE(pocock, 0.025);
  EXPECT_LE(obf, 0.025);
  EXPECT_GT(pocock, bonferroni);  // the boundary spends what Bonferroni leaves unspent
}

// P(V <= v) of the signed-rank sum of n pairs, exactly (the test's own copy).
std::vector<double> rank_sum_cdf(int n) {
  std::vector<double> ways(static_cast<size_t>(n) * (n + 1) / 2 + 1, 0.0);
  ways[0] = 1;
  for (int rank = 1; rank <= n; ++rank)
    for (size_t s = ways.size() - 1; s >= static_cast<size_t>(rank); --s) ways[s] += ways[s - rank];
  double cum = 0;
  for (auto& w : ways) w = (cum += w) / std::ldexp(1.0, n);
  return ways;
}

std::vector<int> looks_of(int count, int max_count) {
  std::vector<int> ns;
  for (int n = count; n <= max_count; n += 2) ns.push_back(n);
  return ns;
}

// How often `runs` sequences of symmetric pairs (the signs fair, the order of
// the |d| uniform) cross `table` at some look: a fail when the signed-rank sum
// is at or below the critical value each look's level puts the interval at.
double crossing_rate(const std::vector<int>& ns, const std::vector<BoundaryLook>& table, int runs,
                     std::uint64_t seed) {
  std::vector<std::vector<double>> cdfs;
  for (int n : ns) cdfs.push_back(rank_sum_cdf(n));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0, 1);
  int crossed = 0;
  std::vector<double> mags;
  std::vector<char> positive;
  for (int run = 0; run < runs; ++run) {
    mags.clear();
    positive.clear();
    long v = 0;
    for (size_t k = 0; k < ns.size(); ++k) {
      while (static_cast<int>(mags.size()) < ns[k]) {
        double x = uniform(rng);
        bool pos = uniform(rng) < 0.5;
        long less = 0, pos_greater = 0;
        for (size_t j = 0; j < mags.size(); ++j) mags[j] < x ? ++less : pos_greater += positive[j];
        v += pos_greater + (pos ? less + 1 : 0);
        mags.push_back(x);
        positive.push_back(pos);
      }
      double half = (1 - table[k].confidence_pct / 100) / 2;
      if (cdfs[k][static_cast<size_t>(v)] <= half) {
        ++crossed;
        break;
      }
    }
  }
  return static_cast<double>(crossed) / runs;
}

// Issue 39, finding 10: the boundary's own simulation (20,000 sequences) must
// not decide the false-fail rate by its sampling noise. An independent one,
// 10 times larger and from another generator, crosses the Pocock boundary of
// the recipe's plan and of issue 26's at most the alpha it spends.
TEST(SequentialTest, ThePocockBoundaryCrossesAtMostItsAlphaInAnIndependentSimulation) {
  for (auto [count, max_count] : {std::pair{6, 16}, std::pair{12, 44}}) {
    auto ns = looks_of(count, max_count);
    const int kRuns = 200'000;
    double rate =
        crossing_rate(ns, signed_rank_boundary(Spending::kPocock, ns, 95), kRuns, 20261206);
    std::printf("Pocock, %d..%d pairs: crossed %.4f of %d A/A sequences (alpha 0.025)\n", count,
                max_count, rate, kRuns);
    EXPECT_LE(rate, 0.025);
    EXPECT_GE(rate, 0.018);  // and spends most of it
  }
}

// Issue 46, item 3: the fail limit's boundary. Under "the change is exactly
// F" the log-ratios less ln(1 + F) are symmetric, so the same law decides how
// often the looks' bounds cross F: at most half the time over all the looks,
// as one look's estimate does, and most of that half is spent.
TEST(SequentialTest, TheEstimateBoundaryCrossesAtMostHalfTheTimeInAnIndependentSimulation) {
  for (auto [count, max_count] : {std::pair{6, 16}, std::pair{12, 44}}) {
    auto ns = looks_of(count, max_count);
    const auto& table = estimate_boundary(Spending::kPocock, ns);
    double rate = crossing_rate(ns, table, 50'000, 20261207);
    std::printf(
        "estimate boundary, %d..%d pairs: levels %.2f%% .. %.2f%%, crossed %.4f of "
        "50000 sequences at F (0.5 spent)\n",
        count, max_count, table.front().confidence_pct, table.back().confidence_pct, rate);
    EXPECT_LE(rate, 0.5);
    EXPECT_GE(rate, 0.45);
  }
}

TEST(SequentialPlanTest, TheFailLimitsEstimateLevelIsSpentOverTheLooks) {
  // One look judges the estimate itself: no level, the rule as it always was.
  EXPECT_FALSE((SequentialPlan{12, 12, 2, Spending::kPocock}.estimate_confidence(12)));
  SequentialPlan plan{12, 44, 2, Spending::kPocock};
  auto ns = looks_of(12, 44);
  const auto& table = estimate_boundary(Spending::kPocock, ns);
  ASSERT_EQ(table.size(), ns.size());
  for (size_t k = 0; k < ns.size(); ++k) {
    EXPECT_DOUBLE_EQ(*plan.estimate_confidence(ns[k]), table[k].confidence_pct);
    EXPECT_DOUBLE_EQ(table[k].spent, spent_alpha(Spending::kPocock, 0.5, ns[k] / 44.0));
    EXPECT_GT(table[k].confidence_pct, 0);
    EXPECT_LT(table[k].confidence_pct, 80);  // a bound near the estimate, not a test of zero
  }
  // Bonferroni: 50 % / 6 looks one-sided each, a two-sided 100 (1 - 1 / 6) %.
  EXPECT_NEAR(*(SequentialPlan{6, 16, 2}.estimate_confidence(6)), 83.333333333333333, 1e-9);
  // The same table again, bit for bit, from the cache.
  EXPECT_EQ(estimate_boundary(Spending::kPocock, ns)[3].confidence_pct, table[3].confidence_pct);
}

TEST(SequentialTest, PocockBoundaryPowerAndPairsAgainstBonferroni) {
  auto limits = pr_limits();
  for (double loss : {-0.05, -0.10}) {
    double log_loss = std::log1p(loss);
    auto b = simulate(Spending::kBonferroni, true, false, log_loss, 0.05, limits, 600);
    auto p = simulate(Spending::kPocock, true, false, log_loss, 0.05, limits, 600);
    auto o = simulate(Spending::kOBrienFleming, true, false, log_loss, 0.05, limits, 600);
    auto pf = simulate(Spending::kPocock, true, true, log_loss, 0.05, limits, 600);
    std::printf(
        "loss %.0f%% at 5%% noise, 600 runs of 6..16 pairs: power / mean pairs: bonferroni "
        "%.3f / %.2f, pocock %.3f / %.2f, obrien-fleming %.3f / %.2f, pocock+futility %.3f / "
        "%.2f\n",
        loss * 100, b.fail_rate, b.mean_pairs, p.fail_rate, p.mean_pairs, o.fail_rate, o.mean_pairs,
        pf.fail_rate, pf.mean_pairs);
    EXPECT_GE(p.fail_rate, b.fail_rate - 0.02);
    EXPECT_GE(pf.fail_rate, p.fail_rate - 0.05);  // futility forgoes few fails
    if (loss <= -0.10) {
      EXPECT_LE(p.mean_pairs, b.mean_pairs);
    }
  }
}

// Issue 39, finding 1: under A/A the power to fail is about nil, so a futility
// stop on that alone ended undecided runs at the first reachable look, still
// inconclusive (count 6, max 16, limits 5 / 8, pair sd 7 %: 40 % against 3 %
// without futility). Futility now needs a pass out of reach too.
TEST(SequentialTest, FutilityDoesNotStopAnAARunThatCouldStillPass) {
  ThresholdSet limits;
  limits["throughput_rps"].warn_pct = 5;
  limits["throughput_rps"].fail_pct = 8;
  auto plain = simulate(Spending::kPocock, true, false, 0, 0.07, limits, 600);
  auto futile = simulate(Spending::kPocock, true, true, 0, 0.07, limits, 600);
  std::printf(
      "A/A at limits 5/8 %%, pair sd 7 %%, 600 runs of 6..16 pairs: inconclusive %.4f without "
      "futility, %.4f with; pass %.4f / %.4f; mean pairs %.2f / %.2f; fails %.4f / %.4f\n",
      plain.inconclusive_rate, futile.inconclusive_rate, plain.pass_rate, futile.pass_rate,
      plain.mean_pairs, futile.mean_pairs, plain.fail_rate, futile.fail_rate);
  EXPECT_LE(futile.inconclusive_rate, 0.10);
  EXPECT_LE(futile.fail_rate, plain.fail_rate);
}

// Reachable means plausible: each answer's conditional power is taken at the end
// of the look's interval that favours it, so a run stops for futility only when
// even that end cannot fail, and the other cannot pass, by max_count.
TEST(SequentialTest, FutilityAsksWhetherEitherAnswerIsPlausiblyReachable) {
  SequentialPlan plan{6, 16, 2, Spending::kPocock};
  plan.futility = true;
  // An A/A-like look reaching past the fail limit: under its trend (-1.5 %) a
  // fail is out of reach, which stopped it before, still inconclusive; at its
  // interval's ends both answers are plausible, so it measures on.
  auto aa = check("throughput_rps", -6, 3);
  aa.test->estimate_pct = -1.5;
  aa.test->n_now = 6;
  aa.test->confidence_pct = 99;
  EXPECT_GT(*conditional_power(aa, 6, plan, 97), kFutilityPower);
  EXPECT_GT(*conditional_pass_power(aa, 6, plan, 97), 0.5);
  Judgement j;
  j.checks = {aa};
  j.family = 1;
  auto step = next_step(j, false, false, 6, plan);
  EXPECT_TRUE(step.more);
  EXPECT_TRUE(step.futile.empty());
  // Past the fail limit, not yet surely past the warn limit: a fail is in reach.
  auto near = check("throughput_rps", -9, -2);
  near.test->estimate_pct = -5.5;
  near.test->n_now = 6;
  near.test->confidence_pct = 99;
  EXPECT_GT(*conditional_power(near, 6, plan, 97), kFutilityPower);
  // Nothing left to measure: no conditional power to speak of, and the last
  // look is not "futile" (nothing is forgone): undecided, max_count reached.
  EXPECT_FALSE(conditional_power(near, 16, plan, 97));
  auto far = check("throughput_rps", -30, 20);
  far.test->estimate_pct = -1;
  far.test->n_now = 16;
  j.checks = {far};
  auto last = next_step(j, false, false, 16, plan);
  EXPECT_FALSE(last.more);
  EXPECT_TRUE(last.futile.empty());
  EXPECT_EQ(last.undecided, std::vector<std::string>{"throughput_rps"});
  // What a futile stop says.
  SequentialStep futile;
  futile.futile = {"throughput_rps"};
  EXPECT_EQ(stop_reason(futile, false, false, 14, plan, "pairs")
                .rfind("futility after 14 pairs: throughput_rps could plausibly neither fail nor "
                       "pass by max_count 16",
                       0),
            0u);
}

TEST(SequentialTest, TheBoundaryIsComputedAtTheFamilysSplitLevel) {
  // Two tested metrics share 95 %: each is judged at 97.5 % for one look, and a
  // sequential look at the boundary computed for 97.5 %, not 95 % split again.
  std::vector<double> cand, base;
  for (int i = 0; i < 8; ++i) {
    base.push_back(1000 + 7 * i);
    cand.push_back(990 + 5 * ((i * 3) % 8));
  }
  RunFigures now{{{"throughput_rps", stats::median(cand)}, {"latency_p99_ms", stats::median(cand)}},
                 {{"throughput_rps", cand}, {"latency_p99_ms", cand}}};
  BaselineSample sample;
  sample.pooled = {
      {{"throughput_rps", stats::median(base)}, {"latency_p99_ms", stats::median(base)}},
      {{"throughput_rps", base}, {"latency_p99_ms", base}}};
  sample.paired = true;
  ThresholdSet limits;
  limits["throughput_rps"].fail_pct = 5;
  limits["latency_p99_ms"].fail_pct = 5;
  SequentialPlan plan{8, 16, 2, Spending::kPocock};
  DecisionSettings settings{95};
  settings.look_level = [&plan](double level) { return plan.look_confidence(level, 10); };
  auto j = judge(now, &sample, limits, {}, settings);
  ASSERT_EQ(j.family, 2);
  EXPECT_DOUBLE_EQ(j.confidence_pct, plan.look_confidence(97.5, 10));
  EXPECT_NE(j.confidence_pct, plan.look_confidence(95, 10));
}

}  // namespace
}  // namespace perfgate
