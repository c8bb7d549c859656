// The store under stress, through the real binary: runs killed at random
// moments, many writers at once, and the `store` maintenance commands.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "perfgate/store/baseline_store.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

extern char** environ;

namespace perfgate {
namespace {

using testing::CommandResult;
using testing::TempDir;
namespace fs = std::filesystem;

// Short on purpose: two 50 ms windows, so that a random kill lands anywhere
// from start-up to the store's commit.
constexpr const char* kShortProfile = R"({
  "name": "store-cli",
  "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
  "load": { "threads": 1, "connections": 2, "duration": "50ms", "warmup": "20ms" },
  "repeat": { "count": 2, "discard": 0 },
  "thresholds": { "throughput": { "warn": "90%", "fail": "99%" },
                  "latency_p99": { "warn": "500%", "fail": "1000%" } }
})";

class StoreCliTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_file(profile_, kShortProfile); }

  std::vector<std::string> run_args() const {
    return {testing::perfgate_binary(), "run", profile_.string(), "--store", store_.string()};
  }
  std::map<std::string, std::string> env() const {
    return {{"TARGET_PORT", std::to_string(server_.port())}};
  }
  CommandResult perfgate(std::vector<std::string> args) const {
    args.insert(args.begin(), testing::perfgate_binary());
    return testing::run_command(args, env());
  }
  CommandResult check() const { return perfgate({"store", "check", "--store", store_.string()}); }

  // Starts `perfgate run` with its output thrown away, so the test can kill it by PID.
  pid_t spawn_run() const {
    auto args = run_args();
    std::vector<std::string> envs = {"TARGET_PORT=" + std::to_string(server_.port())};
    for (char** e = environ; *e; ++e) envs.emplace_back(*e);
    std::vector<char*> c_args, c_env;
    for (auto& a : args) c_args.push_back(a.data());
    for (auto& e : envs) c_env.push_back(e.data());
    c_args.push_back(nullptr);
    c_env.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0), dup2(devnull, 1), dup2(devnull, 2);
      execve(c_args[0], c_args.data(), c_env.data());
      _exit(127);
    }
    return pid;
  }

  testing::DemoServerProcess server_{{"--delay", "1ms", "--delay-every", "1"}};
  TempDir dir_;
  fs::path profile_ = dir_ / "profile.json";
  fs::path store_ = dir_ / "perfgate.db";
};

// Every run the store shows is whole: two iterations, and the baseline too.
void expect_only_whole_runs(const fs::path& path, int attempt) {
  auto store = BaselineStore::open(path, BaselineStore::Mode::kReadOnly);
  for (const auto& header : store.runs("", 0))
    EXPECT_EQ(store.run(header.id)->iterations.size(), 2u)
        << "run " << header.id << " after kill " << attempt;
  auto any = store.runs("", 1);
  if (any.empty()) return;
  auto base =
      store.eligible_runs({"store-cli", any[0].profile_hash, any[0].ci.baseline_branch, ""}, 1);
  if (!base.empty()) {
    EXPECT_EQ(base[0].iterations.size(), 2u) << "after kill " << attempt;
  }
}

TEST_F(StoreCliTest, SigkillAtRandomMomentsNeverDamagesTheStore) {
  // This shared machine is often saturated, which makes a run warn (2): still stored.
  ASSERT_LE(testing::run_command(run_args(), env()).exit_code, 2);  // the store exists
  std::mt19937 random(20261130);
  std::uniform_int_distribution<int> delay_ms(0, 400);
  int killed_mid_run = 0;
  for (int attempt = 0; attempt < 50; ++attempt) {
    pid_t pid = spawn_run();
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    killed_mid_run += kill(pid, SIGKILL) == 0;
    int status = 0;
    waitpid(pid, &status, 0);
    auto checked = check();
    ASSERT_EQ(checked.exit_code, 0) << "after kill " << attempt << ":\n"
                                    << checked.out << checked.err;
    expect_only_whole_runs(store_, attempt);
  }
  RecordProperty("killed_mid_run", killed_mid_run);
}

TEST_F(StoreCliTest, EightConcurrentRunnersStoreAllFortyRuns) {
  std::vector<std::thread> runners;
  std::vector<std::vector<testing::CommandResult>> results(8);
  for (int r = 0; r < 8; ++r)
    runners.emplace_back([&, r] {
      for (int i = 0; i < 5; ++i) results[r].push_back(testing::run_command(run_args(), env()));
    });
  for (auto& runner : runners) runner.join();
  // Every run's log on a miscount: which one did not store, and why, is the
  // diagnosis (a CI failure shows only the assertion's own output).
  std::string logs;
  for (const auto& runs : results)
    for (const auto& result : runs) {
      EXPECT_TRUE(result.exit_code >= 0 && result.exit_code <= 2)
          << "exit " << result.exit_code << ":\n"
          << result.out << result.err;
      logs += "exit " + std::to_string(result.exit_code) + ": " + result.err + "\n";
    }
  EXPECT_EQ(BaselineStore::open(store_, BaselineStore::Mode::kReadOnly).run_count(), 40) << logs;
  auto checked = check();
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
}

