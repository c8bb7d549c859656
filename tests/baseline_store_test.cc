#include "perfgate/store/baseline_store.h"

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "perfgate/core/error.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/store_maintenance.h"
#include "support/test_support.h"

namespace perfgate {
namespace {
namespace fs = std::filesystem;
using testing::read_file;
using testing::TempDir;
using testing::write_file;

Iteration make_iteration(int index, bool discarded) {
  Iteration it;
  it.index = index;
  it.discarded = discarded;
  it.duration = std::chrono::seconds(10) + Nanos(index * 1'000'003);
  auto& s = it.stats;
  s.responses = 41'000 + static_cast<uint64_t>(index);
  s.bytes_read = 5'000'000'000ULL + static_cast<uint64_t>(index);  // past 32 bits
  s.errors = ErrorCounts{.connect = 1, .read = 2, .write = 3, .timeout = 4, .other = 5};
  s.statuses.by_class = {6, 7, 40'000, 8, 9, 10};
  for (uint64_t v = 1; v < 5'000; v += 13) s.latency.record_ns(v * 997 * (index + 1));
  return it;
}

RunRecord make_run(const std::string& branch = "main") {
  RunRecord run;
  run.created_at = "2026-11-29T23:43:29Z";
  run.profile_name = "hello";
  run.profile_hash = "abc123";
  run.profile_json = R"({"name":"hello","target":{"url":"http://127.0.0.1:8080/"}})";
  run.ci.provider = "gitlab";
  run.ci.commit = "0123456789abcdef";
  run.ci.branch = branch;
  run.ci.baseline_branch = "main";
  run.ci.pipeline_id = "4242";
  run.host.fields = {
      {"os", "Debian GNU/Linux 12 (bookworm)"}, {"cpus", "4"}, {"somaxconn", "4096"}};
  run.engine = "native";
  run.threads = 2;
  run.connections = 50;
  run.verdict = Verdict::kPass;
  for (int i = 0; i < 4; ++i) run.iterations.push_back(make_iteration(i, i < 2));
  return run;
}

void expect_same_iteration(const Iteration& a, const Iteration& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.discarded, b.discarded);
  EXPECT_EQ(a.duration, b.duration);
  EXPECT_EQ(a.stats.responses, b.stats.responses);
  EXPECT_EQ(a.stats.bytes_read, b.stats.bytes_read);
  EXPECT_EQ(a.stats.errors, b.stats.errors);
  EXPECT_EQ(a.stats.statuses, b.stats.statuses);
  EXPECT_TRUE(a.stats.latency == b.stats.latency) << "histogram of iteration " << a.index;
}

// Everything but the id and the CI summary path, which is a file on one runner.
void expect_same_run(const RunRecord& a, const RunRecord& b) {
  EXPECT_EQ(a.created_at, b.created_at);
  EXPECT_EQ(a.profile_name, b.profile_name);
  EXPECT_EQ(a.profile_hash, b.profile_hash);
  EXPECT_EQ(a.profile_json, b.profile_json);
  EXPECT_EQ(a.ci.provider, b.ci.provider);
  EXPECT_EQ(a.ci.commit, b.ci.commit);
  EXPECT_EQ(a.ci.branch, b.ci.branch);
  EXPECT_EQ(a.ci.baseline_branch, b.ci.baseline_branch);
  EXPECT_EQ(a.ci.pipeline_id, b.ci.pipeline_id);
  EXPECT_EQ(a.host.fields, b.host.fields);
  EXPECT_EQ(a.engine, b.engine);
  EXPECT_EQ(a.threads, b.threads);
  EXPECT_EQ(a.connections, b.connections);
  EXPECT_EQ(a.verdict, b.verdict);
  EXPECT_EQ(a.saturation.saturated, b.saturation.saturated);
  EXPECT_EQ(a.saturation.reasons, b.saturation.reasons);
  EXPECT_EQ(a.saturation.shared, b.saturation.shared);
  EXPECT_EQ(a.status, b.status);
  ASSERT_EQ(a.iterations.size(), b.iterations.size());
  for (size_t i = 0; i < a.iterations.size(); ++i)
    expect_same_iteration(a.iterations[i], b.iterations[i]);
}

// Runs `sql` on `path` through a plain SQLite connection, as another program would.
// The newest run eligible as a baseline: what a window of one starts from (the
// selection may then add failed runs of the same commit, baseline_test.cc).
std::optional<int64_t> newest_baseline(BaselineStore& store, const BaselineQuery& query) {
  auto runs = store.eligible_runs(query, 1, BaselineStore::Depth::kHeader);
  if (runs.empty()) return std::nullopt;
  return runs.front().id;
}

void sqlite_exec(const fs::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

std::string sqlite_text(const fs::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW)
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

// open() must throw a message naming the file and leave every byte as it was.
void expect_rejected_untouched(const fs::path& path, const std::string& expected_words,
                               BaselineStore::Mode mode = BaselineStore::Mode::kReadWrite) {
  auto before = read_file(path);
  try {
    BaselineStore::open(path, mode);
    ADD_FAILURE() << "open() accepted " << path;
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(expected_words), std::string::npos) << message;
  }
  EXPECT_EQ(read_file(path), before);
  // Reading a WAL-format file (one of ours) may leave an empty -wal beside it;
  // any other file must not get one.
  bool wal_format = before.size() > 18 && before[18] == 2;
  if (!wal_format) {
    EXPECT_FALSE(fs::exists(path.string() + "-wal"));
  }
  EXPECT_FALSE(fs::exists(path.string() + "-journal"));
}

TEST(BaselineStore, CreatesTheDefaultFolderAndReopens) {
  TempDir dir;
  auto cwd = fs::current_path();
  fs::current_path(dir.path());
  struct Back {
    fs::path to;
    ~Back() { fs::current_path(to); }
  } back{cwd};
  fs::path path = kDefaultStorePath;
  {
    auto store = BaselineStore::open(path);
    EXPECT_EQ(store.schema_version(), BaselineStore::kSchemaVersion);
    EXPECT_EQ(store.run_count(), 0);
    EXPECT_EQ(store.path(), path);
    EXPECT_GT(store.record(make_run()), 0);
  }
  auto store = BaselineStore::open(path);
  EXPECT_EQ(store.run_count(), 1);
  EXPECT_EQ(store.schema_version(), BaselineStore::kSchemaVersion);
  EXPECT_EQ(sqlite_text(path, "PRAGMA application_id"), std::to_string(0x50664774));
}

// A typo in --store made folders and a new store, and the run said "no
// baseline yet": any folder but the default's must exist.
TEST(BaselineStore, AStoreInAFolderThatDoesNotExistIsRefusedWithTheMkdir) {
  TempDir dir;
  auto path = dir / "baselnes/nested/perfgate.db";
  try {
    BaselineStore::open(path);
    FAIL() << "opened a store in a folder that does not exist";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("folder " + (dir / "baselnes/nested").string() + " does not exist"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("mkdir -p " + (dir / "baselnes/nested").string()), std::string::npos)
        << what;
  }
  EXPECT_FALSE(fs::exists(dir / "baselnes"));
  fs::create_directories(dir / "baselnes/nested");
  EXPECT_EQ(BaselineStore::open(path).run_count(), 0);
}

TEST(BaselineStore, WalModeIsOn) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  store.record(make_run());
  EXPECT_EQ(sqlite_text(dir / "perfgate.db", "PRAGMA journal_mode"), "wal");
}

TEST(BaselineStore, AcceptsAnEmptyFile) {
  TempDir dir;
  write_file(dir / "perfgate.db", "");
  auto store = BaselineStore::open(dir / "perfgate.db");
  EXPECT_EQ(store.schema_version(), BaselineStore::kSchemaVersion);
}

TEST(BaselineStore, RoundTripKeepsEveryField) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto run = make_run();
  run.verdict = Verdict::kWarn;
  run.saturation = {
      true,
      {"generator thread 0 at 97% of a core", "steal 12%"},
      {"candidate side: foreign CPU 40% of the host (limit 25%) in 3 of 5 iterations"}};
  run.status = "aborted";
  int64_t id = store.record(run);
  auto back = store.run(id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id, id);
  expect_same_run(*back, run);
  EXPECT_FALSE(store.run(id + 1));
}

TEST(BaselineStore, PairedRunsKeepTheirPairAndFindTheirPartner) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto base = make_run();
  base.kind = "paired-baseline";
  base.pair = "2026-11-30T10:00:00Z/42/0badcafe";
  auto cand = make_run();
  cand.kind = "paired";
  cand.pair = base.pair;
  store.record(make_run());  // an unpaired run between them changes nothing
  auto ids = store.record_all({base, cand});
  auto back = store.run(ids[1]);
  ASSERT_TRUE(back);
  expect_same_run(*back, cand);
  EXPECT_EQ(back->pair, cand.pair);
  auto partner = store.paired_partner(*back);
  ASSERT_TRUE(partner);
  EXPECT_EQ(partner->id, ids[0]);
  EXPECT_EQ(partner->kind, "paired-baseline");
  EXPECT_EQ(partner->iterations.size(), base.iterations.size());
  EXPECT_EQ(store.paired_partner(*partner)->id, ids[1]);
  EXPECT_FALSE(store.paired_partner(*store.run(1)));
  // Neither side is ever a baseline of stored-baseline mode.
  EXPECT_FALSE(cand.eligible_as_baseline());
  EXPECT_FALSE(base.eligible_as_baseline());
  // The pair key survives export and import, where row ids do not.
  auto line = to_json_line(*back);
  EXPECT_EQ(run_from_json_line(line).pair, cand.pair);
  EXPECT_EQ(to_json_line(*store.run(1)).find("\"pair\""), std::string::npos);
}

