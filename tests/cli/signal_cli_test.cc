// Every wait ends on SIGINT/SIGTERM (service readiness, a store lock, a slow
// profile read), and nothing perfgate started outlives it, even a perfgate
// killed with SIGKILL. Signals come from a shell at a moment the test can see
// (a file the service wrote, a line on stderr), never after a guessed delay;
// the bounds are run_command's timeouts, far below the waits they replace.
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "perfgate/store/baseline_store.h"
#include "support/proc_status.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::TempDir;

// A one-window profile whose service command is `sh -c SCRIPT`, ready at `ready_port`.
std::string service_profile(uint16_t port, uint16_t ready_port, const std::string& script) {
  std::string p = std::to_string(port);
  return R"({
  "name": "signal-test",
  "target": { "url": "http://127.0.0.1:)" +
         p + R"(/" },
  "load": { "threads": 1, "connections": 2, "duration": "1s", "warmup": "100ms" },
  "repeat": { "count": 20, "discard": 0 },
  "service": {
    "command": ["/bin/sh", "-c", ")" +
         script + R"("],
    "ready_url": "http://127.0.0.1:)" +
         std::to_string(ready_port) + R"(/health",
    "ready_timeout": "1h"
  }
})";
}

std::string demo_server(uint16_t port) {
  return "'" + testing::perfgate_binary() + "' demo-server --port " + std::to_string(port);
}

// perfgate runs the profile in the background; once `marker` exists, the shell
// sends SIGNAL by perfgate's PID and exits with perfgate's exit code.
testing::CommandResult run_and_signal(const std::filesystem::path& profile,
                                      const std::filesystem::path& store,
                                      const std::filesystem::path& marker, const char* signal,
                                      int timeout_s = 30) {
  std::string script =
      "\"$0\" run \"$1\" --store \"$2\" & pid=$!; "
      "while [ ! -e \"$3\" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
      "kill -" +
      std::string(signal) + " $pid; wait $pid";
  return testing::run_command({"/bin/sh", "-c", script, testing::perfgate_binary(),
                               profile.string(), store.string(), marker.string()},
                              {}, {}, timeout_s);
}

using testing::process_gone;

