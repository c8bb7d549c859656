#include "cli/demo_server_burner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "perfgate/host/proc_reader.h"

namespace perfgate {
namespace {

using namespace std::chrono_literals;

bool alive(pid_t pid) {
  return kill(pid, 0) == 0;
}

// Its CPU must count as foreign: no process-tree attribution of this process
// (perfgate's way of finding a service's CPU) may reach it.
TEST(BusyBurnerTest, IsNoDescendantOfItsServerAndEndsWithIt) {
  pid_t burner_pid = 0;
  {
    BusyBurner burner(1);
    burner_pid = burner.pid();
    ASSERT_GT(burner_pid, 0);
    EXPECT_TRUE(alive(burner_pid));
    auto tree = ProcReader("/").process_tree(getpid());
    EXPECT_EQ(std::find(tree.begin(), tree.end(), burner_pid), tree.end());
    burner.busy_for(50ms);
  }
  // Its lifeline closed: it stops spinning and exits (reaped by init, not us).
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = !alive(burner_pid);
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "burner pid " << burner_pid << " still runs";
}

}  // namespace
}  // namespace perfgate
