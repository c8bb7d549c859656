// Compact runs (schema 5): shared texts stored once, raw host samples kept only
// where a saturation rule fired, and every figure read back exactly.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <string>

#include "perfgate/store/baseline_store.h"
#include "perfgate/store/store_maintenance.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::synthetic_run;
using testing::TempDir;

// What the host sampler writes: per-iteration windows and the raw samples.
constexpr const char* kSamples =
    R"({"samples":[{"cpu_busy_pct":12.5,"t_s":0.25},{"cpu_busy_pct":13.0,"t_s":0.5}],)"
    R"("samples_total":2,"version":1,"windows":[{"iteration":0,"service_cpu_s":0.5}]})";

// check_store() without its histogram-count finding: synthetic runs record 200
// latencies for any response count. Dangling texts or rows would show here.
std::vector<std::string> structural_problems(BaselineStore& store) {
  std::vector<std::string> out;
  for (auto& problem : check_store(store))
    if (problem.find("histogram holds") == std::string::npos) out.push_back(problem);
  return out;
}

int64_t count(BaselineStore& store, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(store.connection(), sql, -1, &stmt, nullptr);
  int64_t n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
  sqlite3_finalize(stmt);
  return n;
}

TEST(CompactStore, ProfileAndHostAreStoredOnceAndReadBackExactly) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  for (int n = 1; n <= 5; ++n) store.record(synthetic_run(n, 1000, 2.0));
  auto other = synthetic_run(6, 1000, 2.0);
  other.host.fields["cpus"] = "8";
  auto id = store.record(other);
  EXPECT_EQ(count(store, "SELECT count(*) FROM texts"), 3);  // one profile, two hosts
  EXPECT_EQ(count(store, "SELECT count(*) FROM runs WHERE profile_json != ''"), 0);
  auto back = store.run(id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->profile_json, other.profile_json);
  EXPECT_EQ(back->host.fields, other.host.fields);
  EXPECT_EQ(store.run(1)->host.fields.at("cpus"), "2");
  ASSERT_EQ(back->iterations.size(), other.iterations.size());
  for (size_t i = 0; i < other.iterations.size(); ++i)
    EXPECT_TRUE(back->iterations[i].stats.latency == other.iterations[i].stats.latency) << i;
  // Histograms are packed (zlib's tag 'z', 0x7A) when that is smaller.
  EXPECT_GT(count(store, "SELECT count(*) FROM iterations WHERE hex(substr(latency, 1, 1)) = '7A'"),
            0);
  EXPECT_EQ(structural_problems(store), std::vector<std::string>{});
}

TEST(CompactStore, RawSamplesAreKeptOnlyWhereASaturationRuleFired) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto clean = synthetic_run(1, 1000, 2.0);
  clean.host_samples_json = kSamples;
  auto saturated = clean;
  saturated.saturation = {true, {"foreign CPU 80% of the host"}, {}};
  auto kept = nlohmann::json::parse(store.run(store.record(clean))->host_samples_json);
  EXPECT_TRUE(kept["samples"].empty());
  EXPECT_EQ(kept["samples_total"], 2);
  EXPECT_EQ(kept["windows"], nlohmann::json::parse(kSamples)["windows"]);
  EXPECT_EQ(store.run(store.record(saturated))->host_samples_json, kSamples);
  // An import keeps what the export holds.
  EXPECT_EQ(store.run(store.record_all({clean}).front())->host_samples_json, kSamples);
}

TEST(CompactStore, PruneDropsTextsNoRunUsesAnyMore) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto old = synthetic_run(1, 1000, 2.0);
  old.host.fields["cpus"] = "64";
  old.created_at = "2020-01-01T00:00:00Z";
  store.record(old);
  store.record(synthetic_run(2, 1000, 2.0));
  EXPECT_EQ(count(store, "SELECT count(*) FROM texts"), 3);
  EXPECT_EQ(prune_runs(store, {1, std::nullopt}), 1);
  EXPECT_EQ(count(store, "SELECT count(*) FROM texts"), 2);
  EXPECT_EQ(structural_problems(store), std::vector<std::string>{});
}

}  // namespace
}  // namespace perfgate