TEST_F(StoreCliTest, ExportImportAndPruneThroughTheCli) {
  for (int i = 0; i < 3; ++i) ASSERT_LE(testing::run_command(run_args(), env()).exit_code, 2);
  auto exported = dir_ / "runs.jsonl";
  ASSERT_EQ(
      perfgate({"store", "export", "--store", store_.string(), "-o", exported.string()}).exit_code,
      0);
  auto copy = dir_ / "copy.db";
  auto imported = perfgate({"store", "import", exported.string(), "--store", copy.string()});
  EXPECT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.out.find("imported 3 runs, skipped 0"), std::string::npos) << imported.out;
  imported = perfgate({"store", "import", exported.string(), "--store", copy.string()});
  EXPECT_NE(imported.out.find("imported 0 runs, skipped 3"), std::string::npos) << imported.out;
  auto pruned = perfgate({"store", "prune", "--keep", "1", "--store", copy.string()});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_NE(pruned.out.find("pruned 2 runs, 1 left"), std::string::npos) << pruned.out;
  EXPECT_EQ(perfgate({"store", "check", "--store", copy.string()}).exit_code, 0);
}

// umask 777 made a new store mode 000 without a word: its owner could not
// read it back. The store is its owner's to read and write, and the log says so.
TEST_F(StoreCliTest, AUmaskThatLocksTheOwnerOutDoesNotReachTheStore) {
  std::string script = "umask 777; exec \"$0\" run \"$1\" --store \"$2\"";
  auto r = testing::run_command(
      {"/bin/sh", "-c", script, testing::perfgate_binary(), profile_.string(), store_.string()},
      env());
  ASSERT_LE(r.exit_code, 2) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(store_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0600, 0600u) << std::oct << (st.st_mode & 07777);
  EXPECT_NE(r.err.find("the umask would have made the new store unreadable"), std::string::npos)
      << r.err;
  EXPECT_EQ(check().exit_code, 0);
}

TEST_F(StoreCliTest, CheckOfADamagedStoreExits3) {
  ASSERT_LE(testing::run_command(run_args(), env()).exit_code, 2);
  {
    auto store = BaselineStore::open(store_);
    auto* sql = "UPDATE runs SET eligible = 1 - eligible";  // as if a buggy writer had stored it
    ASSERT_EQ(sqlite3_exec(store.connection(), sql, nullptr, nullptr, nullptr), SQLITE_OK);
  }
  auto checked = check();
  EXPECT_EQ(checked.exit_code, 3);
  EXPECT_NE(checked.out.find("eligible flag disagrees"), std::string::npos) << checked.out;
}

// Issue 41, item 19: a run whose verdict no perfgate writes aborted `history`
// and `store check` alike. Check names the run; the readers say which run and
// where to look, in one line.
TEST_F(StoreCliTest, AnUnknownVerdictIsNamedByCheckAndByEveryReader) {
  ASSERT_LE(testing::run_command(run_args(), env()).exit_code, 2);
  {
    auto store = BaselineStore::open(store_);
    auto* sql = "UPDATE runs SET verdict = 'bogus' WHERE id = 1";
    ASSERT_EQ(sqlite3_exec(store.connection(), sql, nullptr, nullptr, nullptr), SQLITE_OK);
  }
  auto checked = check();
  EXPECT_EQ(checked.exit_code, 3) << checked.out << checked.err;
  EXPECT_NE(checked.out.find("run 1: unknown verdict \"bogus\""), std::string::npos) << checked.out;
  auto history = perfgate({"history", "--store", store_.string()});
  EXPECT_EQ(history.exit_code, 3);
  EXPECT_NE(history.err.find("run 1 holds an unknown verdict \"bogus\"; perfgate store check "
                             "lists what is damaged, perfgate store delete 1 removes the run"),
            std::string::npos)
      << history.err;
}