TEST(BaselineStore, ImportRefusesAPairedKindWithoutItsKey) {
  auto run = make_run();
  run.kind = "paired";
  run.pair = "k";
  auto line = to_json_line(run);
  EXPECT_EQ(run_from_json_line(line).kind, "paired");
  auto without = line;
  without.replace(without.find(R"("pair":"k",)"), 11, "");
  EXPECT_THROW(run_from_json_line(without), Error);
  auto other = line;
  other.replace(other.find(R"("kind":"paired")"), 15, R"("kind":"gate")");
  EXPECT_THROW(run_from_json_line(other), Error);
  other.replace(other.find(R"("kind":"gate")"), 13, R"("kind":"pairs")");
  EXPECT_THROW(run_from_json_line(other), Error);
}

TEST(BaselineStore, FillsCreatedAtWhenEmpty) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto run = make_run();
  run.created_at.clear();
  auto back = store.run(store.record(run));
  ASSERT_TRUE(back);
  ASSERT_EQ(back->created_at.size(), 20u) << back->created_at;  // 2026-11-29T23:43:29Z
  EXPECT_EQ(back->created_at.back(), 'Z');
}

TEST(BaselineStore, NewestBaselinePicksNewestEligibleMatch) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto base = make_run();
  BaselineQuery query{"hello", "abc123", "main", base.host.key()};
  EXPECT_FALSE(newest_baseline(store, query));

  int64_t first = store.record(base);
  auto other_branch = make_run("feature/x");
  auto other_hash = make_run();
  other_hash.profile_hash = "def456";
  auto other_name = make_run();
  other_name.profile_name = "other";
  auto saturated = make_run();
  saturated.saturation.saturated = true;
  auto failed = make_run();
  failed.verdict = Verdict::kFail;
  auto errored = make_run();
  errored.verdict = Verdict::kError;
  auto aborted = make_run();
  aborted.status = "aborted";
  for (const auto* run :
       {&other_branch, &other_hash, &other_name, &saturated, &failed, &errored, &aborted})
    store.record(*run);
  auto other_host = make_run();
  other_host.host.fields["cpus"] = "64";
  int64_t on_other_host = store.record(other_host);

  auto found = newest_baseline(store, query);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, first);
  auto runs = store.eligible_runs(query, 1);
  ASSERT_EQ(runs.size(), 1u);
  expect_same_run(runs[0], base);

  query.host_key.clear();  // any host: the newest eligible anywhere
  EXPECT_EQ(*newest_baseline(store, query), on_other_host);

  // A warned run that surely regressed is no baseline until accepted (issue 39).
  auto warned = make_run();
  warned.verdict = Verdict::kWarn;
  warned.regressed = true;
  int64_t newest = store.record(warned);
  query.host_key = base.host.key();
  EXPECT_EQ(*newest_baseline(store, query), first);
  store.set_review(newest, {"accepted", "the new level is intended", "ci", "2026-01-01T00:00:00Z"});
  EXPECT_EQ(*newest_baseline(store, query), newest);
  // One that was only undecided is (issue 46): it showed no regression.
  auto undecided = make_run();
  undecided.verdict = Verdict::kWarn;
  int64_t latest = store.record(undecided);
  EXPECT_EQ(*newest_baseline(store, query), latest);
  EXPECT_TRUE(store.run(latest)->eligible_as_baseline());
  EXPECT_FALSE(store.run(latest)->regressed);
}

