// End-to-end: the profile's `placement` as a user writes it. The run's JSON
// names the placement, and while the load runs the service's threads and the
// load threads really are on the chosen CPUs (read from /proc, as `taskset -p`
// would show them).
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

using testing::TempDir;
namespace fs = std::filesystem;

// Cpus_allowed_list of every thread of `pid`.
std::vector<std::string> thread_cpus(pid_t pid) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    auto cpus =
        testing::status_field(testing::proc_text(task.path() / "status"), "Cpus_allowed_list");
    if (!cpus.empty()) out.push_back(cpus);
  }
  return out;
}

// What the test saw of perfgate's and the service's threads during the run.
struct Observed {
  std::set<std::string> service_cpus;  // every service thread's list, every look
  int looks_with_pinned_load = 0;      // looks where some perfgate thread sat on "1" alone
  int service_looks = 0;
};

Observed watch_run(const std::atomic<bool>& done) {
  Observed seen;
  while (!done) {
    for (pid_t perfgate : testing::children_of(getpid())) {
      if (!testing::cmdline_has(perfgate, " run ")) continue;
      auto own = thread_cpus(perfgate);
      if (std::count(own.begin(), own.end(), "1") > 0) ++seen.looks_with_pinned_load;
      for (pid_t child : testing::services_of(perfgate)) {
        if (!testing::cmdline_has(child, "demo-server")) continue;
        ++seen.service_looks;
        for (const auto& cpus : thread_cpus(child)) seen.service_cpus.insert(cpus);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return seen;
}

class PlacementCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::two_cpus_allowed()) GTEST_SKIP() << "needs CPUs 0 and 1 allowed";
  }

  // `prefix` goes before perfgate's command line (e.g. taskset).
  nlohmann::json run(const std::string& placement, testing::CommandResult& r, Observed* seen,
                     const std::vector<std::string>& prefix = {}) {
    auto port = std::to_string(testing::unused_port());
    // A run is placed from 20 host samples on (kMinPlacementSamples). Sampling
    // every 10ms over 1.5 s of windows leaves room for a sampler slowed fourfold
    // on a crowded CPU: under ASan beside a busy neighbour, 20ms over 0.9 s gave 19.
    testing::write_file(dir_ / "profile.json", R"({
      "name": "placement", "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
      "load": { "threads": 1, "connections": 4, "duration": "500ms", "warmup": "200ms" },
      "repeat": { "count": 3, "discard": 0 },
      "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                      "steal": "100%", "memory_available": "0%",
                      "interval": "10ms" },
      "service": { "command": ["${PERFGATE}", "demo-server", "--port", "${TARGET_PORT}",
                               "--work", "20us"],
                   "ready_url": "http://127.0.0.1:${TARGET_PORT}/health" })" +
                                                   placement + "}");
    std::atomic<bool> done{false};
    std::thread watcher([&] {
      if (seen) *seen = watch_run(done);
    });
    std::vector<std::string> args = prefix;
    for (auto a : {testing::perfgate_binary(), std::string("run"), (dir_ / "profile.json").string(),
                   std::string("--store"), (dir_ / "p.db").string(), std::string("--json"),
                   (dir_ / "result.json").string()})
      args.push_back(a);
    r = testing::run_command(args, {{"TARGET_PORT", port}});
    done = true;
    watcher.join();
    return nlohmann::json::parse(testing::read_file(dir_ / "result.json"));
  }

  TempDir dir_;
};

TEST_F(PlacementCliTest, FixedPlacementPinsTheServiceAndTheLoadThreadsAndIsRecorded) {
  testing::CommandResult r;
  Observed seen;
  auto json = run(R"(, "placement": { "load": "1", "service": "0" })", r, &seen);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json["host"]["placement"], "load 1, service 0");
  EXPECT_NE(r.err.find("placement: load 1, service 0 (from the profile)"), std::string::npos)
      << r.err;
  ASSERT_GT(seen.service_looks, 0) << "the run ended before the test saw its service";
  EXPECT_EQ(seen.service_cpus, std::set<std::string>{"0"});
  EXPECT_GT(seen.looks_with_pinned_load, 0);
}

