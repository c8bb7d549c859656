// A young store still judges: the gate pipeline with a fake load
// (support/fake_measurer.h), a baseline of three runs on main, and a ~10 % loss
// on a pull request's branch.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "support/fake_measurer.h"
#include "support/store_fixtures.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using namespace std::chrono_literals;
using testing::FakeMeasurer;
using testing::ScriptedWindow;
using testing::TempDir;

// The accuracy profile's throughput limits: warn 3 %, fail 5 %.
constexpr const char* kProfile = R"({
  "name": "young-store",
  "target": { "url": "http://127.0.0.1:9/" },
  "load": { "threads": 1, "connections": 8, "duration": "1s", "warmup": "0s" },
  "repeat": { "count": 6, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%",
    "cpu_pressure": "100%", "steal": "100%", "memory_available": "0%" },
  "thresholds": { "throughput": { "warn": "3%", "fail": "5%" } }
})";

class YoungStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_file(dir_ / "profile.json", kProfile);
    options_.profile_path = dir_ / "profile.json";
    options_.store_path = dir_ / "perfgate.db";
    options_.json_path = dir_ / "result.json";
  }

  // One gate of `rps` responses a second (and a small spread), as `commit` on `branch`.
  ExitStatus gate(uint64_t rps, const std::string& commit, const std::string& branch) {
    auto windows = testing::steady(6, rps, 5ms);
    fake_.script = [windows](const Profile&) { return windows; };
    options_.ci = {commit, branch, "main"};
    std::ostringstream out;
    return run_gate(
        options_, [](std::string_view) { return std::optional<std::string>(); }, out, stop_,
        fake_.measurer());
  }

  // A/A runs of three commits, three each, moved to three days
  // (testing::spread_over_days): a noise pool of runs that scatter by about 0.6 %.
  void seed_pool() {
    std::vector<std::vector<uint64_t>> days = {
        {1000, 1010, 995}, {1005, 990, 1000}, {1000, 1008, 996}};
    for (size_t day = 0; day < days.size(); ++day)
      for (uint64_t rps : days[day]) gate(rps, "pool" + std::to_string(day), "pool");
    testing::spread_over_days(options_.store_path, {"pool0", "pool1", "pool2"});
  }

  nlohmann::json result() { return nlohmann::json::parse(testing::read_file(options_.json_path)); }
  nlohmann::json throughput() { return result()["metrics"]["throughput_rps"]; }

  TempDir dir_;
  RunOptions options_;
  FakeMeasurer fake_;
  std::atomic<bool> stop_{false};
};

// Issue 46: a fresh store's second run has a baseline of one run and nothing of
// its own that says how far whole runs scatter: the stated prior judges it. An
// unchanged run cannot be held to 3 / 5 % by the prior's 5 %: inconclusive, yet
// no regression, so it joins the baseline (before, every later run stayed
// inconclusive against the first run alone: a ratchet). Half the throughput
// fails from the second run on.
TEST_F(YoungStoreTest, AFreshStoreDecidesFromItsSecondRunAndItsWindowGrows) {
  ASSERT_EQ(gate(1000, "main1", "main"), ExitStatus::kPass);
  EXPECT_EQ(gate(500, "main2", "main"), ExitStatus::kFail);
  EXPECT_EQ(throughput()["test"]["spread"], "prior");
  EXPECT_EQ(result()["baseline"]["run_ids"], nlohmann::json::array({1}));
  for (int64_t run = 3; run <= 5; ++run) {
    EXPECT_EQ(gate(1000, "main" + std::to_string(run), "main"), ExitStatus::kWarn);
    EXPECT_TRUE(throughput()["inconclusive"].get<bool>());
    auto message = throughput()["message"].get<std::string>();
    EXPECT_NE(message.find("judged with the stated prior of run-to-run noise"), std::string::npos)
        << message;
    EXPECT_NE(result()["notes"].dump().find("the stated prior of run-to-run noise judged "
                                            "throughput_rps"),
              std::string::npos);
    // The failed run 2 is out; every undecided run of main is in.
    auto ids = result()["baseline"]["run_ids"];
    EXPECT_EQ(ids.size(), static_cast<size_t>(run - 3 + 1)) << ids;
    EXPECT_EQ(ids.back(), 1) << ids;
  }
  EXPECT_EQ(gate(500, "pr1", "feature"), ExitStatus::kFail);
  EXPECT_EQ(throughput()["test"]["baseline_runs"], 4);
}

TEST_F(YoungStoreTest, APoolOfThreeDaysJudgesABaselineOfOneRun) {
  seed_pool();
  ASSERT_EQ(gate(1000, "main1", "main"), ExitStatus::kPass);
  EXPECT_EQ(gate(900, "pr1", "feature"), ExitStatus::kFail);
  auto method = throughput()["test"]["method"].get<std::string>();
  EXPECT_NE(method.find("run-level t (1 runs, noise pooled over 9 runs of 3 days"),
            std::string::npos)
      << method;
  // An unchanged build passes: the pool's 0.6 % leaves a 5 % loss far outside.
  EXPECT_EQ(gate(1000, "pr2", "feature"), ExitStatus::kPass);
}

// One placement accident on main: of five runs of one commit, two landed 14 % low.
// Before, each low run failed against the fast ones and was dropped, so the window
// kept only fast runs and every later low run of the same code failed with p = 0.
TEST_F(YoungStoreTest, RunsThatLandedLowOnMainKeepTheBaselineHonest) {
  seed_pool();
  EXPECT_EQ(gate(1000, "main1", "main"), ExitStatus::kPass);
  EXPECT_EQ(gate(860, "main1", "main"), ExitStatus::kFail);  // against one run and the pool
  // The failed run of the same commit is in the window now: the runs' own spread
  // (14 %, far past the pool's) says a run 14 % off is within what this code
  // does here, and no 5 % limit can be held: inconclusive, never a pass that
  // could not have failed, nor a fail.
  for (uint64_t rps : {1000, 860}) {
    EXPECT_EQ(gate(rps, "main1", "main"), ExitStatus::kWarn);
    EXPECT_TRUE(throughput()["inconclusive"].get<bool>());
  }
  // A pull request's run of the same code that lands low warns; it does not fail.
  // The undecided runs of main showed no regression and joined the baseline
  // (issue 46): the first run, the failed replicate, and the two since.
  EXPECT_EQ(gate(860, "main1", "feature"), ExitStatus::kWarn);
  EXPECT_EQ(throughput()["test"]["baseline_runs"], 4);
  auto notes = result()["notes"].dump();
  EXPECT_NE(notes.find("1 failed run(s) of a baseline commit kept in the baseline"),
            std::string::npos)
      << notes;
}

}  // namespace
}  // namespace perfgate
