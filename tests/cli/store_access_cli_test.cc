// A store perfgate cannot write is found before the load, and said in the
// user's words: a read-only store file, a store in a read-only folder, a
// folder given as the store. CI runs as root, which file modes do not stop,
// so as root perfgate runs as `nobody` (setpriv, util-linux) against files
// root owns.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "perfgate/store/baseline_store.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

/// `argv`, as an unprivileged user when this test runs as root.
std::vector<std::string> unprivileged(std::vector<std::string> argv) {
  if (geteuid() != 0) return argv;
  std::vector<std::string> wrapped = {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup",
                                      "--clear-groups"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

/// True when `setpriv` can drop to nobody here (some sandboxes refuse it).
bool can_drop_privileges() {
  if (geteuid() != 0) return true;
  return testing::run_command(unprivileged({"/bin/true"}), {}, {}, 10).exit_code == 0;
}

class StoreAccessCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!can_drop_privileges()) GTEST_SKIP() << "setpriv cannot drop to nobody here";
    fs::permissions(dir_.path(), fs::perms::all);  // nobody may write here, but not below
    testing::write_file(dir_ / "profile.json", R"({
  "name": "store-access",
  "target": { "url": ")" + server_.url() + R"(" },
  "load": { "threads": 1, "connections": 1, "duration": "200ms", "warmup": "0s" },
  "repeat": { "count": 2, "discard": 0 }
})");
    fs::permissions(dir_ / "profile.json", fs::perms::owner_read | fs::perms::owner_write |
                                               fs::perms::group_read | fs::perms::others_read);
  }

  testing::CommandResult run_with_store(const fs::path& store) {
    return testing::run_command(
        unprivileged({testing::perfgate_binary(), "run", (dir_ / "profile.json").string(),
                      "--store", store.string()}),
        {}, {}, 60);
  }

  /// The load never began: the target saw no request (not even the probe's).
  void expect_no_load(const testing::CommandResult& r) {
    EXPECT_EQ(server_.requests_served(), 0u) << r.err;
    EXPECT_EQ(r.out, "");
  }

  TempDir dir_;
  testing::DemoServerProcess server_;
};

// Row 14: an existing store the user cannot write.
TEST_F(StoreAccessCliTest, Row14_AReadOnlyStoreIsFoundBeforeTheLoad) {
  auto store = dir_ / "perfgate.db";
  BaselineStore::open(store);
  fs::permissions(store, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string before = testing::read_file(store);
  auto r = run_with_store(store);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("the store is read-only"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--no-record"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("attempt to write"), std::string::npos) << r.err;  // SQLite's words
  expect_no_load(r);
  EXPECT_TRUE(testing::read_file(store) == before);
}

// Row 14: a store that does not exist yet, in a folder the user cannot write.
TEST_F(StoreAccessCliTest, Row14_AStoreInAReadOnlyFolderIsFoundBeforeTheLoad) {
  auto folder = dir_ / "locked";
  fs::create_directory(folder);
  fs::permissions(folder, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  if (geteuid() != 0) fs::permissions(folder, fs::perms::owner_write, fs::perm_options::remove);
  auto r = run_with_store(folder / "perfgate.db");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("perfgate cannot create files in " + folder.string()), std::string::npos)
      << r.err;
  expect_no_load(r);
  EXPECT_FALSE(fs::exists(folder / "perfgate.db"));
  fs::permissions(folder, fs::perms::owner_all, fs::perm_options::add);  // so TempDir can go
}

// Issue 28: reading a store in a folder the user cannot write said "attempt to
// write a readonly database": a WAL store's reader needs its -shm beside it.
// Every reading command now reads it.
TEST_F(StoreAccessCliTest, AStoreInAReadOnlyFolderCanBeRead) {
  auto folder = dir_ / "shared";
  fs::create_directory(folder);
  auto store = folder / "perfgate.db";
  testing::run_command({testing::perfgate_binary(), "run", (dir_ / "profile.json").string(),
                        "--store", store.string()},
                       {}, {}, 60);
  ASSERT_TRUE(fs::exists(store));
  fs::permissions(store, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                             fs::perms::others_read);
  fs::permissions(folder, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  if (geteuid() != 0) fs::permissions(folder, fs::perms::owner_write, fs::perm_options::remove);
  const std::string before = testing::read_file(store);
  for (std::vector<std::string> args :
       {std::vector<std::string>{"history"}, {"store", "check"}, {"store", "export"}}) {
    args.insert(args.begin(), testing::perfgate_binary());
    args.insert(args.end(), {"--store", store.string()});
    auto r = testing::run_command(unprivileged(args), {}, {}, 60);
    EXPECT_EQ(r.exit_code, 0) << args[1] << ": " << r.err;
    EXPECT_EQ(r.err.find("readonly"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(testing::read_file(store) == before);
  fs::permissions(folder, fs::perms::owner_all, fs::perm_options::add);  // so TempDir can go
}

// Row 14: a folder given as the store.
TEST_F(StoreAccessCliTest, Row14_AFolderGivenAsTheStoreIsFoundBeforeTheLoad) {
  auto r = run_with_store(dir_.path());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("is a folder, not a store file"), std::string::npos) << r.err;
  expect_no_load(r);
}

// The folder's names, sorted: what a refused store may not add to.
std::vector<std::string> listing(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Row 16: a store refused for its schema (newer than this perfgate) gets no
// -wal/-shm files beside it: SQLite's read-only connection to a WAL store
// creates them and cannot remove them.
TEST(StoreRefusalCliTest, Row16_ARefusedStoreGetsNoJournalFilesBesideIt) {
  TempDir dir;
  auto store = dir / "perfgate.db";
  BaselineStore::open(store);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(store.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  const auto before = listing(dir.path());
  const std::string bytes = testing::read_file(store);
  TempDir elsewhere;
  const std::vector<std::vector<std::string>> commands = {
      {"history", "--store", store.string()},
      {"report", "--html", (elsewhere / "report.html").string(), "--store", store.string()}};
  for (const auto& args : commands) {
    std::vector<std::string> argv = {testing::perfgate_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = testing::run_command(argv);
    EXPECT_EQ(r.exit_code, 3) << args[0] << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("newer than this perfgate understands"), std::string::npos) << r.err;
    EXPECT_EQ(listing(dir.path()), before) << args[0];
  }
  auto check = testing::run_command(
      {testing::perfgate_binary(), "store", "check", "--store", store.string()});
  EXPECT_NE(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(listing(dir.path()), before) << "store check";
  EXPECT_TRUE(testing::read_file(store) == bytes);
}

}  // namespace
}  // namespace perfgate
