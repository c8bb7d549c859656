// repeat.budget: a sequential run's max_count lowered to what the time left
// allows at the pace so far, never raised, and said so when it stops.
#include <gtest/gtest.h>

#include "gate/sequential_run.h"

namespace perfgate {
namespace {

using std::chrono::seconds;

SequentialPlan paired_plan(int count, int max_count) {
  SequentialPlan plan{count, max_count, 2, kPairedSpending};
  plan.futility = true;
  return plan;
}

TEST(SequentialBudgetTest, NoBudgetLeavesThePlanAlone) {
  auto plan = budgeted(paired_plan(12, 60), Nanos(0), seconds(30), 12);
  EXPECT_EQ(plan.max_count, 60);
  EXPECT_FALSE(plan.budget_cut);
}

TEST(SequentialBudgetTest, TheTimeLeftAtThePaceSoFarSetsTheLastLook) {
  // 12 pairs in 30 s: 2.5 s a pair; 45 s left is 18 pairs, 9 batches of 2.
  auto plan = budgeted(paired_plan(12, 60), seconds(75), seconds(30), 12);
  EXPECT_EQ(plan.max_count, 30);
  EXPECT_TRUE(plan.budget_cut);
  // 44 s left is 17.6 pairs: whole batches only.
  EXPECT_EQ(budgeted(paired_plan(12, 60), seconds(74), seconds(30), 12).max_count, 28);
  // A budget spent already: no more looks.
  auto spent = budgeted(paired_plan(12, 60), seconds(20), seconds(30), 12);
  EXPECT_EQ(spent.max_count, 12);
  EXPECT_FALSE(spent.extends());
  // Room for more than max_count: max_count stands.
  auto roomy = budgeted(paired_plan(12, 20), seconds(600), seconds(30), 12);
  EXPECT_EQ(roomy.max_count, 20);
  EXPECT_FALSE(roomy.budget_cut);
}

// Fewer looks: each later look may be judged less strictly than the planned
// boundary's, never more (the looks already made were stricter still).
TEST(SequentialBudgetTest, ACutPlanJudgesNoStricterThanThePlannedOne) {
  auto planned = paired_plan(12, 60);
  auto cut = budgeted(planned, seconds(75), seconds(30), 12);
  for (int taken = 12; taken <= cut.max_count; taken += 2)
    EXPECT_LE(cut.look_confidence(95, taken), planned.look_confidence(95, taken)) << taken;
}

TEST(SequentialBudgetTest, AnUndecidedRunCutByTheBudgetSaysSo) {
  auto cut = budgeted(paired_plan(12, 60), seconds(75), seconds(30), 12);
  SequentialStep last;
  last.undecided = {"service_cpu_us_per_request"};
  EXPECT_EQ(stop_reason(last, false, false, 30, cut, "pairs"),
            "repeat.budget reached after 30 pairs: still undecided (service_cpu_us_per_request)");
}

// paired.block: a sequential run's batches are whole launches.
TEST(SequentialBudgetTest, PairedBatchesAreWholeLaunches) {
  Profile profile;
  profile.repeat.count = 6;
  profile.repeat.discard = 0;
  profile.repeat.max_count = 18;
  profile.paired = PairedSpec{};
  EXPECT_EQ(sequential_plan(profile).batch, 2);
  profile.paired->block = 3;
  EXPECT_EQ(sequential_plan(profile).batch, 3);
  profile.paired->block = 2;
  EXPECT_EQ(sequential_plan(profile).batch, 2);
}

}  // namespace
}  // namespace perfgate