TEST(BaselineStore, RunsAreNewestFirstWithoutIterations) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto other = make_run();
  other.profile_name = "other";
  int64_t a = store.record(make_run());
  int64_t b = store.record(other);
  int64_t c = store.record(make_run());
  EXPECT_EQ(store.run_count(), 3);

  auto all = store.runs();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, c);
  EXPECT_EQ(all[1].id, b);
  EXPECT_EQ(all[2].id, a);
  EXPECT_TRUE(all[0].iterations.empty());
  EXPECT_EQ(all[1].profile_name, "other");

  auto hello = store.runs("hello", 1);
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_EQ(hello[0].id, c);
}

TEST(BaselineStore, FailedRecordLeavesNothingBehind) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto run = make_run();
  run.iterations.push_back(run.iterations.front());  // duplicate (run_id, idx)
  EXPECT_THROW(store.record(run), Error);
  EXPECT_EQ(store.run_count(), 0);
  EXPECT_EQ(sqlite_text(dir / "perfgate.db", "SELECT count(*) FROM iterations"), "0");
  EXPECT_GT(store.record(make_run()), 0);  // and the store is still usable
}

TEST(BaselineStore, DeletingARunCascadesToItsIterations) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  BaselineStore::open(path).record(make_run());
  sqlite_exec(path, "PRAGMA foreign_keys = ON; DELETE FROM runs");
  EXPECT_EQ(sqlite_text(path, "SELECT count(*) FROM iterations"), "0");
}

