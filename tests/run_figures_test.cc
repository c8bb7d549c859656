// The figures a run is judged and charted by, stored once with the run (issue
// 52): packed exactly, written by record() and by the schema step that brings an
// older store to them, and read by baseline selection and change points just as
// the figures computed from the run's iterations were.
#include "perfgate/store/run_figures.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <bit>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "perfgate/core/error.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/baseline_store.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using testing::synthetic_run;
using testing::TempDir;

void sqlite_exec(const fs::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// Each row of `sql` as its columns' texts joined by '|'.
std::vector<std::string> sqlite_rows(const fs::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::vector<std::string> out;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      auto text = sqlite3_column_text(stmt, i);
      row += (i ? "|" : "") + std::string(text ? reinterpret_cast<const char*>(text) : "NULL");
    }
    out.push_back(row);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

void expect_same_bits(const RunFigures& a, const RunFigures& b) {
  ASSERT_EQ(a.summary.size(), b.summary.size());
  for (const auto& [key, value] : a.summary) {
    ASSERT_TRUE(b.summary.contains(key)) << key;
    EXPECT_TRUE(same_bits(value, b.summary.at(key))) << key << ": " << value;
  }
  ASSERT_EQ(a.values.size(), b.values.size());
  for (const auto& [key, values] : a.values) {
    ASSERT_TRUE(b.values.contains(key)) << key;
    ASSERT_EQ(values.size(), b.values.at(key).size()) << key;
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_TRUE(same_bits(values[i], b.values.at(key)[i])) << key << "[" << i << "]";
  }
}

TEST(RunFigures, PackedFiguresComeBackBitForBit) {
  RunFigures figures;
  figures.summary = {{"throughput_rps", 1000.0 / 3},
                     {"latency_p99_ms", 2.097151},  // whole nanoseconds: the short form
                     {"error_rate_pct", 0.0},
                     {"latency_max_ms", -0.0},
                     {"service_cpu_us_per_request", std::numeric_limits<double>::quiet_NaN()},
                     {"requests_per_service_cpu_s", std::numeric_limits<double>::infinity()},
                     {"a_metric_not_listed", -1.5},
                     {"summary_only", 1e300}};
  figures.values = {{"throughput_rps", {333.25, 1e-9, 0.1}},
                    {"latency_p99_ms", {2.097151, 0.000001, 9007199254.740991}},
                    {"error_rate_pct", {}},
                    {"a_metric_not_listed", {std::numeric_limits<double>::denorm_min()}},
                    {"values_only", {4.0}}};
  auto packed = pack_figures(figures);
  expect_same_bits(unpack_figures(packed, "run 1"), figures);
  // A latency is a whole number of nanoseconds over 1e6: a few bytes, not eight.
  RunFigures latency;
  latency.summary["latency_p99_ms"] = 2.097151;
  EXPECT_LE(pack_figures(latency).size(), 1 + 1 + 1 + 1 + 4u);
}

TEST(RunFigures, DamagedBytesAreAnErrorNamingTheRun) {
  auto figures = run_figures_of(synthetic_run(1, 1000, 2.0));
  auto packed = pack_figures(figures);
  for (size_t cut = 0; cut < packed.size(); ++cut) {
    try {
      unpack_figures(packed.substr(0, cut), "store.db: run 7");
      ADD_FAILURE() << "read figures cut to " << cut << " bytes";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("store.db: run 7: stored figures are damaged"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(unpack_figures(packed + "x", "run 7"), Error);
  EXPECT_THROW(unpack_figures("Z" + packed.substr(1), "run 7"), Error);
  std::string huge_count = "F\xff\xff\xff\xff\x0f";
  EXPECT_THROW(unpack_figures(huge_count, "run 7"), Error);
}

// A run with everything its figures read: windows with the service's CPU and
// the placement, a discarded iteration, errors, a status the store keeps only
// by class.
RunRecord measured_run(int n, uint64_t rps, double latency_ms) {
  RunRecord run = synthetic_run(n, rps, latency_ms);
  nlohmann::json windows = nlohmann::json::array();
  for (const auto& it : run.iterations)
    windows.push_back({{"iteration", it.index},
                       {"samples", 10},
                       {"shared_cpu_pct", 30.0 + n},
                       {"service_cpu_s", 0.1 + 0.01 * it.index + 1e-5 * n}});
  run.host_samples_json = nlohmann::json{{"version", 1}, {"windows", windows}}.dump();
  run.iterations[2].stats.errors.timeout = 3;
  run.iterations[3].stats.statuses.count(404, true);  // a 404 listed as a success
  return run;
}

// What the store's rows hold of each run's figures, as text.
std::vector<std::string> stored_columns(const fs::path& path) {
  return sqlite_rows(path, "SELECT id, hex(figures), quote(shared_cpu_pct) FROM runs ORDER BY id");
}

class StoredFiguresTest : public ::testing::Test {
 protected:
  // Runs of every kind the figures come from: samples with the service's CPU,
  // the CPU in the iterations' column, a part of it (read back as none), none.
  std::vector<int64_t> record_runs() {
    auto store = BaselineStore::open(path_);
    std::vector<int64_t> ids;
    for (int i = 1; i <= 3; ++i) ids.push_back(store.record(measured_run(i, 1000 + 10 * i, 2.0)));
    auto with_column = synthetic_run(4, 900, 3.0);
    with_column.service_cpu_s = {0.5, 0.25, 0.125, 0.0625};
    ids.push_back(store.record(with_column));
    auto partial = measured_run(5, 950, 2.5);
    partial.service_cpu_s = {0.5, 0.25};  // not every iteration: not kept
    ids.push_back(store.record(partial));
    ids.push_back(store.record(synthetic_run(6, 800, 4.0)));
    return ids;
  }
  TempDir dir_;
  fs::path path_ = dir_ / "perfgate.db";
};

TEST_F(StoredFiguresTest, TheStoreKeepsTheFiguresItsRunsReadBackGive) {
  auto ids = record_runs();
  auto store = BaselineStore::open(path_, BaselineStore::Mode::kReadOnly);
  auto headers = store.runs("", 0);
  ASSERT_EQ(headers.size(), ids.size());
  for (const auto& header : headers) {
    ASSERT_TRUE(header.stored) << "run " << header.id;
    EXPECT_TRUE(header.iterations.empty());
    auto full = store.run(header.id).value();
    full.stored.reset();
    auto computed = compute_stored_figures(full);
    expect_same_bits(header.stored->figures, computed.figures);
    EXPECT_EQ(header.stored->shared_cpu_pct, computed.shared_cpu_pct) << "run " << header.id;
  }
  // The runs measured the service's cost and placement where their samples said so.
  auto first = store.run(ids[0]).value();
  EXPECT_EQ(first.stored->figures.values.at("service_cpu_us_per_request").size(), 3u);
  EXPECT_DOUBLE_EQ(first.stored->shared_cpu_pct.value(), 31.0);
  auto column = store.run(ids[3]).value();
  EXPECT_DOUBLE_EQ(column.stored->figures.summary.at("service_cpu_us_per_request"),
                   0.125 * 1e6 / 900);  // the median kept iteration
  EXPECT_FALSE(column.stored->shared_cpu_pct);
}

TEST_F(StoredFiguresTest, TheSchemaStepFillsAnOldStoresFiguresAsARecordedRunsAre) {
  record_runs();
  auto fresh = stored_columns(path_);
  ASSERT_EQ(fresh.size(), 6u);
  // As schema 8 kept them: no figures at all.
  sqlite_exec(path_,
              "ALTER TABLE runs DROP COLUMN figures; ALTER TABLE runs DROP COLUMN shared_cpu_pct; "
              "PRAGMA user_version = 8");
  ASSERT_TRUE(
      sqlite_rows(path_, "SELECT 1 FROM pragma_table_info('runs') WHERE name = 'figures'").empty());
  {
    auto store = BaselineStore::open(path_);
    EXPECT_EQ(store.schema_version(), 9);
  }
  EXPECT_EQ(stored_columns(path_), fresh);
}

TEST_F(StoredFiguresTest, AnOldStoreWithADamagedRunStillOpensAndSaysWhichRunIsDamaged) {
  auto ids = record_runs();
  sqlite_exec(path_,
              "ALTER TABLE runs DROP COLUMN figures; ALTER TABLE runs DROP COLUMN shared_cpu_pct; "
              "PRAGMA user_version = 8; UPDATE iterations SET latency = x'7a00ffffff01' "
              "WHERE run_id = " +
                  std::to_string(ids[1]));
  auto store = BaselineStore::open(path_);
  EXPECT_EQ(store.schema_version(), 9);
  EXPECT_EQ(sqlite_rows(path_, "SELECT id FROM runs WHERE figures IS NULL"),
            std::vector<std::string>{std::to_string(ids[1])});
  EXPECT_TRUE(store.run(ids[0]));
  try {
    store.runs("", 0);
    ADD_FAILURE() << "listed a damaged run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("store delete " + std::to_string(ids[1])),
              std::string::npos)
        << e.what();
  }
}

// A history with a level shift: 8 runs at 1000 req/s, then 8 at 850; each
// commit run twice on one day, so that the noise pool has groups.
void record_shift(BaselineStore& store) {
  for (int i = 1; i <= 16; ++i) {
    auto run = measured_run(i, i <= 8 ? 1000 + 7 * (i % 3) : 850 + 7 * (i % 3), i <= 8 ? 2.0 : 2.4);
    run.ci.commit = "c0ffee" + std::to_string((i + 1) / 2);
    run.created_at = synthetic_run((i + 1) / 2, 1, 1).created_at;
    store.record(run);
  }
}

TEST_F(StoredFiguresTest, ChangePointsAndBaselinesReadFromStoredFiguresAsFromIterations) {
  auto store = BaselineStore::open(path_);
  record_shift(store);
  auto headers = store.runs("hello", 0);
  std::reverse(headers.begin(), headers.end());  // oldest first
  std::vector<RunRecord> computed;
  for (const auto& header : headers) {
    auto full = store.run(header.id).value();
    full.stored.reset();  // as before figures were stored: from the iterations
    computed.push_back(std::move(full));
  }
  auto metrics = gated_metrics(headers.back());
  auto from_rows = history_change_points(headers, metrics);
  auto from_iterations = history_change_points(computed, metrics);
  ASSERT_FALSE(from_rows.empty());
  ASSERT_EQ(from_rows.size(), from_iterations.size());
  for (size_t i = 0; i < from_rows.size(); ++i) {
    EXPECT_EQ(from_rows[i].metric, from_iterations[i].metric);
    EXPECT_EQ(from_rows[i].run_id, from_iterations[i].run_id);
    EXPECT_EQ(from_rows[i].index, from_iterations[i].index);
    EXPECT_TRUE(same_bits(from_rows[i].size_pct, from_iterations[i].size_pct));
    EXPECT_EQ(from_rows[i].p, from_iterations[i].p);
    EXPECT_EQ(from_rows[i].regressing, from_iterations[i].regressing);
  }
  auto pooled_rows = pool_runs(headers).sample;
  auto pooled_iterations = pool_runs(computed).sample;
  expect_same_bits(pooled_rows.pooled, pooled_iterations.pooled);
  EXPECT_EQ(pooled_rows.run_figures, pooled_iterations.run_figures);
  EXPECT_EQ(pooled_rows.run_days, pooled_iterations.run_days);
  auto noise_rows = pooled_noise(headers), noise_iterations = pooled_noise(computed);
  ASSERT_FALSE(noise_rows.empty());
  ASSERT_EQ(noise_rows.size(), noise_iterations.size());
  for (const auto& [key, noise] : noise_rows) {
    EXPECT_EQ(noise.within_df, noise_iterations.at(key).within_df) << key;
    EXPECT_TRUE(same_bits(noise.log_sd, noise_iterations.at(key).log_sd)) << key;
  }
}

TEST_F(StoredFiguresTest, ARunsPlacementIsReadFromItsRow) {
  auto store = BaselineStore::open(path_);
  auto id = store.record(measured_run(1, 1000, 2.0));
  auto header = store.runs("hello", 1).front();
  ASSERT_TRUE(header.host_samples_json.empty());  // no samples read
  ASSERT_TRUE(stored_shared_cpu_pct(header));
  EXPECT_DOUBLE_EQ(*stored_shared_cpu_pct(header), 31.0);
  EXPECT_EQ(stored_shared_cpu_pct(header), stored_shared_cpu_pct(*store.run(id)));
}

}  // namespace
}  // namespace perfgate