bool gone_within(pid_t pid, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!process_gone(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A service that never gets ready (ready_timeout 1h) is waited for only
// until the signal.
TEST(SignalCliTest, SignalEndsTheWaitForAServiceThatNeverGetsReady) {
  TempDir dir;
  auto port = testing::unused_port();
  auto never = testing::unused_port();
  auto marker = dir / "started";
  testing::write_file(
      dir / "profile.json",
      service_profile(port, never, "touch '" + marker.string() + "'; exec " + demo_server(port)));
  auto r = run_and_signal(dir / "profile.json", dir / "perfgate.db", marker, "TERM");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("perfgate: error: interrupted by SIGINT or SIGTERM while waiting for "
                       "service \"/bin/sh\" to be ready"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(testing::http_get(port, "/health"), "");  // the service was stopped
}

// A SIGINT while the service is still starting ends the run there: no
// load begins, nothing is stored.
TEST(SignalCliTest, SignalDuringASlowServiceStartLetsNoLoadBegin) {
  TempDir dir;
  auto port = testing::unused_port();
  auto marker = dir / "starting";
  testing::write_file(
      dir / "profile.json",
      service_profile(port, port,
                      "touch '" + marker.string() + "'; sleep 2; exec " + demo_server(port)));
  auto store = dir / "perfgate.db";
  auto r = run_and_signal(dir / "profile.json", store, marker, "INT");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("while waiting for service"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("load:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stored as run"), std::string::npos) << r.err;
  if (std::filesystem::exists(store)) {
    EXPECT_EQ(BaselineStore::open(store, BaselineStore::Mode::kReadOnly).run_count(), 0);
  }
}

// Starts a run whose service command runs `launcher` + the demo server in the
// background, writing the server's PID to a file; SIGKILLs perfgate once it is
// there (after `settle`), and expects the server gone with it.
void expect_sigkill_leaves_no_server(const std::string& launcher, const std::string& settle,
                                     const std::string& what) {
  TempDir dir;
  auto port = testing::unused_port();
  auto pid_file = dir / "server.pid";
  testing::write_file(dir / "profile.json",
                      service_profile(port, port,
                                      launcher + demo_server(port) + " & echo $! > '" +
                                          pid_file.string() + ".tmp'; mv '" + pid_file.string() +
                                          ".tmp' '" + pid_file.string() + "'; wait"));
  // perfgate's output goes to /dev/null: a survivor holding the captured pipes
  // would otherwise keep run_command waiting.
  std::string script =
      "\"$0\" run \"$1\" --store \"$2\" >/dev/null 2>&1 & pid=$!; "
      "while [ ! -e \"$3\" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done; " +
      settle + "kill -KILL $pid; wait $pid";
  auto r = testing::run_command(
      {"/bin/sh", "-c", script, testing::perfgate_binary(), (dir / "profile.json").string(),
       (dir / "perfgate.db").string(), pid_file.string()},
      {}, {}, 30);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.out << r.err;
  ASSERT_TRUE(std::filesystem::exists(pid_file));
  pid_t server = std::stoi(testing::read_file(pid_file));
  ASSERT_GT(server, 0);
  bool gone = gone_within(server, std::chrono::seconds(20));
  if (!gone) kill(server, SIGKILL);  // the server this test started, by its PID
  EXPECT_TRUE(gone) << what << " " << server << " outlived perfgate";
}

// perfgate killed with SIGKILL takes the service's children with it, not
// only its direct child: `sh -c "server & wait"` left the server serving.
TEST(SignalCliTest, SigkilledPerfgateLeavesNoServiceProcessBehind) {
  expect_sigkill_leaves_no_server("", "", "the service's child");
}

// The same when the service left its process group (setsid): it is still a
// descendant of the service's keeper, which ends it when perfgate dies.
TEST(SignalCliTest, SigkilledPerfgateLeavesNoSetsidServiceBehind) {
  expect_sigkill_leaves_no_server("setsid ", "sleep 0.5; ", "the setsid service");
}

// Issue 41 item 18: a process that leaves the group and the session and wipes
// its environment (`setsid env -i`) kept neither the group nor the mark the
// guardian looked for, and outlived a SIGKILLed perfgate. It stays the
// service keeper's descendant. env -i wipes PATH too: absolute paths.
TEST(SignalCliTest, SigkilledPerfgateLeavesNoSetsidEnvIServiceBehind) {
  expect_sigkill_leaves_no_server("setsid /usr/bin/env -i ", "sleep 0.5; ",
                                  "the setsid env -i service");
}

// One short window (200 ms) whose service is `sh -c SCRIPT`, ready at `port`.
std::string short_service_profile(uint16_t port, const std::string& script) {
  return R"({
  "name": "escape-test",
  "target": { "url": "http://127.0.0.1:)" +
         std::to_string(port) + R"(/" },
  "load": { "threads": 1, "connections": 2, "duration": "200ms", "warmup": "0s" },
  "repeat": { "count": 1, "discard": 0 },
  "service": { "command": ["/bin/sh", "-c", ")" +
         script + R"("] }
})";
}

// True while `pid` is a live process whose command line holds `arg`: a PID
// that was reused meanwhile is not the process a test started.
bool alive_with_arg(pid_t pid, const std::string& arg) {
  if (process_gone(pid)) return false;
  std::string cmdline = testing::read_file("/proc/" + std::to_string(pid) + "/cmdline");
  return cmdline.find(std::string(1, '\0') + arg + std::string(1, '\0')) != std::string::npos;
}

// Issue 41 item 18: a run that ends as it should stops what its service
// started with `setsid env -i` too (no group, no session, no environment in
// common with it). The hostile corpus has the same case
// (svc_setsid_env_i_escapes_mark), through its pid_file key.
TEST(SignalCliTest, FinishedRunLeavesNoSetsidEnvIProcessOfItsService) {
  TempDir dir;
  auto port = testing::unused_port();
  auto pid_file = dir / "escaped.pid";
  const std::string arg = "4218";  // sleep's seconds, which tell it from a reused PID
  std::string script = "setsid /usr/bin/env -i /bin/sleep " + arg +
                       " </dev/null >/dev/null 2>&1 & echo $! > '" + pid_file.string() +
                       "'; exec " + demo_server(port);
  testing::write_file(dir / "profile.json", short_service_profile(port, script));
  auto r = testing::run_command(
      {testing::perfgate_binary(), "run", (dir / "profile.json").string(), "--no-record"}, {}, {},
      60);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << r.err;
  ASSERT_TRUE(std::filesystem::exists(pid_file)) << r.err;
  pid_t escaped = std::stoi(testing::read_file(pid_file));
  ASSERT_GT(escaped, 0);
  bool left = alive_with_arg(escaped, arg);
  if (left) kill(escaped, SIGKILL);  // the process this test started, by its PID
  EXPECT_FALSE(left) << "the service's `setsid env -i sleep` " << escaped << " outlived perfgate";
}

// Issue 50 item 3: a service that stops its keeper (`kill -STOP $PPID`) froze
// perfgate at the end of the run, for good. The stopped keeper is seen and
// killed, the service ended by perfgate itself, and the run ends as it would.
TEST(SignalCliTest, AServiceThatStopsItsKeeperDoesNotHoldTheRun) {
  TempDir dir;
  auto port = testing::unused_port();
  auto pid_file = dir / "service.pid";
  std::string script =
      "echo $$ > '" + pid_file.string() + "'; kill -STOP $PPID; exec " + demo_server(port);
  testing::write_file(dir / "profile.json", short_service_profile(port, script));
  auto r = testing::run_command(
      {testing::perfgate_binary(), "run", (dir / "profile.json").string(), "--no-record"}, {}, {},
      60);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << r.err;
  EXPECT_NE(r.err.find("its keeper process was stopped from outside perfgate; perfgate ended the "
                       "service's processes itself"),
            std::string::npos)
      << r.err;
  ASSERT_TRUE(std::filesystem::exists(pid_file)) << r.err;
  pid_t service = std::stoi(testing::read_file(pid_file));
  bool left = !process_gone(service) && testing::cmdline_has(service, "demo-server");
  if (left) kill(service, SIGKILL);  // the process this test started, by its PID
  EXPECT_FALSE(left) << "the demo server " << service << " outlived perfgate";
}

// Issue 50 item 6: a keeper killed from outside left the service's group
// behind (a `sleep` with PPID 1), and the message said the service "ended
// with its keeper process". perfgate ends the group and says what happened.
TEST(SignalCliTest, AServiceThatKillsItsKeeperLeavesNothingBehindAndIsNamed) {
  TempDir dir;
  auto port = testing::unused_port();
  auto pid_file = dir / "sleep.pid";
  const std::string arg = "4217";  // sleep's seconds, which tell it from a reused PID
  std::string script = "/bin/sleep " + arg + " & echo $! > '" + pid_file.string() +
                       "'; kill -KILL $PPID; exec " + demo_server(port);
  testing::write_file(dir / "profile.json", short_service_profile(port, script));
  auto r = testing::run_command(
      {testing::perfgate_binary(), "run", (dir / "profile.json").string(), "--no-record"}, {}, {},
      60);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("lost its keeper process to a signal from outside perfgate; perfgate "
                       "ended the service's processes"),
            std::string::npos)
      << r.err;
  ASSERT_TRUE(std::filesystem::exists(pid_file)) << r.err;
  pid_t sleeper = std::stoi(testing::read_file(pid_file));
  ASSERT_GT(sleeper, 0);
  bool left = alive_with_arg(sleeper, arg);
  if (left) kill(sleeper, SIGKILL);  // the process this test started, by its PID
  EXPECT_FALSE(left) << "the service's sleep " << sleeper << " outlived its keeper";
}

