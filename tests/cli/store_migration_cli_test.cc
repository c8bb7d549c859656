// An old store, written by the perfgate of schema version 4 with real runs,
// migrates to compact runs and keeps every figure: each run judges and exports
// byte for byte as that perfgate did (tests/fixtures/store_v4).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "perfgate/store/baseline_store.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::CommandResult;
using testing::read_file;
using testing::TempDir;
namespace fs = std::filesystem;

fs::path fixture(const std::string& name) {
  return testing::source_dir() / "tests" / "fixtures" / "store_v4" / name;
}

void write_store_from_dump(const fs::path& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, read_file(fixture("store_v4.sql")).c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

class StoreMigrationCliTest : public ::testing::Test {
 protected:
  void SetUp() override { write_store_from_dump(store_); }
  CommandResult perfgate(std::vector<std::string> args) const {
    args.insert(args.begin(), testing::perfgate_binary());
    args.insert(args.end(), {"--store", store_.string()});
    return testing::run_command(args);
  }
  TempDir dir_;
  fs::path store_ = dir_ / "perfgate.db";
};

TEST_F(StoreMigrationCliTest, Schema4StoreMigratesAndEveryRunJudgesAndExportsAsBefore) {
  auto migrated = perfgate({"store", "migrate"});
  ASSERT_EQ(migrated.exit_code, 0) << migrated.err;
  EXPECT_NE(migrated.out.find("schema 4 to 9, 6 runs"), std::string::npos) << migrated.out;
  EXPECT_EQ(BaselineStore::open(store_, BaselineStore::Mode::kReadOnly).schema_version(),
            BaselineStore::kSchemaVersion);
  // The exit codes `compare` gives: pass, warn (rejected), warn (accepted), pass
  // (a baseline of one run, judged with the stated prior since issue 46;
  // inconclusive before, with no test), warn (saturated), pass (feature branch).
  // The fixtures are this perfgate's output: they pin that a migrated run keeps
  // every figure the old perfgate stored.
  const int expected_exit[] = {0, 2, 2, 0, 2, 0};
  for (int id = 1; id <= 6; ++id) {
    auto json = dir_ / ("compare-" + std::to_string(id) + ".json");
    auto compared = perfgate({"compare", std::to_string(id), "--json", json.string()});
    EXPECT_EQ(compared.exit_code, expected_exit[id - 1]) << "run " << id << ": " << compared.err;
    EXPECT_EQ(read_file(json), read_file(fixture("compare-" + std::to_string(id) + ".json")))
        << "run " << id;
  }
  auto exported = dir_ / "export.jsonl";
  ASSERT_EQ(perfgate({"store", "export", "-o", exported.string()}).exit_code, 0);
  EXPECT_EQ(read_file(exported), read_file(fixture("export.jsonl")));
  EXPECT_EQ(perfgate({"store", "check"}).exit_code, 0);
}

// A run opens the store for writing, which migrates it too; the texts it shares
// with the migrated runs are stored once.
TEST_F(StoreMigrationCliTest, ImportIntoAMigratedStoreSkipsItsOwnRuns) {
  auto imported = perfgate({"store", "import", fixture("export.jsonl").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.out.find("imported 0 runs, skipped 6"), std::string::npos) << imported.out;
  auto store = BaselineStore::open(store_, BaselineStore::Mode::kReadOnly);
  EXPECT_EQ(store.run_count(), 6);
}

// `store prune --policy` as a CI job runs it before saving the cache: the runs
// it keeps judge the newest runs byte for byte as the whole store did.
TEST_F(StoreMigrationCliTest, PruneByPolicyJudgesTheNewestRunsAsTheWholeStore) {
  auto whole = dir_ / "whole.db";
  ASSERT_EQ(perfgate({"store", "migrate"}).exit_code, 0);
  fs::copy_file(store_, whole);
  auto pruned = perfgate({"store", "prune", "--policy", "--keep-last", "0"});
  ASSERT_EQ(pruned.exit_code, 0) << pruned.err;
  // Runs 2 (rejected) and 5 (saturated) can never be a baseline; run 6 is the newest.
  EXPECT_NE(pruned.out.find("pruned 2 runs, 4 left"), std::string::npos) << pruned.out;
  for (const char* id : {"4", "6"}) {
    auto a = dir_ / (std::string("whole-") + id + ".json");
    auto b = dir_ / (std::string("pruned-") + id + ".json");
    testing::run_command({testing::perfgate_binary(), "compare", id, "--store", whole.string(),
                          "--json", a.string()});
    perfgate({"compare", id, "--json", b.string()});
    EXPECT_EQ(read_file(a), read_file(b)) << "run " << id;
    EXPECT_NE(read_file(a), "");
  }
  auto history = perfgate({"history"});
  EXPECT_NE(history.out.find("2 runs pruned (policy), last at 20"), std::string::npos)
      << history.out;
  auto mixed = perfgate({"store", "prune", "--policy", "--keep", "3"});
  EXPECT_EQ(mixed.exit_code, 3);
  EXPECT_NE(mixed.err.find("drop --keep"), std::string::npos) << mixed.err;
}

// `store prune --policy --max-size`: past the size the oldest runs judging does
// not need go too; the newest run still judges byte for byte as in the whole
// store, and history and the report say what went.
TEST_F(StoreMigrationCliTest, PruneToASizeJudgesTheNewestRunAsTheWholeStore) {
  auto whole = dir_ / "whole.db";
  ASSERT_EQ(perfgate({"store", "migrate"}).exit_code, 0);
  fs::copy_file(store_, whole);
  auto pruned = perfgate({"store", "prune", "--policy", "--max-size", "1kB"});
  ASSERT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_NE(pruned.out.find(" MB (every baseline"), std::string::npos) << pruned.out;
  // The runs judging needs are bigger than 1 kB: they stay, and perfgate says so.
  EXPECT_NE(pruned.err.find("more than --max-size 1kB"), std::string::npos) << pruned.err;
  auto a = dir_ / "whole-6.json", b = dir_ / "pruned-6.json";
  testing::run_command({testing::perfgate_binary(), "compare", "6", "--store", whole.string(),
                        "--json", a.string()});
  perfgate({"compare", "6", "--json", b.string()});
  EXPECT_EQ(read_file(a), read_file(b));
  EXPECT_NE(read_file(a), "");
  EXPECT_EQ(perfgate({"store", "check"}).exit_code, 0);
  auto history = perfgate({"history"});
  EXPECT_NE(history.out.find("2 runs pruned (size), last at 20"), std::string::npos) << history.out;
  auto html = dir_ / "report.html";
  ASSERT_EQ(perfgate({"report", "--html", html.string()}).exit_code, 0);
  EXPECT_NE(read_file(html).find("Pruned: 2 runs pruned (size)"), std::string::npos);
  auto bad = perfgate({"store", "prune", "--policy", "--max-size", "lots"});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_NE(bad.err.find("--max-size: expected a size like 50MB"), std::string::npos) << bad.err;
}

// Issue 41, item 20: a reading command on an old store this user can write
// called it "read-only". It only reads, and says which command upgrades; the
// store is left as it was, and the command named works.
TEST_F(StoreMigrationCliTest, AReaderOfAWritableOldStoreNamesTheUpgradeNotReadOnly) {
  auto before = read_file(store_);
  auto history = perfgate({"history"});
  EXPECT_EQ(history.exit_code, 3);
  EXPECT_NE(history.err.find("has schema version 4, not this perfgate's 9; this command only "
                             "reads: upgrade it once with perfgate store migrate --store"),
            std::string::npos)
      << history.err;
  EXPECT_EQ(history.err.find("read-only"), std::string::npos) << history.err;
  EXPECT_EQ(read_file(store_), before) << "a reading command wrote to the store";
  EXPECT_EQ(perfgate({"store", "migrate"}).exit_code, 0);
  EXPECT_EQ(perfgate({"history"}).exit_code, 0);
}

}  // namespace
}  // namespace perfgate
