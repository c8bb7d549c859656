// The store's side of a young baseline: the run-to-run noise pooled over earlier
// runs of the same code on this host, and failed runs of a baseline commit kept
// in the window (run_noise.h, baseline.h).
#include <gtest/gtest.h>

#include <cmath>

#include <sqlite3.h>

#include "perfgate/store/baseline.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::synthetic_run;
using testing::TempDir;

BaselineQuery query_for(const RunRecord& run, const std::string& branch = "main") {
  return {run.profile_name, run.profile_hash, branch, run.host.key()};
}

// Run `n` of commit `commit` on `branch`, at `rps`, on day `day` of November
// (its own, n, by default).
RunRecord run_of(int n, const std::string& commit, uint64_t rps, const std::string& branch = "main",
                 Verdict verdict = Verdict::kPass, int day = 0) {
  auto run = synthetic_run(n, rps, 2.0, branch);
  run.ci.commit = commit;
  run.verdict = verdict;
  if (day > 0) run.created_at = synthetic_run(day, rps, 2.0).created_at;
  return run;
}

struct NoiseFixture : ::testing::Test {
  TempDir dir;
  BaselineStore store = BaselineStore::open(dir / "perfgate.db");
};

TEST_F(NoiseFixture, GroupsRunsByCommitAndDayAndPoolsTheirSpread) {
  std::vector<RunRecord> runs = {run_of(1, "aaa", 1000, "main", Verdict::kPass, 1),
                                 run_of(2, "aaa", 1100, "main", Verdict::kPass, 1),
                                 run_of(3, "bbb", 2000, "main", Verdict::kPass, 2),
                                 run_of(4, "bbb", 2000, "main", Verdict::kPass, 2),
                                 run_of(5, "ccc", 500, "main", Verdict::kPass, 2),
                                 // the same code on another day: a job of its own
                                 run_of(6, "aaa", 1000, "main", Verdict::kPass, 3)};
  auto noise = pooled_noise(runs).at("throughput_rps");
  // Groups {1000, 1100} and {2000, 2000}: s^2 = (log 1.1)^2 / 2 over 2 df, by hand.
  EXPECT_EQ(noise.within_df, 2);
  EXPECT_EQ(noise.groups, 2);
  EXPECT_EQ(noise.days, 2);
  EXPECT_NEAR(noise.within_sd, std::sqrt(std::pow(std::log(1.1), 2) / 2 / 2), 1e-12);
}

TEST_F(NoiseFixture, AYoungWindowCarriesTheNoiseOfEveryEarlierRunOfTheProfileOnThisHost) {
  // Calibration runs and another branch's runs, failed ones too, all count.
  for (int i = 0; i < 4; ++i) {
    auto calibration = run_of(i + 1, "aaa", 1000 + 10 * i, "main", Verdict::kPass, 1);
    calibration.kind = "calibration";
    store.record(calibration);
  }
  store.record(run_of(5, "fff", 900, "feature", Verdict::kFail, 5));
  store.record(run_of(6, "fff", 910, "feature", Verdict::kFail, 5));
  auto saturated = run_of(7, "fff", 400, "feature", Verdict::kPass, 5);
  saturated.saturation = {true, {"steal 12%"}, {}};
  store.record(saturated);
  auto other_host = run_of(8, "fff", 300, "feature", Verdict::kPass, 5);
  other_host.host.fields["cpus"] = "64";
  store.record(other_host);
  store.record(run_of(9, "bbb", 1000, "main", Verdict::kPass, 9));
  store.record(run_of(10, "bbb", 1010, "main", Verdict::kPass, 9));
  auto s = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {5, 0, {}});
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids.size(), 2u);
  const auto& noise = s.baseline->sample.run_noise.at("throughput_rps");
  // calibration, feature; not saturated nor other host, nor main's two runs,
  // which are the window (issue 39, finding 4)
  EXPECT_EQ(noise.within_df, 3 + 1);
  EXPECT_EQ(noise.runs, 6);
  EXPECT_EQ(noise.days, 2);

  // A full window of five days judges with its own spread and carries no pool.
  for (int i = 0; i < 4; ++i) store.record(run_of(11 + i, "ccc", 1000));
  auto full = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {5, 0, {}});
  EXPECT_EQ(full.baseline->sample.run_days.at("throughput_rps"), 5);
  EXPECT_TRUE(full.baseline->sample.run_noise.empty());
  // Of one day, it keeps the pool: its runs share that day's luck (issue 46).
  ASSERT_EQ(sqlite3_exec(store.connection(), "UPDATE runs SET created_at = '2026-11-20T10:00:00Z'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  auto one_day = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {5, 0, {}});
  EXPECT_EQ(one_day.baseline->sample.run_days.at("throughput_rps"), 1);
  EXPECT_FALSE(one_day.baseline->sample.run_noise.empty());
}

// Issue 39, finding 4: main's runs of a commit that was also calibrated that
// day were in the pool's group and in the window: their variance counted
// twice. The pool is what lies outside the window.
TEST_F(NoiseFixture, TheWindowsRunsAreNotInThePool) {
  for (int i = 0; i < 3; ++i) {
    auto calibration = run_of(i + 1, "aaa", 1000 + 10 * i, "main", Verdict::kPass, 1);
    calibration.kind = "calibration";
    store.record(calibration);
  }
  auto first = store.record(run_of(4, "aaa", 990, "main", Verdict::kPass, 1));
  auto second = store.record(run_of(5, "aaa", 1030, "main", Verdict::kPass, 1));
  auto s = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {5, 0, {}});
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{second, first}));
  const auto& noise = s.baseline->sample.run_noise.at("throughput_rps");
  EXPECT_EQ(noise.runs, 3);  // the calibration's three; before, five
  EXPECT_EQ(noise.within_df, 2);

  // A pinned baseline run is judged with the pool too, itself left out.
  auto pinned = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {5, 0, first});
  EXPECT_EQ(pinned.baseline->sample.run_noise.at("throughput_rps").runs, 4);
}

TEST_F(NoiseFixture, AFailedRunOfABaselineCommitStaysInTheWindow) {
  // Five runs of one commit; two landed low and "failed" against the first.
  auto first = store.record(run_of(1, "aaa", 1000));
  auto low1 = store.record(run_of(2, "aaa", 860, "main", Verdict::kFail));
  auto fast = store.record(run_of(3, "aaa", 1000));
  auto low2 = store.record(run_of(4, "aaa", 860, "main", Verdict::kFail));
  auto last = store.record(run_of(5, "aaa", 1000));
  // A failed run of other code, and one on another branch, stay out.
  store.record(run_of(6, "bbb", 700, "main", Verdict::kFail));
  store.record(run_of(7, "aaa", 860, "feature", Verdict::kFail));
  auto s = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {5, 0, {}});
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{last, low2, fast, low1, first}));
  // The two low runs widen the run-level spread instead of being forgotten.
  EXPECT_EQ(s.baseline->sample.run_figures.at("throughput_rps").size(), 5u);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("2 failed run(s) of a baseline commit"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
