// The service's keeper (issue 41 item 18), with real processes: what leaves
// the service's group and session is still ended by stop(), gently first and
// once, and a keeper killed or stopped from outside is reported, not waited
// for, and perfgate ends what it kept.
#include "perfgate/host/service_process.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "support/proc_status.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::TempDir;

ServiceSpec shell_service(const std::string& script) {
  ServiceSpec spec;
  spec.command = {"/bin/sh", "-c", script};
  return spec;
}

// Waits (30 s at most, a bound, not a guess) for `file` to hold a line.
std::string first_line(const std::filesystem::path& file) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string line;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(file);
    if (std::getline(in, line) && !line.empty()) return line;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close == std::string::npos ? 0 : std::atoi(line.c_str() + close + 4);
}

using testing::process_gone;

// Kills the service's keeper from outside, as another user or an OOM killer
// would, and waits (30 s at most, a bound, not a guess) for perfgate to see it.
void kill_keeper_and_wait(ServiceProcess& service) {
  pid_t keeper = parent_of(service.pid());
  ASSERT_GT(keeper, 1);
  ASSERT_NE(keeper, getpid());
  kill(keeper, SIGKILL);  // the keeper this test's ServiceProcess started
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (service.running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// A process that left the group and the session, wiped its environment and
// lost its parent (the service's shell) gets SIGTERM once, however long the
// grace, and SIGKILL when it shrugs that off: stop() returns with it gone.
TEST(ServiceProcessTest, StopEndsAnEscapedProcessThatIgnoresSigtermWithOneSigtermThenSigkill) {
  TempDir dir;
  auto pid_file = dir / "escaped.pid";
  auto terms = dir / "terms";
  // The trap notes each SIGTERM and carries on; the loop's short sleeps let it run.
  std::string escaped = "trap 'echo term >> " + terms.string() + "' TERM; echo $$ > " +
                        pid_file.string() + "; while :; do /bin/sleep 0.05; done";
  ServiceProcess service(shell_service("setsid /usr/bin/env -i /bin/sh -c \"" + escaped +
                                       "\" </dev/null >/dev/null 2>&1 & exec /bin/sleep 300"));
  pid_t pid = std::atoi(first_line(pid_file).c_str());
  ASSERT_GT(pid, 0);
  service.stop(std::chrono::seconds(2));
  bool gone = process_gone(pid);
  if (!gone) kill(pid, SIGKILL);  // the process this test started, by its PID
  EXPECT_TRUE(gone) << "the escaped process " << pid << " outlived stop()";
  EXPECT_EQ(testing::read_file(terms), "term\n");  // one SIGTERM, not one per look
  EXPECT_FALSE(service.running());
  EXPECT_EQ(service.exit_description(), "was killed by Terminated");
}

// The keeper is the service's parent; killed from outside, it takes the news
// of the service with it, and the service (PR_SET_PDEATHSIG) ends.
TEST(ServiceProcessTest, AKeeperKilledFromOutsideEndsTheServiceAndSaysSo) {
  ServiceProcess service(shell_service("exec /bin/sleep 300"));
  kill_keeper_and_wait(service);
  EXPECT_FALSE(service.running());
  EXPECT_EQ(service.exit_description(),
            "lost its keeper process to a signal from outside perfgate; perfgate ended the "
            "service's processes");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!process_gone(service.pid()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(process_gone(service.pid()));
}

// Issue 50 item 6: a keeper killed from outside left a service that shrugs
// off SIGTERM (its parent's death signal) and the `sleep` of its group
// running, holding the port for the next run. perfgate ends the group itself.
TEST(ServiceProcessTest, AKeeperKilledFromOutsideLeavesNothingOfTheServiceRunning) {
  TempDir dir;
  auto child_file = dir / "child.pid";
  std::vector<std::string> warned;
  LaunchOptions launch;
  launch.warn = [&](const std::string& line) { warned.push_back(line); };
  ServiceProcess service(shell_service("trap '' TERM; /bin/sleep 300 & echo $! > " +
                                       child_file.string() + "; while :; do /bin/sleep 0.05; done"),
                         {}, launch);
  pid_t child = std::atoi(first_line(child_file).c_str());
  ASSERT_GT(child, 0);
  kill_keeper_and_wait(service);
  EXPECT_FALSE(service.running());
  bool shell_gone = process_gone(service.pid()), child_gone = process_gone(child);
  if (!shell_gone) kill(service.pid(), SIGKILL);  // what this test started, by PID
  if (!child_gone) kill(child, SIGKILL);
  EXPECT_TRUE(shell_gone) << "the service's shell, which ignores SIGTERM, outlived its keeper";
  EXPECT_TRUE(child_gone) << "the service's sleep, in its group, outlived its keeper";
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_NE(warned[0].find("its keeper process was killed from outside perfgate; perfgate ended "
                           "the service's processes itself"),
            std::string::npos)
      << warned[0];
}

// Issue 50 item 3: a service that stops its keeper (`kill -STOP $PPID`) held
// perfgate for good at the stop, SIGTERM and all. The stopped keeper is seen,
// killed, and what it kept is ended by perfgate.
TEST(ServiceProcessTest, AServiceThatStopsItsKeeperIsStillEndedAndStopReturns) {
  std::vector<std::string> warned;
  LaunchOptions launch;
  launch.warn = [&](const std::string& line) { warned.push_back(line); };
  ServiceProcess service(shell_service("kill -STOP $PPID; exec /bin/sleep 300"), {}, launch);
  pid_t keeper = parent_of(service.pid());
  ASSERT_GT(keeper, 1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (testing::proc_text("/proc/" + std::to_string(keeper) + "/stat").find(") T ") ==
             std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  service.stop(std::chrono::seconds(1));
  bool gone = process_gone(service.pid());
  if (!gone) kill(service.pid(), SIGKILL);  // what this test started, by its PID
  EXPECT_TRUE(gone) << "the service outlived stop()";
  EXPECT_TRUE(process_gone(keeper)) << "the stopped keeper was left";
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_NE(warned[0].find("its keeper process was stopped from outside perfgate"),
            std::string::npos)
      << warned[0];
}

// A service that ends by itself is reported by its keeper as it ended.
TEST(ServiceProcessTest, AServiceThatExitsIsReportedWithItsStatus) {
  ServiceProcess service(shell_service("exit 7"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (service.running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(service.exit_description(), "exited with status 7");
}

}  // namespace
}  // namespace perfgate