TEST(BaselineStore, RejectsAForeignSqliteDatabaseUntouched) {
  TempDir dir;
  auto path = dir / "app.db";
  sqlite_exec(path,
              "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);"
              "INSERT INTO notes (text) VALUES ('keep me')");
  expect_rejected_untouched(path, "not a perfgate store");
  expect_rejected_untouched(path, "not a perfgate store", BaselineStore::Mode::kReadOnly);
  EXPECT_EQ(sqlite_text(path, "PRAGMA journal_mode"), "delete");
}

TEST(BaselineStore, RejectsAnotherApplicationsEmptyDatabase) {
  TempDir dir;
  auto path = dir / "app.db";
  sqlite_exec(path, "PRAGMA application_id = 1234");
  expect_rejected_untouched(
      path, "not a perfgate store (another program's SQLite database, application_id 0x000004d2");
}

TEST(BaselineStore, RejectsATextFileUntouched) {
  TempDir dir;
  auto path = dir / "notes.txt";
  write_file(path, "these are my notes, not a database\n");
  expect_rejected_untouched(path, "not a perfgate store");
  write_file(path, "x");  // shorter than a page: SQLite alone would take it for empty
  expect_rejected_untouched(path, "not a perfgate store (not an SQLite database)");
  write_file(path, std::string(10000, '#'));
  expect_rejected_untouched(path, "not a perfgate store");
}

TEST(BaselineStore, RejectsATruncatedStoreUntouched) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  {
    auto store = BaselineStore::open(path);
    for (int i = 0; i < 10; ++i) store.record(make_run());
  }
  auto bytes = read_file(path);
  ASSERT_GT(bytes.size(), 8192u);
  write_file(path, bytes.substr(0, bytes.size() / 2));
  expect_rejected_untouched(path, "not a perfgate store");
  write_file(path, bytes.substr(0, 60));
  expect_rejected_untouched(path, "not a perfgate store");
}

TEST(BaselineStore, RejectsAGarbledHeaderUntouched) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  BaselineStore::open(path).record(make_run());
  auto bytes = read_file(path);
  bytes.replace(0, 16, "garbage garbage!");
  write_file(path, bytes);
  expect_rejected_untouched(path, "not a perfgate store");
}

