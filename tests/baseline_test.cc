#include "perfgate/store/baseline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "perfgate/store/stored_run.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::synthetic_run;
using testing::TempDir;

BaselineQuery query_for(const RunRecord& run, const std::string& branch = "main") {
  return {run.profile_name, run.profile_hash, branch, run.host.key()};
}

struct StoreFixture : ::testing::Test {
  TempDir dir;
  BaselineStore store = BaselineStore::open(dir / "perfgate.db");

  // Records `count` passing runs of 1000 req/s on `branch`; returns their ids.
  std::vector<int64_t> record(int count, const std::string& branch = "main", uint64_t rps = 1000) {
    std::vector<int64_t> ids;
    for (int i = 0; i < count; ++i)
      ids.push_back(store.record(synthetic_run(i + 1, rps, 2.0, branch)));
    return ids;
  }
};

TEST_F(StoreFixture, PoolsTheLastWindowOfRunsNewestFirst) {
  auto ids = record(7);
  auto s = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {3, 0, {}});
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{ids[6], ids[5], ids[4]}));
  // Three runs of three kept iterations each: nine pooled values, one figure per run.
  EXPECT_EQ(s.baseline->sample.pooled.values.at("throughput_rps").size(), 9u);
  EXPECT_EQ(s.baseline->sample.run_figures.at("throughput_rps").size(), 3u);
  EXPECT_DOUBLE_EQ(s.baseline->sample.pooled.summary.at("throughput_rps"), 1000);
  EXPECT_FALSE(s.drift_reference);
  EXPECT_TRUE(s.notes.empty());
}

TEST_F(StoreFixture, OnlyTheBaselineBranchCounts) {
  record(2, "main");
  record(2, "feature");
  auto probe = synthetic_run(1, 1000, 2);
  EXPECT_EQ(select_baseline(store, query_for(probe, "main"), {}).baseline->run_ids.size(), 2u);
  EXPECT_FALSE(select_baseline(store, query_for(probe, "release"), {}).baseline);
}

TEST_F(StoreFixture, SkipsSaturatedAbortedFailedRejectedAndCalibrationRuns) {
  auto good = store.record(synthetic_run(1, 1000, 2));
  auto saturated = synthetic_run(2, 1000, 2);
  saturated.saturation = {true, {"steal 12%"}, {}};
  auto aborted = synthetic_run(3, 1000, 2);
  aborted.status = "aborted";
  auto failed = synthetic_run(4, 500, 2);
  failed.verdict = Verdict::kFail;
  auto calibration = synthetic_run(5, 1000, 2);
  calibration.kind = "calibration";
  for (const auto& run : {saturated, aborted, failed, calibration}) store.record(run);
  auto rejected = store.record(synthetic_run(6, 1000, 2));
  store.set_review(rejected, {"rejected", "flaky runner", "ci", "2026-11-30T00:00:00Z"});
  auto s = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {});
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{good}));
}

TEST_F(StoreFixture, AnAcceptedRunStartsANewNormal) {
  record(3);
  auto failed = synthetic_run(4, 700, 2);
  failed.verdict = Verdict::kFail;
  auto accepted = store.record(failed);
  auto later = store.record(synthetic_run(5, 700, 2));
  store.set_review(accepted,
                   {"accepted", "new TLS stack costs 30%", "alice", "2026-11-30T00:00:00Z"});
  auto s = select_baseline(store, query_for(failed), {5, 0, {}});
  ASSERT_TRUE(s.baseline);
  // The runs before the accepted one are history, not baseline.
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{later, accepted}));
  EXPECT_DOUBLE_EQ(s.baseline->sample.pooled.summary.at("throughput_rps"), 700);
  auto stored = store.run(accepted);
  EXPECT_EQ(stored->review.by, "alice");
  EXPECT_TRUE(stored->eligible_as_baseline());
}

TEST_F(StoreFixture, OtherHostsAreNotBaselinesButTheNoteSaysTheyExist) {
  record(2);
  auto probe = synthetic_run(1, 1000, 2);
  auto other_host = query_for(probe);
  other_host.host_key = "ffffffffffff";
  auto s = select_baseline(store, other_host, {});
  EXPECT_FALSE(s.baseline);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("--any-host"), std::string::npos);
  other_host.host_key.clear();  // --any-host
  EXPECT_TRUE(select_baseline(store, other_host, {}).baseline);
}

