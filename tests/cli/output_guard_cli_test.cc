// No output of any command is ever written over the store, its SQLite journals
// or an input, and every output is written whole or not at all. Each command
// that writes a file is tried with that file pointed at the store.
#include <gtest/gtest.h>
#include <unistd.h>

#include "perfgate/store/baseline_store.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

class OutputGuardCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = BaselineStore::open(store_);
    for (int n = 1; n <= 2; ++n) store.record(testing::synthetic_run(n, 20000, 2.0));
  }

  // Runs perfgate; the store must come out byte-identical and the command exit 3
  // with one line that names the flag.
  void expect_refused(std::vector<std::string> args, const std::string& flag,
                      const std::map<std::string, std::string>& env = {}) {
    auto before = testing::read_file(store_);
    args.insert(args.begin(), testing::perfgate_binary());
    auto r = testing::run_command(args, env);
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find(flag + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is the store"), std::string::npos) << r.err;
    EXPECT_EQ(testing::read_file(store_), before);
  }

  TempDir dir_;
  fs::path store_ = dir_ / "perfgate.db";
};

TEST_F(OutputGuardCliTest, ReportHtmlOverTheStoreIsRefused) {
  expect_refused({"report", "--html", store_.string(), "--store", store_.string()}, "--html");
}

TEST_F(OutputGuardCliTest, ExportOutputOverTheStoreIsRefused) {
  expect_refused({"export", "--output", store_.string(), "--store", store_.string()}, "--output");
}

TEST_F(OutputGuardCliTest, StoreExportOutputOverTheStoreIsRefused) {
  expect_refused({"store", "export", "--output", store_.string(), "--store", store_.string()},
                 "--output");
}

TEST_F(OutputGuardCliTest, CompareJsonAndJunitOverTheStoreAreRefused) {
  expect_refused({"compare", "2", "--json", store_.string(), "--store", store_.string()}, "--json");
  expect_refused({"compare", "2", "--junit", store_.string(), "--store", store_.string()},
                 "--junit");
}

TEST_F(OutputGuardCliTest, RunJsonOverTheStoreIsRefusedBeforeTheLoad) {
  testing::write_file(dir_ / "p.json", R"({"name": "x", "target": {"url": "http://127.0.0.1:)" +
                                           std::to_string(testing::unused_port()) + R"(/"}})");
  expect_refused(
      {"run", (dir_ / "p.json").string(), "--store", store_.string(), "--json", store_.string()},
      "--json");
  expect_refused({"run", (dir_ / "p.json").string(), "--store", store_.string()},
                 "GITHUB_STEP_SUMMARY",
                 {{"GITHUB_ACTIONS", "true"}, {"GITHUB_STEP_SUMMARY", store_.string()}});
}

TEST_F(OutputGuardCliTest, ExportToAFileWritesItWhole) {
  auto out = dir_ / "sub" / "export.jsonl";
  auto r = testing::run_command({testing::perfgate_binary(), "store", "export", "--output",
                                 out.string(), "--store", store_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto text = testing::read_file(out);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  for (const auto& entry : fs::directory_iterator(dir_ / "sub"))
    EXPECT_EQ(entry.path().filename(), "export.jsonl");  // no temporary left behind
}

// A folder given as the store, in the user's words, not SQLite's.
TEST_F(OutputGuardCliTest, FolderGivenAsTheStoreIsNamedSo) {
  auto r = testing::run_command(
      {testing::perfgate_binary(), "history", "--store", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("is a folder, not a store file"), std::string::npos) << r.err;
}

// A short real load against a demo server, for the tests of what happens to a
// run's outputs after it (issue 41, items 13 and 17).
class OutputAfterLoadCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_file(profile_, R"({"name": "outputs", "target": {"url": ")" + demo_.url() +
                                      R"("}, "load": {"threads": 1, "connections": 2, )"
                                      R"("duration": "200ms", "warmup": "0s"},
        "repeat": {"count": 2, "discard": 0}})");
  }
  testing::CommandResult run(std::vector<std::string> extra,
                             const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> args{testing::perfgate_binary(), "run", profile_.string(), "--store",
                                  store_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_command(args, env);
  }
  int stored_runs() {
    if (!fs::exists(store_)) return 0;
    return static_cast<int>(
        BaselineStore::open(store_, BaselineStore::Mode::kReadOnly).run_count());
  }
  testing::DemoServerProcess demo_;
  TempDir dir_;
  fs::path profile_ = dir_ / "profile.json";
  fs::path store_ = dir_ / "perfgate.db";
};

