#include "perfgate/store/prune_policy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "perfgate/core/error.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/store_maintenance.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using testing::synthetic_run;
using testing::TempDir;

// check_store() without its histogram-count finding: synthetic runs record 200
// latencies for any response count. Dangling texts or rows would show here.
std::vector<std::string> structural_problems(BaselineStore& store) {
  std::vector<std::string> out;
  for (auto& problem : check_store(store))
    if (problem.find("histogram holds") == std::string::npos) out.push_back(problem);
  return out;
}

// Judged with a window of 3 and a drift window of 6, as the stored profile says.
const std::string kProfile = R"({"name": "hello", "target": {"url": "http://127.0.0.1:8080/"},
  "baseline": {"window": 3, "drift_window": 6},
  "thresholds": {"throughput": {"warn": "5%", "fail": "10%"}}})";

// 120 runs: two hosts, main and two feature branches, failures, saturated and
// rejected runs, an accepted one, and a paired run.
void fill(BaselineStore& store) {
  for (int n = 1; n <= 120; ++n) {
    auto run = synthetic_run(n % 28 + 1, 1000 + static_cast<uint64_t>(n % 7) * 10, 2.0,
                             n % 5 == 0 ? "feature-" + std::to_string(n % 2) : "main");
    run.profile_json = kProfile;
    run.host.fields["cpus"] = n % 3 == 0 ? "8" : "2";
    if (n % 11 == 0) run.verdict = Verdict::kFail;
    if (n % 13 == 0) run.saturation = {true, {"steal 9%"}, {}};
    if (n % 17 == 0) run.review = {"rejected", "noisy", "ci", "2026-11-30T00:00:00Z"};
    if (n == 40) run.review = {"accepted", "new normal", "ci", "2026-11-30T00:00:00Z"};
    if (n == 30) run.kind = "paired-baseline", run.pair = "p30";
    if (n == 31) run.kind = "paired", run.pair = "p30";
    store.record(run);
  }
}

std::vector<int64_t> ids(const std::optional<Baseline>& b) {
  return b ? b->run_ids : std::vector<int64_t>{};
}

TEST(PrunePolicy, APrunedStoreChoosesTheSameBaselinesAsTheWholeOne) {
  TempDir dir;
  auto whole_path = dir / "whole.db", pruned_path = dir / "pruned.db";
  {
    auto store = BaselineStore::open(whole_path);
    fill(store);
  }
  fs::copy_file(whole_path, pruned_path);
  auto whole = BaselineStore::open(whole_path);
  auto pruned = BaselineStore::open(pruned_path);
  auto result = prune_by_policy(pruned, {3, std::nullopt});
  EXPECT_GT(result.deleted, 30);
  EXPECT_EQ(result.kept + result.deleted, 120);
  EXPECT_EQ(structural_problems(pruned), std::vector<std::string>{});

  auto hash = whole.run(1)->profile_hash;
  std::vector<std::string> hosts = {"", whole.run(1)->host.key(), whole.run(3)->host.key()};
  for (const std::string branch : {"main", "feature-0", "feature-1", "gone"})
    for (const auto& host : hosts) {
      BaselineQuery query{"hello", hash, branch, host, 0};
      BaselinePolicy policy{3, 6, std::nullopt};
      auto a = select_baseline(whole, query, policy);
      auto b = select_baseline(pruned, query, policy);
      auto where = branch + " on host '" + host + "'";
      EXPECT_EQ(ids(a.baseline), ids(b.baseline)) << where;
      EXPECT_EQ(ids(a.drift_reference), ids(b.drift_reference)) << where;
      EXPECT_EQ(a.notes, b.notes) << where;
      if (a.baseline && b.baseline) {
        EXPECT_EQ(a.baseline->sample.pooled.summary, b.baseline->sample.pooled.summary) << where;
      }
    }
  // Accepted runs and both sides of a kept pair stay; a long history is cut.
  EXPECT_TRUE(pruned.run(40));
  EXPECT_EQ(pruned.run(30).has_value(), pruned.run(31).has_value());
  EXPECT_LT(pruned.run_count(), whole.run_count());
}