// Holds the store's write lock, as another perfgate writing would.
class StoreLock {
 public:
  explicit StoreLock(const std::filesystem::path& path) {
    sqlite3_open(path.c_str(), &db_);
    sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
  }
  ~StoreLock() {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  sqlite3* db_ = nullptr;
};

// Rows 6 and 16: a locked store is waited for with a line that says so, and a
// signal ends the wait with the store unchanged.
TEST(SignalCliTest, StoreLockWaitIsLoggedAndEndsOnSignal) {
  TempDir dir;
  testing::DemoServerProcess server;
  testing::write_file(dir / "profile.json", R"({
  "name": "lock-test",
  "target": { "url": ")" + server.url() + R"(" },
  "load": { "threads": 1, "connections": 1, "duration": "200ms", "warmup": "0s" },
  "repeat": { "count": 2, "discard": 0 }
})");
  auto store = dir / "perfgate.db";
  BaselineStore::open(store);  // created before the lock is taken
  StoreLock lock(store);
  std::string script =
      "\"$0\" run \"$1\" --store \"$2\" 2>\"$3\" & pid=$!; "
      "while ! grep -q 'waiting for the store lock' \"$3\" && kill -0 $pid 2>/dev/null; "
      "do sleep 0.05; done; kill -INT $pid; wait $pid";
  auto err_file = dir / "stderr.txt";
  auto r =
      testing::run_command({"/bin/sh", "-c", script, testing::perfgate_binary(),
                            (dir / "profile.json").string(), store.string(), err_file.string()},
                           {}, {}, 30);
  auto err = testing::read_file(err_file);
  EXPECT_EQ(r.exit_code, 3) << r.out << err;
  EXPECT_NE(err.find("waiting for the store lock on " + store.string()), std::string::npos) << err;
  EXPECT_NE(err.find("perfgate: error: " + store.string() +
                     ": interrupted while waiting for the store lock; the store is unchanged"),
            std::string::npos)
      << err;
}

// A profile read that never ends (a FIFO nobody closes) ends on SIGTERM.
TEST(SignalCliTest, SignalEndsAProfileReadThatNeverEnds) {
  TempDir dir;
  auto fifo = dir / "profile.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // The shell opens the FIFO for writing (once perfgate opened it to read),
  // writes a byte and keeps it open: perfgate waits for the rest.
  std::string script =
      "\"$0\" validate \"$1\" 2>\"$2\" & pid=$!; exec 3>\"$1\"; printf '[' >&3; sleep 0.2; "
      "kill -TERM $pid; wait $pid";
  auto err_file = dir / "stderr.txt";
  auto r = testing::run_command(
      {"/bin/sh", "-c", script, testing::perfgate_binary(), fifo.string(), err_file.string()}, {},
      {}, 30);
  auto err = testing::read_file(err_file);
  EXPECT_EQ(r.exit_code, 3) << r.out << err;
  EXPECT_NE(
      err.find("perfgate: error: reading profile " + fifo.string() + ": interrupted by a signal"),
      std::string::npos)
      << err;
}

}  // namespace
}  // namespace perfgate