// Damage past the header is only found when a query reads it: it must surface
// as an Error naming the file, never as a crash or a wrong run.
TEST(BaselineStore, DamagedPagesRaiseErrorsNamingTheFile) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  {
    auto store = BaselineStore::open(path);
    for (int i = 0; i < 10; ++i) store.record(make_run());
  }
  auto bytes = read_file(path);
  const size_t page = 4096;
  ASSERT_GT(bytes.size(), 4 * page);
  for (size_t at = page; at < bytes.size(); at += 2 * page) bytes.replace(at, page, page, '\xff');
  write_file(path, bytes);
  int errors = 0;
  try {
    auto store = BaselineStore::open(path);
    store.runs();
    newest_baseline(store, {"hello", "abc123", "main", ""});
    for (int64_t id = 1; id <= 10; ++id) store.run(id);
  } catch (const Error& e) {
    ++errors;
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ": ", 0), 0u) << e.what();
  }
  EXPECT_EQ(errors, 1);
}

TEST(BaselineStore, RejectsANewerSchemaUntouched) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  BaselineStore::open(path).record(make_run());
  sqlite_exec(path, "PRAGMA user_version = " + std::to_string(BaselineStore::kSchemaVersion + 1));
  expect_rejected_untouched(path, "upgrade perfgate");
  expect_rejected_untouched(path, "upgrade perfgate", BaselineStore::Mode::kReadOnly);
}

TEST(BaselineStore, ReadOnlyModeReadsButDoesNotWrite) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  int64_t id = BaselineStore::open(path).record(make_run());
  auto store = BaselineStore::open(path, BaselineStore::Mode::kReadOnly);
  EXPECT_EQ(store.run_count(), 1);
  EXPECT_EQ(*newest_baseline(store, {"hello", "abc123", "main", ""}), id);
  try {
    store.record(make_run());
    ADD_FAILURE() << "record() wrote to a read-only store";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": store is read-only");
  }
  EXPECT_EQ(store.run_count(), 1);
}

TEST(BaselineStore, ReadOnlyModeCreatesNothing) {
  TempDir dir;
  auto path = dir / "missing/perfgate.db";
  EXPECT_THROW(BaselineStore::open(path, BaselineStore::Mode::kReadOnly), Error);
  EXPECT_FALSE(fs::exists(dir / "missing"));
}

TEST(BaselineStore, FileWithoutWritePermissionIsReadOnly) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes through file permissions";
  TempDir dir;
  auto path = dir / "perfgate.db";
  BaselineStore::open(path).record(make_run());
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  auto store = BaselineStore::open(path);
  EXPECT_EQ(store.run_count(), 1);
  EXPECT_THROW(store.record(make_run()), Error);
}

TEST(BaselineStore, TwoHandlesSeeEachOthersRuns) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  auto writer = BaselineStore::open(path);
  auto reader = BaselineStore::open(path, BaselineStore::Mode::kReadOnly);
  writer.record(make_run());
  EXPECT_EQ(reader.run_count(), 1);
}

// Issue 46: an export keeps whether the run regressed; an export from before it
// does not say, and its warns and fails count as regressions, as the
// store's migration counts them.
TEST(BaselineStoreEligibility, AnExportKeepsTheRegressionAndOldOnesCountWarnsAsOne) {
  auto run = make_run();
  run.verdict = Verdict::kWarn;
  auto line = to_json_line(run);
  EXPECT_FALSE(run_from_json_line(line).regressed);
  EXPECT_TRUE(run_from_json_line(line).eligible_as_baseline());
  auto old = nlohmann::json::parse(line);
  old.erase("regressed");
  EXPECT_TRUE(run_from_json_line(old.dump()).regressed);
  EXPECT_FALSE(run_from_json_line(old.dump()).eligible_as_baseline());
  old["verdict"] = "pass";
  EXPECT_FALSE(run_from_json_line(old.dump()).regressed);
}

TEST(BaselineStoreEligibility, OnlyCompleteUnsaturatedRunsWithoutARegressionOrAccepted) {
  RunRecord run;
  EXPECT_TRUE(run.eligible_as_baseline());
  // Issue 46: a warn that was only undecided is no regression, and a baseline,
  // or a young store's window never grows past its first run.
  run.verdict = Verdict::kWarn;
  EXPECT_TRUE(run.eligible_as_baseline());
  // A sure regression (a warn past the warn limit, a fail) is no new normal
  // unless someone says so.
  run.regressed = true;
  for (auto bad : {Verdict::kWarn, Verdict::kFail, Verdict::kError}) {
    run.verdict = bad;
    EXPECT_FALSE(run.eligible_as_baseline());
  }
  run.regressed = false;
  for (auto bad : {Verdict::kFail, Verdict::kError}) {
    run.verdict = bad;
    EXPECT_FALSE(run.eligible_as_baseline());
  }
  run.verdict = Verdict::kWarn;
  run.regressed = true;
  run.review.state = "accepted";
  EXPECT_TRUE(run.eligible_as_baseline());
  run.review.state.clear();
  run.regressed = false;
  run.verdict = Verdict::kPass;
  run.saturation.saturated = true;
  EXPECT_FALSE(run.eligible_as_baseline());
  run.saturation.saturated = false;
  run.status = "aborted";
  EXPECT_FALSE(run.eligible_as_baseline());
}

