// The cost phase's verdict: exact counts decide at once, launches that
// disagree leave the limit undecided, and the counts share the run's budget.
#include "perfgate/core/cost_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

namespace perfgate {
namespace {

CostRun counted(std::vector<double> instructions) {
  CostRun run;
  run.instrument = "callgrind";
  run.key = "k";
  for (double v : instructions) run.launches.push_back({{"instructions_per_request", v}});
  return run;
}

CostBaseline launches(std::vector<double> instructions) {
  CostBaseline b;
  for (double v : instructions) b.units.push_back({{"instructions_per_request", v}});
  return b;
}

ThresholdSet limits(double warn = 1, double fail = 2) {
  return {{"instructions_per_request", Thresholds{warn, fail, std::nullopt, std::nullopt}}};
}

MetricCheck only(const std::vector<MetricCheck>& checks) {
  EXPECT_EQ(checks.size(), 1u);
  return checks.empty() ? MetricCheck{} : checks.front();
}

TEST(CostCheckTest, IdenticalCountsPass) {
  auto base = launches({2392.5, 2392.5});
  auto c = only(check_costs(counted({2392.5, 2392.5}), &base, limits(), 95));
  EXPECT_EQ(c.verdict, Verdict::kPass);
  EXPECT_FALSE(c.inconclusive);
  ASSERT_TRUE(c.change_pct);
  EXPECT_DOUBLE_EQ(*c.change_pct, 0);
  EXPECT_DOUBLE_EQ(c.test->ci_low_pct, 0);
  EXPECT_DOUBLE_EQ(c.test->ci_high_pct, 0);
  EXPECT_NE(c.test->method.find("exact"), std::string::npos);
}

// A +1.83 % change, exactly repeatable, past the 1 % warn limit: a warn; the
// same change at +2.5 % fails. Counts this exact need no more launches.
TEST(CostCheckTest, ExactChangesWarnAndFail) {
  auto base = launches({26242.956, 26242.956});
  auto warn = only(check_costs(counted({26722.956, 26722.956}), &base, limits(), 95));
  EXPECT_EQ(warn.verdict, Verdict::kWarn);
  EXPECT_FALSE(warn.inconclusive);
  EXPECT_NEAR(*warn.change_pct, 1.829, 0.001);
  auto fail = only(check_costs(counted({26900, 26900}), &base, limits(), 95));
  EXPECT_EQ(fail.verdict, Verdict::kFail);
  EXPECT_NE(fail.message.find("past the fail limit"), std::string::npos);
}

TEST(CostCheckTest, ImprovementPasses) {
  auto base = launches({3000, 3000});
  auto c = only(check_costs(counted({2500, 2500}), &base, limits(), 95));
  EXPECT_EQ(c.verdict, Verdict::kPass);
  EXPECT_LT(*c.change_pct, -16);
}

// The interval matches SciPy's pooled two-sample t interval on the logs:
// log([1000,1003,1001.5]) vs log([990,991,992.5]) at 95 %.
TEST(CostCheckTest, IntervalMatchesScipy) {
  auto base = launches({990, 991, 992.5});
  auto c = only(check_costs(counted({1000, 1003, 1001.5}), &base, limits(0.5, 5), 95));
  EXPECT_NEAR(c.test->estimate_pct, 1.04252117707286, 1e-9);
  EXPECT_NEAR(c.test->ci_low_pct, 0.7250265461160027, 1e-7);
  EXPECT_NEAR(c.test->ci_high_pct, 1.361016580569998, 1e-7);
  EXPECT_NEAR(c.test->p_value, 0.0007919839526402131, 1e-9);
  EXPECT_EQ(c.verdict, Verdict::kWarn);  // surely past the 0.5 % warn limit
}

// Launches of one build that differ by more than a quarter of the fail limit
// (threads, timers): neither pass nor fail, and the message names the causes.
TEST(CostCheckTest, NoisyLaunchesAreInconclusive) {
  auto base = launches({2366.7, 2360.9});
  auto c = only(check_costs(counted({2359.5, 2375.0}), &base, limits(), 95));
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_TRUE(c.inconclusive);
  EXPECT_NE(c.message.find("one build's launches differ by 0.66%"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("threads"), std::string::npos);
  EXPECT_NE(c.message.find("launches a side would decide"), std::string::npos) << c.message;
}

// An interval that reaches past the fail limit cannot pass, even when the
// estimate is inside it.
TEST(CostCheckTest, WideIntervalCannotPass) {
  auto base = launches({1000, 1005});
  auto c = only(check_costs(counted({1006, 1011}), &base, limits(1, 2), 95));
  EXPECT_GT(c.test->ci_high_pct, 2);
  EXPECT_NE(c.verdict, Verdict::kPass);
  EXPECT_TRUE(c.inconclusive);
}

TEST(CostCheckTest, NoBaselineReportsTheCounts) {
  auto c = only(check_costs(counted({2392.5, 2392.5}), nullptr, limits(), 95));
  EXPECT_EQ(c.verdict, Verdict::kPass);
  EXPECT_FALSE(c.baseline);
  EXPECT_NE(c.message.find("no baseline"), std::string::npos);
  EXPECT_DOUBLE_EQ(c.value, 2392.5);
}

TEST(CostCheckTest, AbsoluteMaxFails) {
  ThresholdSet max = {
      {"instructions_per_request", Thresholds{std::nullopt, std::nullopt, 2000, std::nullopt}}};
  auto c = only(check_costs(counted({2392.5, 2392.5}), nullptr, max, 95));
  EXPECT_EQ(c.verdict, Verdict::kFail);
}

TEST(CostCheckTest, FamilyCountsGatedMetricsWithBothSides) {
  auto base = launches({1, 1});
  EXPECT_EQ(cost_family(counted({1, 1}), &base, limits()), 1);
  EXPECT_EQ(cost_family(counted({1, 1}), nullptr, limits()), 0);
  EXPECT_EQ(cost_family(CostRun{}, &base, limits()), 0);
  EXPECT_EQ(cost_family(counted({1, 1}), &base, {}), 0);
}

// Counts are judged at their share of the run's budget, not at a sequential
// look's stricter level (they are judged once, after the looks), and are not
// downgraded by the load machine's saturation: no neighbour moves a count.
TEST(CostCheckTest, AddedChecksSetTheVerdictAtTheirShareOfTheBudget) {
  Judgement j;
  j.verdict = Verdict::kWarn;  // e.g. a saturated timed part
  j.share_pct = 97.5;
  j.confidence_pct = 99.6;  // the look that stopped a sequential run
  auto base = launches({1000, 1000});
  add_cost_checks(j, counted({1100, 1100}), &base, limits());
  ASSERT_EQ(j.checks.size(), 1u);
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_DOUBLE_EQ(j.checks[0].test->confidence_pct, 97.5);
}

// Two agreeing candidate launches are no exact count when the baseline side's
// launches disagree: its spread is checked too (issue 47: 3 of 4 Node A/A
// gates had a baseline side 1.5-2.3 % apart and no noise message).
TEST(CostCheckTest, ABaselineSideWhoseLaunchesDisagreeIsInconclusive) {
  auto base = launches({1000, 1020});
  auto c = only(check_costs(counted({1010, 1010}), &base, limits(1, 2), 95));
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_TRUE(c.inconclusive);
  EXPECT_NE(c.message.find("the baseline's launches differ by 2.00%"), std::string::npos)
      << c.message;
  // A stored baseline's units are runs: their spread is the test's, not a
  // launch effect to flag.
  base.unit = "runs";
  auto runs = only(check_costs(counted({1010, 1010}), &base, limits(1, 2), 95));
  EXPECT_EQ(runs.message.find("the baseline's launches"), std::string::npos) << runs.message;
}

// Two launches a side that disagree are too few to trust (a lucky pair
// agrees): inconclusive, asking for the launches that would decide. From
// kTrustedLaunches a side the t interval carries their spread, and the same
// noise decides: here a pass, the interval's far end within the fail limit.
TEST(CostCheckTest, FourLaunchesASideLetTheIntervalCarryTheirSpread) {
  auto two = launches({1000, 1012});
  auto first = only(check_costs(counted({1006, 1006}), &two, limits(1, 2), 97.5));
  EXPECT_TRUE(first.inconclusive) << first.message;
  int wanted = launches_to_decide(first);
  EXPECT_GT(wanted, 2);
  EXPECT_NE(first.message.find("about " + std::to_string(wanted) + " launches a side would decide"),
            std::string::npos)
      << first.message;
  auto four = launches({1000, 1012, 1000, 1012});
  auto more = only(check_costs(counted({1006, 1006, 1006, 1006}), &four, limits(1, 2), 97.5));
  EXPECT_EQ(more.verdict, Verdict::kPass) << more.message;
  EXPECT_LT(more.test->ci_high_pct, 2);
  // Three a side are still a pair's luck away: the noise check stands.
  auto three = launches({1000, 1012, 1000});
  auto few = only(check_costs(counted({1006, 1006, 1006}), &three, limits(1, 2), 97.5));
  EXPECT_TRUE(few.inconclusive) << few.message;
  EXPECT_NE(few.message.find("launches differ by"), std::string::npos) << few.message;
  // Exact counts need no more: nothing to ask for.
  auto exact = launches({1000, 1000});
  EXPECT_EQ(launches_to_decide(only(check_costs(counted({1000, 1000}), &exact, limits(), 95))), 0);
}

// A phase that may add launches judges twice: each look at half the metric's
// share of the budget (Bonferroni), the first too, whether or not it adds any.
TEST(CostCheckTest, APhaseThatMayAddLaunchesJudgesEachLookAtHalfItsShare) {
  Judgement j;
  j.share_pct = 97.5;
  auto base = launches({1000, 1000});
  add_cost_checks(j, counted({1000, 1000}), &base, limits(), 2);
  ASSERT_EQ(j.checks.size(), 1u);
  EXPECT_DOUBLE_EQ(j.checks[0].test->confidence_pct, 98.75);
}

// The paired cost phase's two looks, as count_both_sides drives them: 2
// launches a side judged at half the share, and where undecided, the
// launches a side the check asks for (at least kTrustedLaunches, at most
// cost.max_launches 6), judged again at half the share. Launch counts log-normal
// with `sigma_pct` spread; the candidate's `change_pct` more.
struct CountGates {
  double fail = 0, pass = 0, extended = 0;
};
CountGates count_gates(double sigma_pct, double change_pct, bool extend, std::uint64_t seed,
                       int pool_runs = 0) {
  constexpr int kGates = 4000;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, sigma_pct / 100);
  auto launch = [&](double shift) { return 1000 * std::exp(std::log1p(shift / 100) + noise(rng)); };
  double level = extend ? 97.5 : 95;  // the metric's share: 95 %, the only one tested
  CountGates out;
  for (int g = 0; g < kGates; ++g) {
    std::vector<double> base{launch(0), launch(0)}, now{launch(change_pct), launch(change_pct)};
    std::vector<CostRun> earlier;
    for (int r = 0; r < pool_runs; ++r) earlier.push_back(counted({launch(0), launch(0)}));
    auto pool = pooled_count_noise(earlier);
    auto first = launches(base);
    first.pool = pool;
    auto c = only(check_costs(counted(now), &first, limits(), level));
    if (extend && count_undecided(c)) {
      out.extended += 1;
      auto target =
          static_cast<size_t>(std::min(std::max(launches_to_decide(c), kTrustedLaunches), 6));
      while (base.size() < target) base.push_back(launch(0)), now.push_back(launch(change_pct));
      auto more = launches(base);
      more.pool = pool;
      c = only(check_costs(counted(now), &more, limits(), level));
    }
    out.fail += c.verdict == Verdict::kFail;
    out.pass += c.verdict == Verdict::kPass;
  }
  out.fail /= kGates, out.pass /= kGates, out.extended /= kGates;
  std::printf(
      "[ counts ] spread %.2f%%, change %+.1f%%, %s, pool %2d runs: fail %5.1f%%, pass %5.1f%%, "
      "extended %5.1f%%\n",
      sigma_pct, change_pct, extend ? "launches added" : "2 a side   ", pool_runs, out.fail * 100,
      out.pass * 100, out.extended * 100);
  return out;
}

TEST(CostCheckSimulation, AddedLaunchesDecideNoisyCountsWithoutMoreFalseFails) {
  for (double sigma : {0.05, 0.3, 0.8}) {
    // Unchanged, and a change at the warn limit: never more fails than the
    // share allows, looks and added launches included.
    for (double change : {0.0, 1.0}) {
      auto added = count_gates(sigma, change, true, 47);
      EXPECT_LE(added.fail, 0.05) << sigma << "% spread, change " << change;
    }
  }
  // A count whose launches scatter 0.3 %: two a side pass an unchanged build
  // only where they happen to agree; the launches they ask for decide it.
  auto two = count_gates(0.3, 0, false, 48), added = count_gates(0.3, 0, true, 48);
  EXPECT_GE(added.pass, 0.95);
  EXPECT_GE(added.pass, two.pass + 0.2);
  // Power kept: +3 % (past the 2 % fail limit) fails.
  EXPECT_GE(count_gates(0.3, 3, true, 49).fail, 0.95);
  EXPECT_GE(count_gates(0.05, 2.6, true, 50).fail, 0.95);
}

// Earlier runs' launches, each run about its own level: their sums of squares
// of log counts over their degrees of freedom.
TEST(CountNoiseTest, PoolsEachRunsLaunchesAboutTheirOwnMean) {
  std::vector<CostRun> runs{counted({100, 101}), counted({200, 202, 201}), counted({50, 50.2}),
                            counted({70}), counted({0, 5})};
  auto pool = pooled_count_noise(runs);
  ASSERT_EQ(pool.count("instructions_per_request"), 1u);
  const auto& noise = pool.at("instructions_per_request");
  EXPECT_NEAR(noise.log_var, 2.674432577684436e-05, 1e-15);  // NumPy, on the first three
  EXPECT_DOUBLE_EQ(noise.df, 4);
  EXPECT_EQ(noise.runs, 3);  // one launch, or a count of 0, adds nothing
  EXPECT_TRUE(pooled_count_noise({}).empty());
}

// The pool joins the run's own launches: the interval on own + pool df,
// matching SciPy's t interval on the combined variance; the method says so.
TEST(CostCheckTest, APoolOfEarlierRunsJoinsTheInterval) {
  auto base = launches({990, 991});
  base.pool = pooled_count_noise(
      std::vector<CostRun>{counted({100, 101}), counted({200, 202, 201}), counted({50, 50.2})});
  auto c = only(check_costs(counted({1000, 1003}), &base, limits(0.5, 5), 95));
  EXPECT_NEAR(c.test->estimate_pct, 1.1104497006172962, 1e-9);
  EXPECT_NEAR(c.test->ci_low_pct, 0.04727908376452646, 1e-7);
  EXPECT_NEAR(c.test->ci_high_pct, 2.1849182934959077, 1e-7);
  EXPECT_NE(c.test->method.find("launch noise of 3 earlier runs (6 df in all)"), std::string::npos)
      << c.test->method;
}

// Two launches a side of a service whose counts scatter 1 %: alone, their
// agreement is a pair's luck (the noise check: past a quarter of the 3 % fail
// limit); with 10 earlier runs' launches saying how far they scatter, the
// interval carries it and an unchanged build passes. Launches that scatter far
// more than the pool says (F test) do not take its narrower spread: the noise
// check stands.
TEST(CostCheckTest, APoolLetsTwoLaunchesASideDecide) {
  std::vector<CostRun> earlier;
  for (int i = 0; i < 10; ++i) earlier.push_back(counted({1000.0 + i, 1010.0 + i}));
  auto base = launches({1000, 1010});
  auto alone = only(check_costs(counted({1002, 1012}), &base, limits(1, 3), 97.5));
  EXPECT_TRUE(alone.inconclusive) << alone.message;
  base.pool = pooled_count_noise(earlier);
  auto pooled = only(check_costs(counted({1002, 1012}), &base, limits(1, 3), 97.5));
  EXPECT_EQ(pooled.verdict, Verdict::kPass) << pooled.message;
  EXPECT_LT(pooled.test->ci_high_pct, 3);
  // Launches 5 % apart against a pool of 1 %: not the pool's noise.
  auto noisy = launches({1000, 1050});
  noisy.pool = base.pool;
  auto c = only(check_costs(counted({1002, 1052}), &noisy, limits(1, 3), 97.5));
  EXPECT_TRUE(c.inconclusive) << c.message;
  EXPECT_EQ(c.test->method.find("earlier runs"), std::string::npos) << c.test->method;
  EXPECT_NE(c.message.find("launches differ by"), std::string::npos) << c.message;
  // Exact counts and an exact pool stay exact.
  auto exact = launches({1000, 1000});
  exact.pool = pooled_count_noise(std::vector<CostRun>{counted({7, 7}), counted({9, 9})});
  auto e = only(check_costs(counted({1000, 1000}), &exact, limits(), 95));
  EXPECT_EQ(e.verdict, Verdict::kPass);
  EXPECT_DOUBLE_EQ(e.test->ci_high_pct, 0);
}

// With 10 earlier runs' launches pooled, two launches a side decide what they
// could not alone: an unchanged build passes, with far fewer gates adding
// launches; the false fails at the warn limit stay within the share, and +3 %
// still fails.
TEST(CostCheckSimulation, APoolDecidesWithTwoLaunchesASide) {
  for (double sigma : {0.05, 0.3}) {
    EXPECT_GE(count_gates(sigma, 0, true, 51, 10).pass, 0.99) << sigma;
    EXPECT_LE(count_gates(sigma, 1.0, true, 52, 10).fail, 0.05) << sigma;
    EXPECT_GE(count_gates(sigma, 3, true, 53, 10).fail, 0.95) << sigma;
  }
  // 0.3 %: two a side pass by luck alone (57 %), with the pool nearly always.
  EXPECT_GE(count_gates(0.3, 0, false, 54, 10).pass, 0.9);
  EXPECT_LE(count_gates(0.3, 0, false, 54).pass, 0.7);
  EXPECT_LE(count_gates(0.3, 0, true, 55, 10).extended + 0.3,
            count_gates(0.3, 0, true, 55).extended);
}

// change_pct is the two figures' plain ratio (the contract's); the estimate,
// the test's, is what the limits judge.
TEST(CostCheckTest, ChangeIsTheFiguresRatioAndTheEstimateTheTests) {
  auto base = launches({1000, 1000, 1000});
  auto c = only(check_costs(counted({1010, 1030}), &base, limits(5, 10), 95));
  ASSERT_TRUE(c.change_pct && c.baseline);
  EXPECT_DOUBLE_EQ(*c.change_pct, (c.value - *c.baseline) / *c.baseline * 100);
  EXPECT_NEAR(c.test->estimate_pct, (std::sqrt(1010.0 * 1030.0) / 1000 - 1) * 100, 1e-9);
  EXPECT_NE(*c.change_pct, c.test->estimate_pct);
}

// requests "auto": the largest count of the ladder whose requests take no more
// than count_time at the warm-up's pace, kept at the series' count while the
// pace asks for between a third and three times it.
TEST(CostRunTest, AnAutomaticCountFitsTheTimeAndKeepsItsSeries) {
  EXPECT_EQ(auto_requests(0.001, 5, 1000), 1000);         // 5000 fit: the ceiling
  EXPECT_EQ(auto_requests(0.0075, 5, 1000), 500);         // 666 fit
  EXPECT_EQ(auto_requests(0.135, 5, 1000), 20);           // CPython under callgrind: 37 fit
  EXPECT_EQ(auto_requests(0.02, 5, 1000), 200);           // 250 fit
  EXPECT_EQ(auto_requests(10, 5, 1000), 20);              // the least
  EXPECT_EQ(auto_requests(0.001, 5, 300), 200);           // a pinned ceiling's ladder
  EXPECT_EQ(auto_requests(0.001, 5, 7), 7);               // below the ladder
  EXPECT_EQ(auto_requests(0, 5, 1000), 1000);             // no pace: the ceiling
  EXPECT_EQ(auto_requests(0, 5, 1000, 70), 70);           // no pace: the series' count
  EXPECT_EQ(auto_requests(0, 5, 50, 70), 50);             // unless past the ceiling
  EXPECT_EQ(auto_requests(0.0075, 5, 1000, 1000), 1000);  // 666: within 3x of the series
  EXPECT_EQ(auto_requests(0.02, 5, 1000, 1000), 200);     // 250: below a third, a new count
  EXPECT_EQ(auto_requests(0.02, 5, 1000, 500), 500);      // 250 within 3x of 500
  EXPECT_EQ(auto_requests(0.001, 5, 1000, 200), 1000);    // 5000 past 3x 200
  EXPECT_EQ(auto_requests(0.001, 5, 100, 200), 100);      // a series past the ceiling
  EXPECT_EQ(auto_warmup(1000, 200), 200);
  EXPECT_EQ(auto_warmup(50, 200), 30);
  EXPECT_EQ(auto_warmup(500, 200), 100);
  EXPECT_EQ(auto_warmup(500, 10), 10);
}

TEST(CostRunTest, SpreadIsTheLargestRelativeDifference) {
  auto run = counted({100, 101, 100.5});
  EXPECT_NEAR(run.spread_pct("instructions_per_request"), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(counted({5, 5}).spread_pct("instructions_per_request"), 0);
  EXPECT_DOUBLE_EQ(run.spread_pct("syscalls_per_request"), 0);
}

}  // namespace
}  // namespace perfgate