TEST_F(StoreFixture, DriftReferenceIsAnOlderWindowThatDoesNotOverlap) {
  auto ids = record(12);
  auto q = query_for(synthetic_run(1, 1000, 2));
  auto s = select_baseline(store, q, {3, 8, {}});
  ASSERT_TRUE(s.drift_reference);
  // Newest first: ids[11] is 0 back, ids[3] is 8 back.
  EXPECT_EQ(s.drift_reference->run_ids, (std::vector<int64_t>{ids[3], ids[2], ids[1]}));
  // With only five runs there are not two windows of three: no drift check yet.
  TempDir other;
  auto small = BaselineStore::open(other / "perfgate.db");
  for (int i = 0; i < 5; ++i) small.record(synthetic_run(i + 1, 1000, 2));
  EXPECT_FALSE(select_baseline(small, q, {3, 8, {}}).drift_reference);
}

TEST_F(StoreFixture, PinnedRunIsUsedAloneAndChecked) {
  auto ids = record(3);
  auto q = query_for(synthetic_run(1, 1000, 2));
  auto s = select_baseline(store, q, {5, 20, ids[0]});
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{ids[0]}));
  EXPECT_FALSE(s.drift_reference);
  EXPECT_NE(s.notes.at(0).find("pinned"), std::string::npos);
  EXPECT_THROW(select_baseline(store, q, {5, 20, 999}), Error);
  auto other_profile = q;
  other_profile.profile_hash = "0000";
  try {
    select_baseline(store, other_profile, {5, 20, ids[0]});
    ADD_FAILURE() << "accepted a run of another profile hash";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other load settings"), std::string::npos) << e.what();
  }
}

TEST_F(StoreFixture, MaxLatencyBaselineIsTheTypicalRunsMaximum) {
  store.record(synthetic_run(1, 1000, 2.0));
  store.record(synthetic_run(2, 1000, 2.0));
  store.record(synthetic_run(3, 1000, 20.0));  // one run with a ten times slower tail
  auto s = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {});
  auto figures = s.baseline->sample.run_figures.at("latency_max_ms");
  ASSERT_EQ(figures.size(), 3u);
  EXPECT_LT(s.baseline->sample.pooled.summary.at("latency_max_ms"), 5.0);
}

// A stored run whose windows say load and service shared a CPU in `pct` % of
// their samples (the host sampler's per-window figure).
RunRecord placed_run(int n, double pct, uint64_t rps = 1000, int samples = 10) {
  RunRecord run = synthetic_run(n, rps, 2.0);
  nlohmann::json windows = nlohmann::json::array();
  for (const auto& it : run.iterations)
    windows.push_back({{"iteration", it.index}, {"samples", samples}, {"shared_cpu_pct", pct}});
  run.host_samples_json = nlohmann::json{{"version", 1}, {"windows", windows}}.dump();
  return run;
}

TEST_F(StoreFixture, ARunsPlacementIsItsKeptWindowsSampleWeightedShare) {
  RunRecord run = placed_run(1, 40);
  auto windows = nlohmann::json::parse(run.host_samples_json)["windows"];
  windows[0]["shared_cpu_pct"] = 100;  // iteration 0 is discarded: not counted
  windows[1]["shared_cpu_pct"] = 10;
  windows[1]["samples"] = 20;
  run.host_samples_json = nlohmann::json{{"windows", windows}}.dump();
  EXPECT_DOUBLE_EQ(stored_shared_cpu_pct(run).value(), (10.0 * 20 + 40 * 10 + 40 * 10) / 40);
  EXPECT_FALSE(stored_shared_cpu_pct(synthetic_run(1, 1000, 2)));  // windows that do not say
  // 3 kept windows of 6 samples: too few to place the run (kMinPlacementSamples).
  EXPECT_FALSE(stored_shared_cpu_pct(placed_run(1, 40, 1000, 6)));
  EXPECT_TRUE(stored_shared_cpu_pct(placed_run(1, 40, 1000, 7)));
}

TEST_F(StoreFixture, ARunOfOnePlacementClassIsJudgedAgainstRunsOfItsClassOnly) {
  std::vector<int64_t> mixed, apart;
  for (int i = 1; i <= 4; ++i) mixed.push_back(store.record(placed_run(i, 45)));
  for (int i = 5; i <= 6; ++i) apart.push_back(store.record(placed_run(i, 8, 880)));
  auto failed_apart = placed_run(7, 5, 870);  // a failed run of a mixed run's commit
  failed_apart.ci.commit = synthetic_run(4, 1000, 2).ci.commit;
  failed_apart.verdict = Verdict::kFail;
  auto failed = store.record(failed_apart);
  auto query = query_for(synthetic_run(1, 1000, 2));

  // Without a class: the newest three, and the failed replicate of run 4's commit.
  BaselinePolicy policy{3, 0, std::nullopt};
  EXPECT_EQ(select_baseline(store, query, policy).baseline->run_ids,
            (std::vector<int64_t>{failed, apart[1], apart[0], mixed[3]}));
  policy.placement_class = "mixed";
  policy.shared_cpu_pct = 50;
  auto s = select_baseline(store, query, policy);
  ASSERT_TRUE(s.baseline);
  // The newest mixed runs, looked for past the two apart ones; the apart failed
  // replicate of a mixed commit is left out too.
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{mixed[3], mixed[2], mixed[1]}));
  EXPECT_DOUBLE_EQ(s.baseline->sample.pooled.summary.at("throughput_rps"), 1000);
  EXPECT_TRUE(s.incomparable.empty());
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes.back().find("2 of the 3 newest baseline runs were apart"), std::string::npos)
      << s.notes.back();

  policy.placement_class = "apart";
  policy.shared_cpu_pct = 3;
  s = select_baseline(store, query, policy);
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{apart[1], apart[0]}));
}