// The schema exactly as perfgate 0.1 (schema version 1) wrote it, kept here
// verbatim so that the migration is tested against what real stores hold.
constexpr const char* kSchemaV1 = R"sql(
  CREATE TABLE runs (
    id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, profile_name TEXT NOT NULL,
    profile_hash TEXT NOT NULL, profile_json TEXT NOT NULL, commit_sha TEXT NOT NULL,
    branch TEXT NOT NULL, baseline_branch TEXT NOT NULL, pipeline_id TEXT NOT NULL,
    ci_provider TEXT NOT NULL, host_key TEXT NOT NULL, host_json TEXT NOT NULL,
    engine TEXT NOT NULL, threads INT NOT NULL, connections INT NOT NULL,
    verdict TEXT NOT NULL, saturated INT NOT NULL, saturation_json TEXT NOT NULL,
    status TEXT NOT NULL, eligible INT NOT NULL);
  CREATE INDEX runs_baseline ON runs
    (profile_name, profile_hash, branch, host_key, eligible, id);
  CREATE TABLE iterations (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INT NOT NULL,
    discarded INT NOT NULL, duration_ns INT NOT NULL, responses INT NOT NULL,
    bytes_read INT NOT NULL, err_connect INT NOT NULL, err_read INT NOT NULL,
    err_write INT NOT NULL, err_timeout INT NOT NULL, err_other INT NOT NULL,
    status_other INT NOT NULL, status_1xx INT NOT NULL, status_2xx INT NOT NULL,
    status_3xx INT NOT NULL, status_4xx INT NOT NULL, status_5xx INT NOT NULL,
    latency BLOB NOT NULL, PRIMARY KEY (run_id, idx));
  PRAGMA application_id = 1348880244;
  PRAGMA journal_mode = WAL;
  PRAGMA user_version = 1;
  INSERT INTO runs VALUES (7, '2026-11-01T10:00:00Z', 'hello', 'abc123', '{}', 'c0ffee',
    'main', 'main', '17', 'gitlab', 'hostkey', '{"cpus":"4"}', 'native', 2, 50, 'pass', 0,
    '{"reasons":[]}', 'complete', 1);
)sql";

// A v1 store with one run whose iteration holds `histogram`, written by raw SQL.
void write_v1_store(const fs::path& path, const LatencyHistogram& histogram) {
  sqlite_exec(path, kSchemaV1);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO iterations VALUES (7, 0, 0, 1000000000, ?, 100, 0, 0, 0, 0, 0,"
                     " 0, 0, ?, 0, 0, 0, ?)",
                     -1, &stmt, nullptr);
  auto bytes = histogram.serialize();
  sqlite3_bind_int64(stmt, 1, static_cast<int64_t>(histogram.count()));
  sqlite3_bind_int64(stmt, 2, static_cast<int64_t>(histogram.count()));
  sqlite3_bind_blob(stmt, 3, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE) << sqlite3_errmsg(db);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(BaselineStore, MigratesAVersion1StoreKeepingItsRuns) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  LatencyHistogram histogram;
  for (uint64_t v = 1; v <= 500; ++v) histogram.record_ns(v * 1000);
  write_v1_store(path, histogram);
  auto store = BaselineStore::open(path);
  EXPECT_EQ(store.schema_version(), BaselineStore::kSchemaVersion);
  auto old = store.run(7);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->ci.commit, "c0ffee");
  ASSERT_EQ(old->iterations.size(), 1u);
  EXPECT_TRUE(old->iterations[0].stats.latency == histogram);
  EXPECT_TRUE(old->service_cpu_s.empty());
  EXPECT_TRUE(old->host_samples_json.empty());
  EXPECT_EQ(*newest_baseline(store, {"hello", "abc123", "main", ""}), 7);
  auto run = make_run();
  run.host_samples_json = R"({"cpu":[1,2]})";
  EXPECT_EQ(store.run(store.record(run))->host_samples_json, run.host_samples_json);
}

