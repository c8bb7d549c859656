// End-to-end: stored mode judges a run only against baseline runs of its
// placement class (issue 27). On a few cores the scheduler keeps a run's load
// and an unpinned service apart or mixed for the whole run, and the two cost
// the service differently per request. The test holds the placement itself:
// perfgate under `taskset -c 0`, and the service it finds by its listener
// moved to CPU 1 (apart) or CPU 0 (mixed) between runs.
#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/proc_status.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

// Every thread of `pid` (a process this test started) onto `cpu`.
void pin_threads(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task"))
    sched_setaffinity(std::stoi(task.path().filename().string()), sizeof set, &set);
}

class PlacementClassCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::two_cpus_allowed()) GTEST_SKIP() << "needs CPUs 0 and 1 allowed";
    for (pid_t child : testing::children_of(getpid()))
      if (testing::cmdline_has(child, "demo-server")) service_ = child;
    ASSERT_GT(service_, 0);
    // A run is placed from 20 host samples on (kMinPlacementSamples). Sampling
    // every 10ms over 1.5 s of windows leaves room for a sampler slowed fourfold
    // on a crowded CPU: under ASan beside a busy neighbour, 20ms over 0.9 s gave 19.
    testing::write_file(dir_ / "profile.json", R"({
      "name": "placement-class", "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
      "load": { "threads": 1, "connections": 4, "duration": "500ms", "warmup": "200ms" },
      "repeat": { "count": 3, "discard": 0 },
      "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                      "steal": "100%", "memory_available": "0%",
                      "interval": "10ms" },
      "placement": "off" })");
  }

  // One run of perfgate on CPU 0, the service on `service_cpu`.
  nlohmann::json run(int service_cpu, testing::CommandResult& r) {
    pin_threads(service_, service_cpu);
    fs::remove(dir_ / "result.json");
    r = testing::run_command({"/usr/bin/taskset", "-c", "0", testing::perfgate_binary(), "run",
                              (dir_ / "profile.json").string(), "--store", store(), "--json",
                              (dir_ / "result.json").string()},
                             {{"TARGET_PORT", std::to_string(server_.port())}});
    auto text = testing::read_file(dir_ / "result.json");
    return text.empty() ? nlohmann::json() : nlohmann::json::parse(text);
  }

  std::string store() const { return (dir_ / "p.db").string(); }

  testing::DemoServerProcess server_{{"--work", "20us"}};
  pid_t service_ = 0;
  TempDir dir_;
};

std::string notes_of(const nlohmann::json& result) {
  return result["notes"].dump();
}

TEST_F(PlacementClassCliTest, ARunIsJudgedOnlyAgainstRunsOfItsPlacementClass) {
  testing::CommandResult r;
  auto first = run(1, r);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_EQ(first["load_machine"]["placement_class"], "apart") << first["load_machine"].dump(2);

  // Mixed, with only an apart run stored: inconclusive, stored, and it says why.
  auto second = run(0, r);
  ASSERT_FALSE(second.is_null()) << r.err;
  ASSERT_EQ(second["load_machine"]["placement_class"], "mixed") << second["load_machine"].dump(2);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(second["verdict"], "warn");
  EXPECT_TRUE(second["baseline"].is_null()) << second["baseline"].dump(2);
  EXPECT_NE(notes_of(second).find("every eligible baseline run was apart"), std::string::npos)
      << notes_of(second);
  EXPECT_NE(r.out.find("inconclusive"), std::string::npos) << r.out;
  EXPECT_TRUE(second["recorded"].get<bool>());
  auto check = testing::validate_result_json(dir_ / "result.json");
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;

  // Mixed again: the mixed run is its baseline, the apart one is left out.
  auto third = run(0, r);
  ASSERT_FALSE(third.is_null()) << r.err;
  ASSERT_EQ(third["load_machine"]["placement_class"], "mixed");
  EXPECT_NE(r.exit_code, 3) << r.err;
  ASSERT_FALSE(third["baseline"].is_null()) << r.out;
  EXPECT_EQ(third["baseline"]["run_ids"], nlohmann::json::array({second["run_id"]}))
      << third["baseline"].dump(2);
  EXPECT_NE(notes_of(third).find("1 of the 2 newest baseline runs were apart and are left out"),
            std::string::npos)
      << notes_of(third);

  // history shows each run's class, in its flags and its JSON.
  auto table = testing::run_command({testing::perfgate_binary(), "history", "--store", store()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("baseline,apart"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("baseline,mixed"), std::string::npos) << table.out;
  auto listed =
      testing::run_command({testing::perfgate_binary(), "history", "--store", store(), "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto runs = nlohmann::json::parse(listed.out);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[2]["placement_class"], "apart");  // newest first
  EXPECT_EQ(runs[0]["placement_class"], "mixed");
  EXPECT_TRUE(runs[0]["shared_cpu_pct"].is_number());

  // compare judges a stored run against runs of its class too; --any-placement
  // against the newest runs of either class, as before.
  auto again =
      testing::run_command({testing::perfgate_binary(), "compare",
                            std::to_string(second["run_id"].get<int>()), "--store", store()});
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.out.find("every eligible baseline run was apart"), std::string::npos)
      << again.out;
  auto any = testing::run_command({testing::perfgate_binary(), "compare",
                                   std::to_string(second["run_id"].get<int>()), "--store", store(),
                                   "--any-placement"});
  EXPECT_NE(any.exit_code, 3) << any.err;
  EXPECT_EQ(any.out.find("placement:"), std::string::npos) << any.out;
  EXPECT_EQ(any.out.find("no baseline"), std::string::npos) << any.out;
}

}  // namespace
}  // namespace perfgate