// Issue 41, item 19: a histogram whose packed header declares 4 GiB took 4.2 GB
// of memory, then "out of memory" from every command, and no command removed
// the run. The declared size is refused before anything is allocated, check
// names the run, and `store delete` removes it (without reading it); the run
// before it stays.
TEST_F(StoreCliTest, ARunDeclaringA4GiBHistogramIsNamedAndDeleted) {
  ASSERT_LE(testing::run_command(run_args(), env()).exit_code, 2);
  ASSERT_LE(testing::run_command(run_args(), env()).exit_code, 2);
  {
    auto store = BaselineStore::open(store_);
    // 'z', then 0xFFFFFFFF little-endian, then a few bytes that are not zlib.
    auto* sql =
        "UPDATE iterations SET latency = x'7AFFFFFFFF789C0300' WHERE run_id = 2 AND idx = 0";
    ASSERT_EQ(sqlite3_exec(store.connection(), sql, nullptr, nullptr, nullptr), SQLITE_OK);
  }
  auto checked = check();
  EXPECT_EQ(checked.exit_code, 3) << checked.out << checked.err;
  EXPECT_NE(checked.out.find("run 2 iteration 0: histogram unreadable"), std::string::npos)
      << checked.out;
  EXPECT_NE(checked.out.find("declares 4294967295 bytes"), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find("perfgate store delete 2 removes the run"), std::string::npos)
      << checked.out;
  // history reads the figures stored with each run's row (issue 52), not its
  // histograms: it lists the run; compare, which reads the run whole, names it.
  auto history = perfgate({"history", "--store", store_.string()});
  EXPECT_EQ(history.exit_code, 0) << history.err;
  auto compared = perfgate({"compare", "2", "--store", store_.string()});
  EXPECT_EQ(compared.exit_code, 3);
  EXPECT_NE(compared.err.find("perfgate store delete 2 removes the run"), std::string::npos)
      << compared.err;

  auto none = perfgate({"store", "delete", "2", "7", "--store", store_.string()});
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_NE(none.err.find("no run 7; nothing deleted"), std::string::npos) << none.err;
  EXPECT_EQ(check().exit_code, 3) << "a refused delete deleted something";

  auto deleted = perfgate({"store", "delete", "2", "--store", store_.string()});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_NE(deleted.out.find("deleted 1 run, 1 left"), std::string::npos) << deleted.out;
  auto again = check();
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(perfgate({"history", "--store", store_.string()}).exit_code, 0);
}

// The host sampler's raw samples of one stored run, from `store export`.
nlohmann::json exported_samples(const CommandResult& exported) {
  auto run = nlohmann::json::parse(exported.out.substr(0, exported.out.find('\n')));
  return nlohmann::json::parse(run["host_samples"].get<std::string>())["samples"];
}

// A run no saturation rule flagged keeps its raw host samples only when the
// profile asks with store.raw_samples "always".
TEST_F(StoreCliTest, TheProfileAsksForEveryRunsRawSamples) {
  auto always = nlohmann::json::parse(kShortProfile);
  always["store"] = {{"raw_samples", "always"}};
  always["saturation"] = {{"interval", "20ms"}};
  testing::write_file(profile_, always.dump());
  ASSERT_LE(testing::run_command(run_args(), env()).exit_code, 2);
  auto exported = perfgate({"store", "export", "--store", store_.string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_FALSE(exported_samples(exported).empty()) << exported.out;

  // Without it, an unflagged run keeps only the per-iteration summaries.
  auto flagged_only = dir_ / "flagged.db";
  always.erase("store");
  testing::write_file(profile_, always.dump());
  ASSERT_LE(testing::run_command({testing::perfgate_binary(), "run", profile_.string(), "--store",
                                  flagged_only.string()},
                                 env())
                .exit_code,
            2);
  exported = perfgate({"store", "export", "--store", flagged_only.string()});
  auto line = nlohmann::json::parse(exported.out.substr(0, exported.out.find('\n')));
  if (!line["saturation"]["saturated"].get<bool>() && line["saturation"]["shared"].empty()) {
    EXPECT_TRUE(exported_samples(exported).empty()) << exported.out;
  }

  auto bad = nlohmann::json::parse(kShortProfile);
  bad["store"] = {{"raw_samples", "sometimes"}};
  testing::write_file(profile_, bad.dump());
  auto invalid = perfgate({"validate", profile_.string()});
  EXPECT_EQ(invalid.exit_code, 3);
  EXPECT_NE(invalid.err.find("store.raw_samples"), std::string::npos) << invalid.err;
}

TEST_F(StoreCliTest, MissingStoreIsAnErrorAndNotCreated) {
  auto missing = dir_ / "nope.db";
  auto r = perfgate({"store", "check", "--store", missing.string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no such store"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(missing));
}

// Issue 50 item 15: `store delete` of a store on a read-only mount said "No
// such file or directory". It says the mount is read-only; the store is kept.
TEST(StoreReadOnlyMountCliTest, AWriteToAStoreOnAReadOnlyMountSaysSo) {
  testing::TempDir dir;
  auto mount_point = dir / "ro";
  fs::create_directory(mount_point);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=4m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)";
  struct Unmount {
    fs::path at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{mount_point};
  auto store = mount_point / "perfgate.db";
  BaselineStore::open(store).record(testing::synthetic_run(1, 1000, 5));
  ASSERT_EQ(::mount(nullptr, mount_point.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr), 0);
  auto r = testing::run_command(
      {testing::perfgate_binary(), "store", "delete", "1", "--store", store.string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("its file system is mounted read-only"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace perfgate