TEST_F(StoreFixture, OnlyRunsOfTheOtherPlacementClassLeaveTheRunIncomparable) {
  for (int i = 1; i <= 3; ++i) store.record(placed_run(i, 60));
  BaselinePolicy policy{3, 0, std::nullopt};
  policy.placement_class = "apart";
  policy.shared_cpu_pct = 4;
  auto s = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), policy);
  EXPECT_FALSE(s.baseline);
  EXPECT_NE(s.incomparable.find("4 % of samples (apart)"), std::string::npos) << s.incomparable;
  EXPECT_NE(s.incomparable.find("every eligible baseline run was mixed"), std::string::npos);
  // Runs that do not say their class (older runs, a remote service) still count.
  store.record(synthetic_run(4, 1000, 2));
  s = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), policy);
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids.size(), 1u);
}

// Issue 27: after a step that passed (an improvement, or a slowdown inside the
// limits), the runs of the old level are no baseline for the new one.
TEST_F(StoreFixture, TheBaselineIsTheCurrentSegmentAfterAChangePoint) {
  std::vector<int64_t> ids;
  for (int i = 1; i <= 8; ++i) ids.push_back(store.record(synthetic_run(i, 1000, 2.0)));
  for (int i = 9; i <= 13; ++i) ids.push_back(store.record(synthetic_run(i, 1100, 2.0)));
  auto query = query_for(synthetic_run(1, 1000, 2));
  // The search reads window + drift window runs (what store prune keeps): all 13.
  auto s = select_baseline(store, query, {8, 12, {}});
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{ids[12], ids[11], ids[10], ids[9], ids[8]}));
  EXPECT_DOUBLE_EQ(s.baseline->sample.pooled.summary.at("throughput_rps"), 1100);
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes.back().find("change point at run " + std::to_string(ids[8])), std::string::npos)
      << s.notes.back();
  EXPECT_NE(s.notes.back().find("throughput_rps +10.0 %"), std::string::npos) << s.notes.back();
  // A window inside the new level is the window, as before, and says nothing.
  auto short_window = select_baseline(store, query, {3, 12, {}});
  EXPECT_EQ(short_window.baseline->run_ids, (std::vector<int64_t>{ids[12], ids[11], ids[10]}));
  EXPECT_TRUE(short_window.notes.empty());
  // Without a drift window only the 8 window runs are read: 3 old and 5 new
  // runs are too few to call the step significant, and the window stays whole.
  EXPECT_EQ(select_baseline(store, query, {8, 0, {}}).baseline->run_ids.size(), 8u);
}

// Issue 39: a regression past the warn limit (5 % in the stored profile) that
// warned, run after run on main, is no new normal by repetition: the baseline
// stays the level before it until someone accepts a run of the new one.
TEST_F(StoreFixture, ARegressingStepIsTheBaselineOnlyOnceAccepted) {
  std::vector<int64_t> ids;
  for (int i = 1; i <= 10; ++i) ids.push_back(store.record(synthetic_run(i, 1000, 2.0)));
  for (int i = 11; i <= 16; ++i) ids.push_back(store.record(synthetic_run(i, 900, 2.0)));
  auto query = query_for(synthetic_run(1, 1000, 2));
  auto s = select_baseline(store, query, {5, 20, {}});
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{ids[9], ids[8], ids[7], ids[6], ids[5]}));
  EXPECT_DOUBLE_EQ(s.baseline->sample.pooled.summary.at("throughput_rps"), 1000);
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes.back().find("change point at run " + std::to_string(ids[10])),
            std::string::npos)
      << s.notes.back();
  EXPECT_NE(s.notes.back().find("throughput_rps -10.0 %"), std::string::npos) << s.notes.back();
  EXPECT_NE(s.notes.back().find("perfgate accept"), std::string::npos) << s.notes.back();
  // Accepted: the accepted run and those after it are the baseline.
  store.set_review(ids[12], {"accepted", "the new parser is worth it", "ci", "2026-11-20"});
  s = select_baseline(store, query, {5, 20, {}});
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>{ids[15], ids[14], ids[13], ids[12]}));
  EXPECT_DOUBLE_EQ(s.baseline->sample.pooled.summary.at("throughput_rps"), 900);
}

