// End-to-end: a service command that pins itself elsewhere (a `taskset` in
// it) is held to the profile's placement once ready. Otherwise one side of a
// paired run can sit on the load thread's core while the run records
// "service 0": bench/paired_placement.sh measured such an A/A pair at -65 %.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/proc_status.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

// Cpus_allowed_list of every thread of the service perfgate started, as last seen.
std::set<std::string> last_service_cpus(const std::atomic<bool>& done) {
  std::set<std::string> last;
  while (!done) {
    for (pid_t perfgate : testing::children_of(getpid()))
      for (pid_t child : testing::services_of(perfgate)) {
        if (!testing::cmdline_has(child, "demo-server")) continue;
        std::set<std::string> now;
        std::error_code ec;
        for (const auto& task :
             fs::directory_iterator("/proc/" + std::to_string(child) + "/task", ec)) {
          auto cpus = testing::status_field(testing::proc_text(task.path() / "status"),
                                            "Cpus_allowed_list");
          if (!cpus.empty()) now.insert(cpus);
        }
        if (!now.empty()) last = now;
      }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return last;
}

TEST(ServicePlacementCliTest, AServiceThatPinsItselfElsewhereIsHeldToThePlacement) {
  if (!testing::two_cpus_allowed()) GTEST_SKIP() << "needs CPUs 0 and 1 allowed";
  if (testing::run_command({"/bin/sh", "-c", "taskset -c 0 true"}).exit_code != 0)
    GTEST_SKIP() << "needs taskset (util-linux)";
  testing::TempDir dir;
  auto port = std::to_string(testing::unused_port());
  testing::write_file(dir / "profile.json", R"({
    "name": "held", "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
    "load": { "threads": 1, "connections": 4, "duration": "300ms", "warmup": "200ms" },
    "repeat": { "count": 3, "discard": 0 },
    "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                    "steal": "100%", "memory_available": "0%" },
    "service": { "command": ["taskset", "-c", "1", "${PERFGATE}", "demo-server", "--port",
                             "${TARGET_PORT}", "--work", "20us"],
                 "ready_url": "http://127.0.0.1:${TARGET_PORT}/health" },
    "placement": { "load": "1", "service": "0" } })");
  std::atomic<bool> done{false};
  std::set<std::string> seen;
  std::thread watcher([&] { seen = last_service_cpus(done); });
  auto r = testing::run_command(
      {testing::perfgate_binary(), "run", (dir / "profile.json").string(), "--store",
       (dir / "p.db").string(), "--json", (dir / "result.json").string()},
      {{"TARGET_PORT", port}});
  done = true;
  watcher.join();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(testing::read_file(dir / "result.json"))["host"]["placement"],
            "load 1, service 0");
  // taskset put it on CPU 1; perfgate put it back where the run says it was.
  EXPECT_EQ(seen, (std::set<std::string>{"0"}));
}

}  // namespace
}  // namespace perfgate
