// Short helper commands (vgdb, valgrind --version): bounded in time, and
// nothing they start outlives them or perfgate (issue 50, item 9).
#include "perfgate/host/child_command.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/proc_status.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using namespace std::chrono_literals;

// Waits (10 s at most, a bound, not a guess) for `pid` to be gone.
bool gone_soon(pid_t pid) {
  for (auto end = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(10ms))
    if (testing::process_gone(pid)) return true;
  return false;
}

// A command that exits while something it started holds its output open:
// its answer counts, without waiting out the timeout, and the helper is ended.
TEST(RunChildTest, AHelperHoldingTheOutputOpenIsEndedAndTheAnswerKept) {
  auto out = run_child({"/bin/sh", "-c", "/bin/sleep 300 & echo $!"}, 60s);
  EXPECT_FALSE(out.timed_out);
  EXPECT_EQ(out.exit_code, 0);
  pid_t helper = std::atoi(out.output.c_str());
  ASSERT_GT(helper, 0) << out.output;
  bool gone = gone_soon(helper);
  if (!gone) kill(helper, SIGKILL);  // what this test started, by its PID
  EXPECT_TRUE(gone) << "the helper " << helper << " outlived its command";
}

TEST(RunChildTest, ACommandPastItsTimeoutIsEndedWithWhatItStarted) {
  testing::TempDir dir;
  auto pid_file = dir / "sleep.pid";
  auto out = run_child(
      {"/bin/sh", "-c", "/bin/sleep 300 & echo $! > " + pid_file.string() + "; wait"}, 300ms);
  EXPECT_TRUE(out.timed_out);
  EXPECT_EQ(out.exit_code, -1);
  pid_t helper = std::atoi(testing::read_file(pid_file).c_str());
  ASSERT_GT(helper, 0);
  bool gone = gone_soon(helper);
  if (!gone) kill(helper, SIGKILL);
  EXPECT_TRUE(gone);
}

// A vgdb of a perfgate killed by SIGKILL kept running: the command dies with
// the process that started it.
TEST(RunChildTest, ACommandDiesWithTheProcessThatStartedIt) {
  testing::TempDir dir;
  auto pid_file = dir / "child.pid";
  pid_t runner = fork();
  ASSERT_GE(runner, 0);
  if (runner == 0) {
    run_child({"/bin/sh", "-c", "echo $$ > " + pid_file.string() + "; exec /bin/sleep 300"}, 60s);
    _exit(0);
  }
  std::string text;
  for (auto end = std::chrono::steady_clock::now() + 10s;
       text.empty() && std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(10ms))
    if (std::filesystem::exists(pid_file)) text = testing::read_file(pid_file);
  kill(runner, SIGKILL);  // the process this test forked
  waitpid(runner, nullptr, 0);
  pid_t child = std::atoi(text.c_str());
  ASSERT_GT(child, 0);
  bool gone = gone_soon(child);
  if (!gone) kill(child, SIGKILL);
  EXPECT_TRUE(gone) << "the command " << child << " outlived the process that ran it";
}

}  // namespace
}  // namespace perfgate
