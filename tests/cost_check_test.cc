// The cost phase's verdict: exact counts decide at once, launches that
// disagree leave the limit undecided, and the counts share the run's budget.
#include "perfgate/core/cost_check.h"

#include <gtest/gtest.h>

#include <cmath>

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

TEST(CostRunTest, SpreadIsTheLargestRelativeDifference) {
  auto run = counted({100, 101, 100.5});
  EXPECT_NEAR(run.spread_pct("instructions_per_request"), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(counted({5, 5}).spread_pct("instructions_per_request"), 0);
  EXPECT_DOUBLE_EQ(run.spread_pct("syscalls_per_request"), 0);
}

}  // namespace
}  // namespace perfgate