// Item 13: --junit on a full disk (/dev/full) exited 3 yet left the run stored,
// the next runs' baseline. The run is taken out again, and the line says so.
TEST_F(OutputAfterLoadCliTest, AReportLostToAFullDiskTakesTheStoredRunOutAgain) {
  ASSERT_LE(run({}).exit_code, 2);  // a first run, which must stay
  auto r = run({"--junit", "/dev/full"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot write /dev/full: No space left on device"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the run was taken out of the store again"), std::string::npos) << r.err;
  EXPECT_EQ(stored_runs(), 1);
  auto checked = testing::run_command(
      {testing::perfgate_binary(), "store", "check", "--store", store_.string()});
  EXPECT_EQ(checked.exit_code, 0) << checked.out;
}

// Item 13 in paired mode: a paired run stores both sides, and both go again.
TEST_F(OutputAfterLoadCliTest, APairedRunWhoseReportIsLostTakesBothSidesOut) {
  testing::DemoServerProcess baseline;
  auto paired = dir_ / "paired.json";
  testing::write_file(paired, R"({"name": "outputs-paired", "target": {"url": ")" + demo_.url() +
                                  R"("}, "load": {"threads": 1, "connections": 2,
        "duration": "200ms", "warmup": "0s"}, "repeat": {"count": 7, "discard": 0},
        "paired": {"baseline": {"origin": "http://127.0.0.1:)" +
                                  std::to_string(baseline.port()) +
                                  R"(", "commit": "0ld"}, "leg_warmup": "0s"}})");
  auto r = testing::run_command({testing::perfgate_binary(), "run", paired.string(), "--store",
                                 store_.string(), "--junit", "/dev/full"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("the run was taken out of the store again"), std::string::npos) << r.err;
  EXPECT_EQ(stored_runs(), 0);
}

// Issue 50 item 12: stdout on a full device ended the run with exit 3, yet the
// run stayed stored, the next runs' baseline. It is taken out as a lost
// --junit is.
TEST_F(OutputAfterLoadCliTest, AReportLostOnStdoutTakesTheStoredRunOutAgain) {
  ASSERT_LE(run({}).exit_code, 2);  // a first run, which must stay
  auto r = testing::run_command({"/bin/sh", "-c", "exec \"$0\" \"$@\" > /dev/full",
                                 testing::perfgate_binary(), "run", profile_.string(), "--store",
                                 store_.string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot write to stdout: No space left on device"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the run was taken out of the store again"), std::string::npos) << r.err;
  EXPECT_EQ(stored_runs(), 1);
}

// Item 13: the step summary on a full disk was left cut mid-table. A file-size
// limit (ulimit -f) stands in for the full disk: what a failed append wrote is
// cut off again, so the summary is whole or as it was.
TEST_F(OutputAfterLoadCliTest, AStepSummaryThatCannotBeWrittenWholeIsLeftAsItWas) {
  auto summary = dir_ / "step.md";
  std::string before(64 * 1024 - 200, 'x');  // 200 bytes below the limit: the table crosses it
  before += "\n";
  testing::write_file(summary, before);
  std::string command = "ulimit -f 64; exec \"$0\" \"$@\"";  // 64 KiB (bash counts KiB)
  auto r =
      testing::run_command({"/bin/bash", "-c", command, testing::perfgate_binary(), "run",
                            profile_.string(), "--no-record"},
                           {{"GITHUB_ACTIONS", "true"}, {"GITHUB_STEP_SUMMARY", summary.string()}});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot write " + summary.string() + ": File too large"), std::string::npos)
      << r.err;
  EXPECT_EQ(testing::read_file(summary), before);
}

