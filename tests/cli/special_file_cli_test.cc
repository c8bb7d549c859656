// Special files where perfgate would expect regular ones: an output that is a
// FIFO or a link (to a file, or to stdout) is written through, never renamed
// over; a stdout that cannot take the bytes ends the command with exit 3; a
// FIFO given as the store is refused before anything opens it.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstring>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "perfgate/store/baseline_store.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

size_t lines_of(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

class SpecialFileCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = BaselineStore::open(store_);
    for (int n = 1; n <= 2; ++n) store.record(testing::synthetic_run(n, 20000, 2.0));
  }

  /// `script` under sh, $0 being perfgate and $1... `args`.
  testing::CommandResult sh(const std::string& script, std::vector<std::string> args) {
    std::vector<std::string> argv = {"/bin/sh", "-c", script, testing::perfgate_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::run_command(argv, {}, {}, 30);
  }

  /// Runs `perfgate --log-level error ARGS` with its output option at a FIFO ($1),
  /// read by `cat` into a file. Renamed over, the FIFO's reader waited for ever
  /// (it is stopped here) and the output went to a regular file in its place.
  testing::CommandResult through_fifo(const std::vector<std::string>& args) {
    EXPECT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
    std::vector<std::string> all = {fifo_.string(), (dir_ / "read.txt").string()};
    all.insert(all.end(), args.begin(), args.end());
    return sh(
        "fifo=$1; read=$2; shift 2; cat \"$fifo\" > \"$read\" & reader=$!; "
        "\"$0\" --log-level error \"$@\"; rc=$?; "
        "n=0; while kill -0 $reader 2>/dev/null && [ $n -lt 50 ]; do sleep 0.1; n=$((n+1)); done; "
        "kill $reader 2>/dev/null; [ -p \"$fifo\" ] || echo 'the FIFO was replaced' >&2; exit $rc",
        all);
  }

  TempDir dir_;
  fs::path store_ = dir_ / "perfgate.db";
  fs::path fifo_ = dir_ / "fifo";
};

