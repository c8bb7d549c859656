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

}  // namespace
}  // namespace perfgate