TEST(PrunePolicy, ANewRunIsJudgedAgainstTheSameRunsAfterPruning) {
  TempDir dir;
  auto whole_path = dir / "whole.db", pruned_path = dir / "pruned.db";
  {
    auto store = BaselineStore::open(whole_path);
    fill(store);
  }
  fs::copy_file(whole_path, pruned_path);
  auto whole = BaselineStore::open(whole_path);
  auto pruned = BaselineStore::open(pruned_path);
  prune_by_policy(pruned, {0, std::nullopt});
  auto next = synthetic_run(29, 990, 2.1);
  next.profile_json = kProfile;
  auto id_whole = whole.record(next), id_pruned = pruned.record(next);
  EXPECT_EQ(id_whole, id_pruned);  // ids are never reused
  BaselineQuery query{"hello", next.profile_hash, "main", next.host.key(), id_whole};
  auto a = select_baseline(whole, query, {3, 6, std::nullopt});
  auto b = select_baseline(pruned, query, {3, 6, std::nullopt});
  ASSERT_TRUE(a.baseline);
  EXPECT_EQ(ids(a.baseline), ids(b.baseline));
  EXPECT_EQ(ids(a.drift_reference), ids(b.drift_reference));
}

// A store that must fit a size loses the oldest runs judging does not need, and
// still judges the next run exactly as the whole one does.
TEST(PrunePolicy, AStorePrunedToASizeFitsAndJudgesTheNextRunAsTheWholeOne) {
  TempDir dir;
  auto whole_path = dir / "whole.db", pruned_path = dir / "pruned.db";
  {
    auto store = BaselineStore::open(whole_path);
    fill(store);
  }
  fs::copy_file(whole_path, pruned_path);
  auto whole = BaselineStore::open(whole_path);
  auto pruned = BaselineStore::open(pruned_path);
  auto by_policy_only = prune_by_policy(pruned, {1000, std::nullopt});
  EXPECT_EQ(by_policy_only.deleted, 0);  // every run is among the newest 1000
  auto vacuumed = prune_by_policy(pruned, {1000, int64_t{1} << 40});
  ASSERT_GT(vacuumed.bytes, 0);
  int64_t limit = vacuumed.bytes * 3 / 4;
  auto result = prune_by_policy(pruned, {1000, limit});
  EXPECT_GT(result.deleted, 0);
  EXPECT_FALSE(result.over_size);
  EXPECT_LE(result.bytes, limit);
  EXPECT_LE(static_cast<int64_t>(fs::file_size(pruned_path)), limit);
  EXPECT_EQ(structural_problems(pruned), std::vector<std::string>{});
  EXPECT_TRUE(pruned.run(40));  // accepted
  EXPECT_NE(pruned_summary(pruned).find("size"), std::string::npos) << pruned_summary(pruned);

  auto next = synthetic_run(29, 990, 2.1);
  next.profile_json = kProfile;
  auto id = whole.record(next);
  EXPECT_EQ(pruned.record(next), id);
  for (const auto& host : {std::string(), next.host.key()}) {
    BaselineQuery query{"hello", next.profile_hash, "main", host, id};
    auto a = select_baseline(whole, query, {3, 6, std::nullopt});
    auto b = select_baseline(pruned, query, {3, 6, std::nullopt});
    ASSERT_TRUE(a.baseline);
    EXPECT_EQ(ids(a.baseline), ids(b.baseline));
    EXPECT_EQ(ids(a.drift_reference), ids(b.drift_reference));
    EXPECT_EQ(a.baseline->sample.pooled.summary, b.baseline->sample.pooled.summary);
  }
}

// What judging needs stays even when it alone is bigger than the size asked for.
TEST(PrunePolicy, ASizeTooSmallKeepsWhatJudgingNeedsAndSaysSo) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "store.db");
  fill(store);
  auto result = prune_by_policy(store, {0, 1});
  EXPECT_TRUE(result.over_size);
  EXPECT_GT(result.kept, 0);
  EXPECT_TRUE(store.run(40));
  EXPECT_TRUE(store.run(120));  // the newest: ids are never given twice
}

TEST(PrunePolicy, ParsesByteSizes) {
  EXPECT_EQ(parse_byte_size("50MB"), 50'000'000);
  EXPECT_EQ(parse_byte_size("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(parse_byte_size("800kB"), 800'000);
  EXPECT_EQ(parse_byte_size("2MiB"), 2 << 20);
  EXPECT_EQ(parse_byte_size("4096"), 4096);
  EXPECT_EQ(parse_byte_size("4096B"), 4096);
  for (const char* bad : {"", "MB", "-5MB", "0", "1.2.3MB", "50 MB", "50TB", "."})
    EXPECT_FALSE(parse_byte_size(bad)) << bad;
}

}  // namespace
}  // namespace perfgate