// Item 17: another user's link in a shared sticky folder (mode 1777, like /tmp)
// redirected a root run's --junit onto the file it named, and the step summary
// appended through it. Refused before the load, as the kernel's protected
// symlinks would; the victim is untouched.
TEST_F(OutputAfterLoadCliTest, AnotherUsersLinkInAStickySharedFolderIsNotFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant another user's link";
  auto shared = dir_ / "shared";
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::all | fs::perms::sticky_bit);
  auto victim = dir_ / "victim.txt";
  testing::write_file(victim, "precious\n");
  fs::permissions(victim, fs::perms::owner_read | fs::perms::owner_write);
  auto link = shared / "junit.xml";
  fs::create_symlink(victim, link);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);
  auto r = run({"--junit", link.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("--junit: cannot write " + link.string() +
                       ": it is a link owned by another user (uid 65534) in a shared sticky "
                       "folder"),
            std::string::npos)
      << r.err;
  auto appended = run({}, {{"GITHUB_ACTIONS", "true"}, {"GITHUB_STEP_SUMMARY", link.string()}});
  EXPECT_EQ(appended.exit_code, 3) << appended.out << appended.err;
  EXPECT_NE(appended.err.find("GITHUB_STEP_SUMMARY: cannot append to " + link.string()),
            std::string::npos)
      << appended.err;
  EXPECT_EQ(testing::read_file(victim), "precious\n");
  EXPECT_EQ(fs::status(victim).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(stored_runs(), 0) << "a refused output must stop the run before its load";
  // The user's own link there is theirs to follow.
  ASSERT_EQ(::lchown(link.c_str(), ::geteuid(), ::getegid()), 0);
  EXPECT_LE(run({"--junit", link.string()}).exit_code, 2);
  EXPECT_NE(testing::read_file(victim).find("<testsuites"), std::string::npos);
}

// Issue 50 item 7: the same link as a folder on the way (`shared/out ->
// victim's folder`, `--junit shared/out/junit.xml`) was followed: root's
// report landed in the other user's folder. Every component is checked.
TEST_F(OutputAfterLoadCliTest, AnotherUsersLinkOnTheWayThroughAStickySharedFolderIsNotFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant another user's link";
  auto shared = dir_ / "shared";
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::all | fs::perms::sticky_bit);
  auto victim = dir_ / "victim";
  fs::create_directory(victim);
  testing::write_file(victim / "junit.xml", "precious\n");
  auto link = shared / "out";
  fs::create_symlink(victim, link);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);
  auto junit = link / "junit.xml";
  auto r = run({"--junit", junit.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("--junit: cannot write " + junit.string() + ": " + link.string() +
                       " on its way is a link owned by another user (uid 65534) in a shared "
                       "sticky folder"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(testing::read_file(victim / "junit.xml"), "precious\n");
  EXPECT_EQ(stored_runs(), 0) << "a refused output must stop the run before its load";
}

// Item 17: a report written over a 0600 file made it 0644, readable by all.
TEST_F(OutputAfterLoadCliTest, AReportReplacingAFileKeepsItsMode) {
  auto junit = dir_ / "junit.xml";
  auto summary = dir_ / "summary.md";
  for (const auto& file : {junit, summary}) {
    testing::write_file(file, "old\n");
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  }
  auto r = run({"--junit", junit.string(), "--summary", summary.string()});
  ASSERT_LE(r.exit_code, 2) << r.err;
  for (const auto& file : {junit, summary}) {
    EXPECT_NE(testing::read_file(file), "old\n") << file;
    EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write)
        << file;
  }
}

}  // namespace
}  // namespace perfgate
