// A young store as a user builds it: `perfgate calibrate` on main, runs on main,
// then a pull request's run. A calibration of one day leaves a baseline of one
// run undecided (with what would decide); calibrations on three days judge it.
// No assertion depends on how fast this machine is: the limits are wide, and
// the method the verdict names is what is checked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/store_fixtures.h"
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

// Issue 39, findings 5 and 6: one calibration job is one day's luck, and the
// windows of one launch are no independent samples. Issue 46: the pull
// request's run against one run of main is judged with the stated prior, which
// the calibration of one day does not replace, and says so.
TEST_F(YoungStoreCliTest, ACalibrationOfOneDayLeavesTheJudgingToThePrior) {
  auto calibration = perfgate("calibrate", {"--runs", "2", "--commit", "aaa", "--branch", "main"});
  ASSERT_EQ(calibration.exit_code, 0) << calibration.out << calibration.err;
  auto seed = perfgate("run", {"--commit", "bbb", "--branch", "main"});
  ASSERT_EQ(seed.exit_code, 0) << seed.out << seed.err;
  auto json = dir_ / "result.json";
  auto r = perfgate("run", {"--commit", "ccc", "--branch", "feature", "--baseline-branch", "main",
                            "--json", json.string()});
  ASSERT_NE(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("the stated prior of run-to-run noise judged throughput_rps"),
            std::string::npos)
      << r.out;
  auto result = nlohmann::json::parse(testing::read_file(json));
  auto test = result["metrics"]["throughput_rps"]["test"];
  EXPECT_EQ(test["spread"], "prior") << test.dump();
  EXPECT_TRUE(test["reaches_level"].get<bool>()) << test.dump();
  EXPECT_EQ(test["method"].get<std::string>().find(
                "run-level t (1 runs, the stated prior of 2-core runners, "),
            0u)
      << test.dump();
  // An unchanged service within limits of 30 % / 50 %: the prior lets it pass.
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// Issue 46's new user: a baseline run and six unchanged runs of one day, then
// the same service with twice the work per request. Before, every run after the
// first was inconclusive and no baseline, and the slowed service only warned.
TEST_F(YoungStoreCliTest, ANewStoreFailsTwiceTheWorkOnItsFirstDay) {
  testing::write_file(profile_, std::string(kProfile).replace(
                                    std::string(kProfile).find(R"("warn": "30%", "fail": "50%")"),
                                    28, R"("warn": "10%", "fail": "25%")"));
  for (int i = 0; i < 7; ++i) {
    auto run = perfgate("run", {"--commit", "c" + std::to_string(i), "--branch", "main"});
    // Unchanged: never a fail, and no regression kept out of the baseline.
    ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 2) << run.out << run.err;
  }
  auto json = dir_ / "result.json";
  DemoServerProcess slower{{"--delay", "10ms", "--delay-every", "1"}};
  auto r = testing::run_command(
      {testing::perfgate_binary(), "run", profile_.string(), "--store", store_.string(), "--commit",
       "slow", "--branch", "feature", "--baseline-branch", "main", "--json", json.string()},
      {{"TARGET_PORT", std::to_string(slower.port())}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto result = nlohmann::json::parse(testing::read_file(json));
  // The window grew with main's runs: five of them, all of today.
  EXPECT_EQ(result["baseline"]["run_ids"].size(), 5u) << result["baseline"].dump();
  auto metric = result["metrics"]["throughput_rps"];
  EXPECT_EQ(metric["verdict"], "fail") << metric.dump();
  EXPECT_EQ(metric["test"]["spread"], "prior") << metric.dump();
  EXPECT_NE(metric["test"]["method"].get<std::string>().find("5 runs of 1 day,"), std::string::npos)
      << metric.dump();
}

// Calibrations of three commits moved to three days (as three days' pipelines
// would have made them): the pool judges the pull request's run against one run.
TEST_F(YoungStoreCliTest, CalibrationsOnThreeDaysJudgeABaselineOfOneRun) {
  for (std::string commit : {"aaa", "bbb", "ccc"}) {
    auto calibration = perfgate("calibrate", {"--runs", "3", "--commit", commit});
    ASSERT_EQ(calibration.exit_code, 0) << calibration.out << calibration.err;
  }
  testing::spread_over_days(store_, {"aaa", "bbb", "ccc"});
  auto seed = perfgate("run", {"--commit", "ddd", "--branch", "main"});
  ASSERT_EQ(seed.exit_code, 0) << seed.out << seed.err;
  auto json = dir_ / "result.json";
  auto r = perfgate("run", {"--commit", "eee", "--branch", "feature", "--baseline-branch", "main",
                            "--json", json.string()});
  ASSERT_NE(r.exit_code, 3) << r.out << r.err;
  auto test = nlohmann::json::parse(testing::read_file(json))["metrics"]["throughput_rps"]["test"];
  EXPECT_EQ(test["baseline_runs"], 1);
  EXPECT_TRUE(test["reaches_level"].get<bool>()) << test.dump();
  auto method = test["method"].get<std::string>();
  EXPECT_EQ(method.find("run-level t (1 runs, noise pooled over 9 runs of 3 days, "), 0u) << method;
  // An unchanged service within limits of 30 % / 50 %: a pass, earned.
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// A pipeline's calibrate step runs on every default-branch run; it measures once
// a day until the store's pool holds runs of three days.
TEST_F(YoungStoreCliTest, CalibrateIfNeededRunsOnceADayUntilThePoolHoldsThreeDays) {
  auto first = perfgate("calibrate", {"--runs", "2", "--if-needed", "--commit", "aaa"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(first.out.find("nothing to do"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("throughput"), std::string::npos) << first.out;

  auto again = perfgate("calibrate", {"--runs", "2", "--if-needed", "--commit", "aaa"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("calibrate: nothing to do today, this host was calibrated today; the "
                           "noise pool (2 runs of 1 day(s)) needs runs of 3 days"),
            std::string::npos)
      << again.out;

  // The next days' pipelines (their runs moved back, as if made then).
  std::vector<std::string> commits = {"aaa"};
  for (std::string commit : {"bbb", "ccc"}) {
    testing::spread_over_days(store_, commits);
    auto day = perfgate("calibrate", {"--runs", "2", "--if-needed", "--commit", commit});
    ASSERT_EQ(day.exit_code, 0) << day.out << day.err;
    EXPECT_EQ(day.out.find("nothing to do"), std::string::npos) << day.out;
    commits.push_back(commit);
  }
  testing::spread_over_days(store_, commits);
  auto enough = perfgate("calibrate", {"--runs", "2", "--if-needed", "--commit", "ddd"});
  EXPECT_NE(enough.out.find("calibrate: nothing to do, the store already knows this host's "
                            "run-to-run noise (6 runs of 3 day(s))"),
            std::string::npos)
      << enough.out;
}

// Issue 50 item 13: a calibration whose runs were all saturated counted as
// today's, and --if-needed did nothing until the next day.
TEST_F(YoungStoreCliTest, ASaturatedCalibrationIsNotTodaysCalibration) {
  // The same hash (saturation is not in it), saturated in every window: no
  // machine has 100 % of its memory available.
  std::string busy = kProfile;
  busy.replace(busy.find(R"("memory_available": "0%")"), 24, R"("memory_available": "100%")");
  testing::write_file(profile_, busy);
  perfgate("calibrate", {"--runs", "2", "--if-needed", "--commit", "aaa"});
  testing::write_file(profile_, kProfile);
  auto again = perfgate("calibrate", {"--runs", "2", "--if-needed", "--commit", "aaa"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(again.out.find("nothing to do"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("throughput"), std::string::npos) << again.out;
}

// Five eligible runs on main (the same profile hash, without relative limits, so
// they pass): the window's own spread decides, whatever the pool holds.
TEST_F(YoungStoreCliTest, CalibrateIfNeededLeavesAGrownStoreAlone) {
  const std::string relative = R"("throughput": { "warn": "30%", "fail": "50%" })";
  std::string absolute_only = kProfile;
  auto at = absolute_only.find(relative);
  ASSERT_NE(at, std::string::npos);
  absolute_only.replace(at, relative.size(), R"("error_rate": { "max": "50%" })");
  testing::write_file(profile_, absolute_only);
  for (int i = 0; i < 5; ++i) {
    auto seed = perfgate("run", {"--commit", "c" + std::to_string(i), "--branch", "main"});
    ASSERT_EQ(seed.exit_code, 0) << seed.out << seed.err;
  }
  testing::write_file(profile_, kProfile);
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
