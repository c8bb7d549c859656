// A young store as a user builds it: `perfgate calibrate` on main, two runs on
// main, then a pull request's run. Its run-level test takes the noise pooled
// over all of them. No assertion depends on how fast this machine is: the
// limits are wide, and the method the verdict names is what is checked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::CommandResult;
using testing::DemoServerProcess;
using testing::TempDir;

constexpr const char* kProfile = R"({
  "name": "young-store-cli",
  "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
  "load": { "threads": 1, "connections": 8, "duration": "200ms", "warmup": "100ms" },
  "repeat": { "count": 4, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { "throughput": { "warn": "30%", "fail": "50%" } }
})";

class YoungStoreCliTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_file(profile_, kProfile); }

  CommandResult perfgate(const std::string& command, std::vector<std::string> extra) {
    std::vector<std::string> args = {testing::perfgate_binary(), command, profile_.string(),
                                     "--store", store_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_command(args, {{"TARGET_PORT", std::to_string(server_.port())}});
  }

  TempDir dir_;
  std::filesystem::path profile_ = dir_ / "profile.json";
  std::filesystem::path store_ = dir_ / "perfgate.db";
  DemoServerProcess server_{{"--delay", "5ms", "--delay-every", "1"}};
};

TEST_F(YoungStoreCliTest, APullRequestsFirstRunIsJudgedWithTheNoiseOfEveryEarlierRun) {
  auto calibration = perfgate("calibrate", {"--runs", "2", "--commit", "aaa", "--branch", "main"});
  ASSERT_EQ(calibration.exit_code, 0) << calibration.out << calibration.err;
  for (int i = 0; i < 2; ++i) {
    auto seed = perfgate("run", {"--commit", "bbb", "--branch", "main"});
    ASSERT_NE(seed.exit_code, 3) << seed.out << seed.err;
  }
  auto json = dir_ / "result.json";
  auto r = perfgate("run", {"--commit", "ccc", "--branch", "feature", "--baseline-branch", "main",
                            "--json", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto test = nlohmann::json::parse(testing::read_file(json))["metrics"]["throughput_rps"]["test"];
  // Two baseline runs alone have no run-level test; the calibration's pair of
  // runs and the two of main give 1 + 1 degrees of freedom, combined with the
  // window's own 1 (or, should main's two runs scatter far more than the pool
  // says, the window's own spread alone).
  EXPECT_EQ(test["baseline_runs"], 2);
  auto method = test["method"].get<std::string>();
  EXPECT_TRUE(method.find("run-level t (2 runs, noise pooled over 4 runs, 2 df, with the "
                          "window's 1 df)") != std::string::npos ||
              method.find("run-level t (2 runs, the window's own spread") != std::string::npos)
      << test.dump();
}

// A pipeline's calibrate step runs on every default-branch run; it measures only
// while the store's pool knows less than its runs would add.
TEST_F(YoungStoreCliTest, CalibrateIfNeededRunsOnlyUntilThePoolHoldsItsRuns) {
  auto first = perfgate("calibrate", {"--runs", "2", "--if-needed", "--commit", "aaa"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(first.out.find("nothing to do"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("throughput"), std::string::npos) << first.out;

  auto again = perfgate("calibrate", {"--runs", "2", "--if-needed", "--commit", "aaa"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("calibrate: nothing to do, the store already knows this host's "
                           "run-to-run noise (2 runs of the same code, 1 df; 2 runs would add 1)"),
            std::string::npos)
      << again.out;

  // Three runs would add 2 df, more than the pool's 1: they run, and then suffice.
  auto more = perfgate("calibrate", {"--runs", "3", "--if-needed", "--commit", "bbb"});
  ASSERT_EQ(more.exit_code, 0) << more.out << more.err;
  EXPECT_EQ(more.out.find("nothing to do"), std::string::npos) << more.out;
  auto enough = perfgate("calibrate", {"--runs", "3", "--if-needed", "--commit", "ccc"});
  EXPECT_NE(enough.out.find("(5 runs of the same code, 3 df; 3 runs would add 2)"),
            std::string::npos)
      << enough.out;
}

// Five runs on main: the window's own spread decides, whatever the pool holds.
TEST_F(YoungStoreCliTest, CalibrateIfNeededLeavesAGrownStoreAlone) {
  for (int i = 0; i < 5; ++i) {
    auto seed = perfgate("run", {"--commit", "c" + std::to_string(i), "--branch", "main"});
    ASSERT_NE(seed.exit_code, 3) << seed.out << seed.err;
  }
  auto r = perfgate("calibrate", {"--runs", "3", "--if-needed", "--branch", "main"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("calibrate: nothing to do, the baseline window of main holds 5 runs"),
            std::string::npos)
      << r.out;
}

TEST_F(YoungStoreCliTest, CalibrateIfNeededNeedsTheStore) {
  auto r = perfgate("calibrate", {"--runs", "2", "--if-needed", "--no-record"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(store_));
}

}  // namespace
}  // namespace perfgate