// The same for a metric where lower is better, and a step that improves is
// taken without anyone's word (the test above: throughput +10 %).
TEST_F(StoreFixture, ALatencyStepUpIsARegressionAndAStepDownIsNot) {
  std::vector<RunRecord> history;
  for (int i = 1; i <= 20; ++i) {
    history.push_back(synthetic_run(i, 1000, i <= 10 ? 2.0 : 2.5));
    history.back().id = i;
  }
  auto points = history_change_points(history, {"latency_p99_ms"});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].run_id, 11);
  EXPECT_TRUE(points[0].regressing);
  std::reverse(history.begin(), history.end());
  points = history_change_points(history, {"latency_p99_ms"});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_FALSE(points[0].regressing);
}

// A step smaller than the metric's warn limit is no change point: its runs are
// one level, and the baseline the last window.
TEST_F(StoreFixture, AStepWithinTheWarnLimitIsNoChangePoint) {
  std::vector<RunRecord> history;
  for (int i = 1; i <= 20; ++i) {
    history.push_back(synthetic_run(i, i <= 10 ? 1000 : 970, 2.0));
    history.back().id = i;
  }
  EXPECT_TRUE(history_change_points(history, {"throughput_rps"}).empty());  // -3 %, warn 5 %
  for (auto& run : history)
    run.profile_json = R"({"name": "hello",
    "target": {"url": "http://127.0.0.1:8080/"}, "load": {"duration": "1s"},
    "thresholds": {"throughput": {"warn": "2%", "fail": "4%"}}})";
  EXPECT_EQ(history_change_points(history, {"throughput_rps"}).size(), 1u);
  EXPECT_DOUBLE_EQ(change_point_min_step_pct(stored_thresholds(history[0]), "throughput_rps"), 2);
  EXPECT_DOUBLE_EQ(change_point_min_step_pct({}, "throughput_rps"), kChangePointDefaultStepPct);
  ThresholdSet fail_only;
  fail_only["throughput_rps"].fail_pct = 8;
  EXPECT_DOUBLE_EQ(change_point_min_step_pct(fail_only, "throughput_rps"), 8);
}

TEST_F(StoreFixture, WithoutAChangePointTheBaselineIsTheLastWindow) {
  std::vector<int64_t> ids;
  // Runs that scatter by +-1 % but do not step.
  for (int i = 1; i <= 13; ++i)
    ids.push_back(
        store.record(synthetic_run(i, 1000 + static_cast<uint64_t>((i * 7) % 5) * 5, 2.0)));
  auto s = select_baseline(store, query_for(synthetic_run(1, 1000, 2)), {8, 12, {}});
  ASSERT_TRUE(s.baseline);
  EXPECT_EQ(s.baseline->run_ids, (std::vector<int64_t>(ids.rbegin(), ids.rbegin() + 8)));
  EXPECT_TRUE(s.notes.empty());
}

// A step is confirmed once a level's five runs stand after it (10 runs before
// it; docs/statistics.md), by one run, and only once.
TEST_F(StoreFixture, OneRunAtANewLevelConfirmsItsChangePointOnce) {
  std::vector<int64_t> ids;
  auto stored = [&](RunRecord run) {
    run.id = store.record(run);
    ids.push_back(run.id);
    return run;
  };
  for (int i = 1; i <= 10; ++i)
    EXPECT_TRUE(confirmed_change_points(store, stored(synthetic_run(i, 1000, 2.0))).empty());
  std::vector<int> confirming;  // the n of each run that confirmed something
  std::vector<RunChangePoint> found;
  for (int i = 11; i <= 20; ++i) {
    auto points = confirmed_change_points(store, stored(synthetic_run(i, 1100, 2.0)));
    if (!points.empty()) confirming.push_back(i);
    found.insert(found.end(), points.begin(), points.end());
  }
  ASSERT_EQ(confirming.size(), 1u);
  EXPECT_GE(confirming[0], 15);  // a level rests on five runs at least
  EXPECT_LE(confirming[0], 17);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].metric, "throughput_rps");
  EXPECT_EQ(found[0].run_id, ids[10]);
  EXPECT_NEAR(found[0].size_pct, 10.0, 1e-9);
  // A run of another branch (judged against main) confirms nothing of main's.
  auto feature = synthetic_run(21, 700, 2.0, "feature");
  feature.ci.change_request = true;
  EXPECT_TRUE(confirmed_change_points(store, stored(feature)).empty());
}

}  // namespace
}  // namespace perfgate