TEST_F(PlacementCliTest, OffLeavesBothToTheSchedulerAndOutOfTheFingerprint) {
  testing::CommandResult r;
  Observed seen;
  auto json = run(R"(, "placement": "off")", r, &seen);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(json["host"].contains("placement"));
  ASSERT_GT(seen.service_looks, 0);
  EXPECT_EQ(seen.service_cpus.count("0"), 0u);
  EXPECT_EQ(seen.looks_with_pinned_load, 0);
}

TEST_F(PlacementCliTest, PinnedAndUnpinnedRunsAreNotEachOthersBaseline) {
  testing::CommandResult r;
  auto pinned = run(R"(, "placement": { "load": "1", "service": "0" })", r, nullptr);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto unpinned = run(R"(, "placement": "off")", r, nullptr);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(pinned["host"]["key"], unpinned["host"]["key"]);
  EXPECT_TRUE(unpinned["baseline"].is_null()) << unpinned["baseline"];
}

// The sampler records whether the load and the service shared a CPU (issue
// 27): held apart by fixed placement, and forced together by running all of
// perfgate, and so the service it starts, on one CPU.
TEST_F(PlacementCliTest, TheRunRecordsWhetherLoadAndServiceSharedACpu) {
  testing::CommandResult r;
  auto apart = run(R"(, "placement": { "load": "1", "service": "0" })", r, nullptr);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto& machine = apart["load_machine"];
  ASSERT_TRUE(machine["shared_cpu_pct"].is_number()) << machine.dump(2);
  EXPECT_LT(machine["shared_cpu_pct"].get<double>(), 25.0);
  EXPECT_EQ(machine["placement_class"], "apart");
  EXPECT_NE(r.out.find("% of samples (apart)"), std::string::npos) << r.out;
  auto check = testing::validate_result_json(dir_ / "result.json");
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;

  auto mixed = run(R"(, "placement": "off")", r, nullptr, {"/usr/bin/taskset", "-c", "0"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << r.out << r.err;
  EXPECT_GT(mixed["load_machine"]["shared_cpu_pct"].get<double>(), 75.0)
      << mixed["load_machine"].dump(2);
  EXPECT_EQ(mixed["load_machine"]["placement_class"], "mixed");
  EXPECT_NE(r.out.find("% of samples (mixed)"), std::string::npos) << r.out;

  // The store keeps it per window.
  auto exported = testing::run_command(
      {testing::perfgate_binary(), "store", "export", "--store", (dir_ / "p.db").string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("shared_cpu_pct"), std::string::npos);
}

// A service perfgate did not start is pinned only when the profile names the
// CPUs, and gets its own CPUs back when the run ends.
TEST_F(PlacementCliTest, AWatchedServiceIsPinnedForTheRunOnlyAndThenRestored) {
  testing::DemoServerProcess server({"--work", "20us"});
  pid_t service = 0;
  for (pid_t child : testing::children_of(getpid()))
    if (testing::cmdline_has(child, "demo-server")) service = child;
  ASSERT_GT(service, 0);
  auto before = thread_cpus(service);
  testing::write_file(dir_ / "watched.json", R"({
    "name": "watched", "target": { "url": ")" + server.url() +
                                                 R"(" },
    "load": { "threads": 1, "connections": 4, "duration": "300ms", "warmup": "200ms" },
    "repeat": { "count": 3, "discard": 0 },
    "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                    "steal": "100%", "memory_available": "0%",
                      "interval": "20ms" },
    "placement": { "load": "1", "service": "0" } })");
  std::atomic<bool> done{false};
  std::set<std::string> during;
  std::thread watcher([&] {
    while (!done) {
      for (const auto& cpus : thread_cpus(service)) during.insert(cpus);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  auto r = testing::run_command(
      {testing::perfgate_binary(), "run", (dir_ / "watched.json").string(), "--store",
       (dir_ / "w.db").string(), "--json", (dir_ / "watched-result.json").string()});
  done = true;
  watcher.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("threads of the watched service pinned to CPUs 0 for the run"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(during.count("0"), 1u);         // pinned while the load ran
  EXPECT_EQ(thread_cpus(service), before);  // and given back
  auto json = nlohmann::json::parse(testing::read_file(dir_ / "watched-result.json"));
  EXPECT_EQ(json["host"]["placement"], "load 1, service 0");
}

}  // namespace
}  // namespace perfgate