TEST_F(SpecialFileCliTest, StoreExportWritesIntoAFifoInPlace) {
  auto r =
      through_fifo({"store", "export", "--store", store_.string(), "--output", fifo_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(lines_of(testing::read_file(dir_ / "read.txt")), 2u);
}

TEST_F(SpecialFileCliTest, ExportWritesIntoAFifoInPlace) {
  auto r = through_fifo({"export", "--store", store_.string(), "--output", fifo_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(testing::read_file(dir_ / "read.txt").find("\"value\""), std::string::npos);
}

TEST_F(SpecialFileCliTest, ReportHtmlThroughALinkKeepsTheLink) {
  testing::write_file(dir_ / "real.html", "old");
  fs::create_symlink(dir_ / "real.html", dir_ / "link.html");
  auto r = testing::run_command({testing::perfgate_binary(), "report", "--html",
                                 (dir_ / "link.html").string(), "--store", store_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.html"));
  EXPECT_NE(testing::read_file(dir_ / "real.html").find("<html"), std::string::npos);
}

// /dev/stdout itself is a link: renamed over, it was replaced (as root) by a file.
// A link of the test's own stands for it, so that no run of this test on an
// unfixed perfgate can harm the machine's /dev.
TEST_F(SpecialFileCliTest, CompareJsonThroughALinkToStdoutWritesThere) {
  fs::create_symlink("/dev/stdout", dir_ / "stdout.json");
  auto r = testing::run_command({testing::perfgate_binary(), "compare", "2", "--store",
                                 store_.string(), "--json", (dir_ / "stdout.json").string()});
  EXPECT_NE(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("\"exit_code\""), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_symlink(dir_ / "stdout.json"));
}

// Issue 50 item 5: a FIFO that nothing reads as an output held perfgate in
// open() for good. It waits a moment for a reader, then says what it is.
TEST_F(SpecialFileCliTest, AFifoThatNothingReadsIsAnErrorNotAHang) {
  ASSERT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
  const std::string fifo = fifo_.string();
  const std::vector<std::vector<std::string>> commands = {
      {"compare", "2", "--store", store_.string(), "--junit", fifo},
      {"store", "export", "--store", store_.string(), "--output", fifo}};
  for (auto args : commands) {
    args.insert(args.begin(), {testing::perfgate_binary(), "--log-level", "error"});
    auto r = testing::run_command(args, {}, {}, 20);
    EXPECT_EQ(r.exit_code, 3) << args[3] << ": " << r.err;
    EXPECT_EQ(lines_of(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("cannot write " + fifo + ": it is a FIFO (named pipe) that nothing reads"),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(fs::is_fifo(fifo_));
  }
}

// A full disk under stdout: exit 3 with one line, not exit 0 with nothing
// written (or an export cut mid-line).
TEST_F(SpecialFileCliTest, StdoutThatCannotBeWrittenIsAnError) {
  const std::vector<std::vector<std::string>> commands = {
      {"store", "export", "--store", store_.string()},
      {"history", "--json", "--store", store_.string()},
      {"recipe", "default-branch"},
      {"recipe"}};
  for (const auto& args : commands) {
    auto r = sh("exec \"$0\" --log-level error \"$@\" > /dev/full", args);
    EXPECT_EQ(r.exit_code, 3) << args[0] << ": " << r.err;
    EXPECT_EQ(lines_of(r.err), 1u) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("cannot write to stdout: No space left on device"), std::string::npos)
        << r.err;
  }
}

// open() of a FIFO waits for a writer, which never comes: every command that
// takes --store refuses it first, in one line.
TEST_F(SpecialFileCliTest, AFifoAsTheStoreIsRefusedBeforeOpen) {
  ASSERT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
  testing::write_file(dir_ / "profile.json",
                      R"({"name": "fifo", "target": {"url": "http://127.0.0.1:)" +
                          std::to_string(testing::unused_port()) + R"(/"}})");
  const std::string fifo = fifo_.string();
  const std::vector<std::vector<std::string>> commands = {
      {"history", "--store", fifo},
      {"store", "check", "--store", fifo},
      {"store", "export", "--store", fifo},
      {"store", "prune", "--keep", "1", "--store", fifo},
      {"store", "delete", "1", "--store", fifo},
      {"store", "migrate", "--store", fifo},
      {"report", "--html", (dir_ / "r.html").string(), "--store", fifo},
      {"compare", "1", "--store", fifo},
      {"run", (dir_ / "profile.json").string(), "--store", fifo},
      {"run", (dir_ / "profile.json").string(), "--store", fifo, "--no-record"}};
  for (auto args : commands) {
    args.insert(args.begin(), {testing::perfgate_binary(), "--log-level", "error"});
    auto r = testing::run_command(args, {}, {}, 10);
    EXPECT_EQ(r.exit_code, 3) << args[3] << ": " << r.err;
    EXPECT_EQ(lines_of(r.err), 1u) << args[3] << ": " << r.err;
    EXPECT_NE(r.err.find(fifo + ": is a FIFO (named pipe), not a store file"), std::string::npos)
        << r.err;
    EXPECT_TRUE(fs::is_fifo(fifo_));
  }
}

// Issue 41, item 8: a FIFO beside the store where SQLite keeps its journal
// hung the open (and SIGTERM did not end it), or failed the write after the
// whole load. Each is refused before SQLite opens anything.
TEST_F(SpecialFileCliTest, AFifoWhereTheStoresJournalGoesIsRefused) {
  testing::write_file(dir_ / "profile.json",
                      R"({"name": "fifo", "target": {"url": "http://127.0.0.1:)" +
                          std::to_string(testing::unused_port()) + R"(/"}})");
  for (const std::string suffix : {"-journal", "-wal", "-shm"}) {
    const fs::path fifo = store_.string() + suffix;
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << fifo << ": " << std::strerror(errno);
    for (auto args : std::vector<std::vector<std::string>>{
             {"run", (dir_ / "profile.json").string(), "--store", store_.string()},
             {"history", "--store", store_.string()},
             {"accept", "1", "--reason", "r", "--store", store_.string()}}) {
      args.insert(args.begin(), {testing::perfgate_binary(), "--log-level", "error"});
      auto r = testing::run_command(args, {}, {}, 10);
      EXPECT_EQ(r.exit_code, 3) << suffix << " " << args[3] << ": " << r.err;
      EXPECT_EQ(lines_of(r.err), 1u) << r.err;
      EXPECT_NE(r.err.find(fifo.string() + ": is a FIFO (named pipe), where SQLite keeps the "
                                           "store's journal; remove it"),
                std::string::npos)
          << r.err;
    }
    fs::remove(fifo);
  }
}

// Issue 41, item 8: a FIFO as a shard file, as GITHUB_EVENT_PATH or as the
// service's pid_file waited for a writer until a signal came.
TEST_F(SpecialFileCliTest, AFifoAsAShardAnEventFileOrAPidFileIsRefused) {
  ASSERT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
  const std::string fifo = fifo_.string();
  testing::DemoServerProcess demo;
  testing::write_file(dir_ / "profile.json", R"({"name": "pid", "target": {"url": ")" + demo.url() +
                                                 R"("},
    "load": {"threads": 1, "connections": 1, "duration": "100ms", "warmup": "0s"},
    "repeat": {"count": 1, "discard": 0}, "service": {"pid_file": ")" +
                                                 fifo + R"("}})");
  testing::write_file(dir_ / "summary.md", "# hello\n");
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"merge", fifo}, {}, fifo + ": is a FIFO (named pipe), not a shard result file"},
      {{"comment", (dir_ / "summary.md").string(), "--provider", "github"},
       {{"GITHUB_EVENT_PATH", fifo},
        {"GITHUB_REPOSITORY", "octo/shop"},
        {"GITHUB_TOKEN", "t"},
        {"GITHUB_API_URL", "http://127.0.0.1:" + std::to_string(testing::unused_port())}},
       "GITHUB_EVENT_PATH " + fifo + " is a FIFO (named pipe), not the event file GitHub writes"},
      {{"run", (dir_ / "profile.json").string(), "--no-record"},
       {},
       "service.pid_file " + fifo + ": is a FIFO (named pipe), not a file holding a PID"}};
  for (const auto& c : cases) {
    std::vector<std::string> argv = {testing::perfgate_binary(), "--log-level", "error"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = testing::run_command(argv, c.env, {}, 20);
    EXPECT_EQ(r.exit_code, 3) << c.args[0] << ": " << r.err;
    EXPECT_EQ(lines_of(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

// Issue 41, items 9 and 20: `store import FIFO` held the store's write lock as
// long as the pipe stayed open; /dev/zero and a folder "imported 0 runs", exit
// 0. Each is refused before the store is opened, and the store keeps its runs.
TEST_F(SpecialFileCliTest, ImportOfAFifoADeviceOrAFolderIsRefusedBeforeTheStoreOpens) {
  ASSERT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {fifo_.string(), "is a FIFO (named pipe), not an export file"},
      {"/dev/zero", "is a device, not an export file"},
      {dir_.path().string(), "is a folder, not an export file"}};
  for (const auto& [file, says] : cases) {
    auto r = testing::run_command({testing::perfgate_binary(), "--log-level", "error", "store",
                                   "import", file, "--store", store_.string()},
                                  {}, {}, 20);
    EXPECT_EQ(r.exit_code, 3) << file << ": " << r.out << r.err;
    EXPECT_EQ(lines_of(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(file + ": " + says), std::string::npos) << r.err;
  }
  EXPECT_EQ(BaselineStore::open(store_, BaselineStore::Mode::kReadOnly).run_count(), 2);
}

// Issue 41, item 20: past `ulimit -f` the kernel's SIGXFSZ ended an import
// without a word. Now the write fails, and the one line says why in the
// system's words.
TEST_F(SpecialFileCliTest, AnImportPastTheFileSizeLimitSaysSo) {
  auto fresh = dir_ / "fresh.db";
  auto r =
      sh("ulimit -f 16; exec \"$0\" --log-level error store import \"$1\" --store \"$2\"",
         {(testing::source_dir() / "tests" / "fixtures" / "store_v4" / "export.jsonl").string(),
          fresh.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(lines_of(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
}

// Issue 28, "errors printed twice": an output refused before the load was
// refused again, as a warning, when the run's error reports were written to
// the same outputs. At the default log level, the user reads it once.
TEST_F(SpecialFileCliTest, AnUnwritableOutputIsSaidOnceAtTheDefaultLogLevel) {
  testing::write_file(dir_ / "profile.json",
                      R"({"name": "once", "target": {"url": "http://127.0.0.1:)" +
                          std::to_string(testing::unused_port()) + R"(/"}})");
  const std::string nowhere = (dir_ / "no-such-folder" / "x" / "result").string();
  fs::create_directories(dir_ / "no-such-folder");
  testing::write_file(dir_ / "no-such-folder" / "x", "a file, not a folder");
  for (const std::string flag : {"--json", "--junit", "--summary"}) {
    auto r =
        testing::run_command({testing::perfgate_binary(), "run", (dir_ / "profile.json").string(),
                              "--store", store_.string(), flag, nowhere},
                             {}, {}, 30);
    EXPECT_EQ(r.exit_code, 3) << flag << ": " << r.err;
    EXPECT_EQ(lines_of(r.err), 1u) << flag << ": " << r.err;
    EXPECT_NE(r.err.find(flag + ": cannot write " + nowhere), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace perfgate