// Schema 7: a warned run stored before is no baseline either, unless accepted.
TEST(BaselineStore, MigratingToVersion7TakesWarnedRunsOutOfTheBaselines) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  int64_t passed = 0, warned = 0, accepted = 0;
  {
    auto store = BaselineStore::open(path);
    passed = store.record(make_run());
    auto warn = make_run();
    warn.verdict = Verdict::kWarn;
    warned = store.record(warn);
    warn.review = {"accepted", "intended", "ci", "2026-01-01T00:00:00Z"};
    accepted = store.record(warn);
  }
  // As schema 6 kept them: every warned run eligible, and no regressed column.
  sqlite_exec(path,
              "UPDATE runs SET eligible = 1; ALTER TABLE runs DROP COLUMN regressed; "
              "ALTER TABLE runs DROP COLUMN figures; ALTER TABLE runs DROP COLUMN shared_cpu_pct; "
              "PRAGMA user_version = 6");
  auto store = BaselineStore::open(path);
  EXPECT_EQ(store.schema_version(), BaselineStore::kSchemaVersion);
  EXPECT_EQ(sqlite_text(path, "SELECT group_concat(id) FROM runs WHERE eligible = 1"),
            std::to_string(passed) + "," + std::to_string(accepted));
  EXPECT_NE(warned, 0);
  for (const auto& problem : check_store(store))  // (make_run's histograms are synthetic)
    EXPECT_EQ(problem.find("eligible flag"), std::string::npos) << problem;
}

TEST(BaselineStore, ReadOnlyVersion1StoreAsksForWriteAccess) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  write_v1_store(path, LatencyHistogram());
  auto before = read_file(path);
  try {
    BaselineStore::open(path, BaselineStore::Mode::kReadOnly);
    ADD_FAILURE() << "opened a v1 store read-only";
  } catch (const Error& e) {
    // Read-only for this open, writable for this user (root, or the owner):
    // the line names the command that upgrades it (issue 41, item 20).
    EXPECT_NE(std::string(e.what()).find("perfgate store migrate"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(path), before);
}

TEST(BaselineStore, SamplesAndServiceCpuRoundTrip) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto run = make_run();
  run.host_samples_json = R"({"interval_ms":250,"cpu_user_pct":[10.5,11.0]})";
  run.service_cpu_s = {0.25, 0.5, 0.75, 1.0};
  auto back = store.run(store.record(run));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->host_samples_json, run.host_samples_json);
  EXPECT_EQ(back->service_cpu_s, run.service_cpu_s);
  auto plain = store.run(store.record(make_run()));
  EXPECT_TRUE(plain->service_cpu_s.empty());
  EXPECT_TRUE(plain->host_samples_json.empty());
  EXPECT_EQ(sqlite_text(dir / "perfgate.db", "SELECT count(*) FROM run_samples"), "1");
}

TEST(BaselineStore, RecordAllIsAllOrNothing) {
  TempDir dir;
  auto store = BaselineStore::open(dir / "perfgate.db");
  auto bad = make_run();
  bad.iterations.push_back(bad.iterations.front());  // duplicate (run_id, idx)
  EXPECT_THROW(store.record_all({make_run(), bad}), Error);
  EXPECT_EQ(store.run_count(), 0);
  EXPECT_EQ(store.record_all({make_run(), make_run()}).size(), 2u);
}

// Separate connections, as separate perfgate processes would have: the busy
// timeout and retries must let every writer through.
TEST(BaselineStore, ConcurrentWritersAllSucceed) {
  TempDir dir;
  auto path = dir / "perfgate.db";
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int w = 0; w < 4; ++w)
    writers.emplace_back([&] {
      try {
        auto store = BaselineStore::open(path);
        for (int i = 0; i < 10; ++i) store.record(make_run());
      } catch (const Error&) {
        ++failures;
      }
    });
  for (auto& writer : writers) writer.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(BaselineStore::open(path).run_count(), 40);
}

}  // namespace
}  // namespace perfgate
