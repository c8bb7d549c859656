#include "perfgate/store/store_maintenance.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <sstream>

#include "perfgate/core/error.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::TempDir;

// A run whose histograms agree with its response counts, as real runs do.
RunRecord consistent_run(const std::string& branch = "main",
                         const std::string& created_at = "2026-11-29T23:43:29Z") {
  RunRecord run;
  run.created_at = created_at;
  run.profile_name = "hello";
  run.profile_hash = "abc123";
  run.profile_json = "{}";
  run.ci = {"local", "c0ffee", branch, "main", "1", ""};
  run.host.fields = {{"cpus", "2"}};
  run.engine = "native";
  run.threads = 1;
  run.connections = 2;
  for (int i = 0; i < 3; ++i) {
    Iteration it;
    it.index = i;
    it.discarded = i == 0;
    it.duration = std::chrono::milliseconds(100);
    for (uint64_t v = 1; v <= 50; ++v) it.stats.latency.record_ns(v * 1000 * (i + 1));
    it.stats.responses = it.stats.latency.count();
    it.stats.statuses.by_class[2] = it.stats.responses;
    run.iterations.push_back(it);
  }
  run.service_cpu_s = {0.1, 0.2, 0.3};
  return run;
}

void raw_exec(BaselineStore& store, const std::string& sql) {
  ASSERT_EQ(sqlite3_exec(store.connection(), sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
}

TEST(StoreMaintenance, CleanStorePassesCheck) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  store.record(consistent_run());
  auto aborted = consistent_run();
  aborted.status = "aborted";
  aborted.iterations.clear();
  aborted.service_cpu_s.clear();
  store.record(aborted);
  EXPECT_EQ(check_store(store), std::vector<std::string>{});
}

TEST(StoreMaintenance, CheckFindsBrokenInvariants) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  for (int i = 0; i < 5; ++i) store.record(consistent_run());
  raw_exec(store, "UPDATE runs SET eligible = 0 WHERE id = 1");
  raw_exec(store, "UPDATE iterations SET responses = 7 WHERE run_id = 2 AND idx = 1");
  raw_exec(store, "UPDATE iterations SET idx = 5 WHERE run_id = 3 AND idx = 2");
  raw_exec(store, "UPDATE iterations SET latency = x'00' WHERE run_id = 4 AND idx = 0");
  raw_exec(store, "UPDATE runs SET shared_cpu_pct = 50 WHERE id = 5");
  raw_exec(store,
           "INSERT INTO runs SELECT 9, created_at, profile_name, profile_hash, "
           "profile_json, commit_sha, branch, baseline_branch, pipeline_id, ci_provider, "
           "host_key, host_json, engine, threads, connections, verdict, saturated, "
           "saturation_json, status, eligible, kind, review, review_reason, review_by, review_at, "
           "pair, profile_ref, host_ref, cost_json, regressed, figures, shared_cpu_pct FROM runs "
           "WHERE id = 4");
  auto problems = check_store(store);
  ASSERT_EQ(problems.size(), 6u) << ::testing::PrintToString(problems);
  EXPECT_NE(problems[0].find("run 2 iteration 1: histogram holds 50 values for 7"),
            std::string::npos);
  EXPECT_NE(problems[1].find("run 3: iteration 5 where 2 was expected"), std::string::npos);
  EXPECT_NE(problems[2].find("run 4 iteration 0: histogram unreadable"), std::string::npos);
  EXPECT_NE(problems[3].find("run 1: eligible flag disagrees"), std::string::npos);
  EXPECT_NE(problems[4].find("run 5: stored figures disagree"), std::string::npos);
  EXPECT_NE(problems[5].find("run 9: no iterations"), std::string::npos);
}

TEST(StoreMaintenance, ExportImportRoundTripSkipsDuplicates) {
  TempDir dir;
  auto from = BaselineStore::open(dir / "from.db");
  auto saturated = consistent_run("feature");
  saturated.saturation = {true, {"steal 30%"}, {"baseline side: CPU steal 8% (limit 5%)"}};
  saturated.host_samples_json = R"({"cpu":[1]})";
  from.record(consistent_run());
  from.record(saturated);
  std::stringstream lines;
  EXPECT_EQ(export_runs(from, lines), 2);
  auto text = lines.str();
  auto to = BaselineStore::open(dir / "to.db");
  std::istringstream in(text);
  auto counts = import_runs(to, in, "runs.jsonl");
  EXPECT_EQ(counts.added, 2);
  EXPECT_EQ(counts.skipped, 0);
  std::istringstream again(text + text);
  counts = import_runs(to, again, "runs.jsonl");
  EXPECT_EQ(counts.added, 0);
  EXPECT_EQ(counts.skipped, 4);
  auto back = to.run(2);
  ASSERT_TRUE(back);
  EXPECT_EQ(to_json_line(*back, false), to_json_line(*from.run(2), false));
  EXPECT_EQ(back->saturation.shared, saturated.saturation.shared);
  EXPECT_EQ(check_store(to), std::vector<std::string>{});
}

TEST(StoreMaintenance, ExportFiltersByProfile) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto other = consistent_run();
  other.profile_name = "other";
  store.record(consistent_run());
  store.record(other);
  std::stringstream lines;
  EXPECT_EQ(export_runs(store, lines, "other"), 1);
  EXPECT_EQ(run_from_json_line(lines.str()).profile_name, "other");
}

TEST(StoreMaintenance, MalformedImportAddsNothingAndNamesTheLine) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  std::istringstream in(to_json_line(consistent_run()) + "\n{\"created_at\": 3}\n");
  try {
    import_runs(store, in, "runs.jsonl");
    ADD_FAILURE() << "imported a malformed line";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "runs.jsonl:2: run 2: not a perfgate run (created_at: must be a string"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(store.run_count(), 0);
}

TEST(StoreMaintenance, PruneKeepsNewestPerProfileAndBranch) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  for (int i = 0; i < 5; ++i) store.record(consistent_run("main"));
  for (int i = 0; i < 2; ++i) store.record(consistent_run("feature"));
  EXPECT_EQ(prune_runs(store, {2, std::nullopt}), 3);
  EXPECT_EQ(store.run_count(), 4);
  EXPECT_EQ(store.runs("", 0).back().id, 4);  // the oldest main run left
  EXPECT_EQ(sqlite3_exec(store.connection(), "SELECT 1", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(check_store(store), std::vector<std::string>{});
}

TEST(StoreMaintenance, PruneOlderThanUsesCreatedAt) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  store.record(consistent_run("main", "2001-01-01T00:00:00Z"));
  store.record(consistent_run("main", ""));  // now
  EXPECT_EQ(prune_runs(store, {std::nullopt, std::chrono::hours(24 * 30)}), 1);
  EXPECT_EQ(store.runs("", 0).front().id, 2);
  EXPECT_THROW(prune_runs(store, {}), Error);
}

}  // namespace
}  // namespace perfgate
