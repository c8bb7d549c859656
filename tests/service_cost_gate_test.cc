// The service's cost as a gated metric: a profile without a `thresholds`
// section gates service_cpu_us_per_request (warn 5 %, fail 8 %) wherever the
// service is attributed, in stored and in paired mode, with the same tests as
// the other metrics (gate pipeline with support/fake_measurer.h).
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
using testing::TempDir;

std::string profile(const std::string& extra = "") {
  return R"({
  "name": "service-cost",
  "target": { "url": "http://127.0.0.1:9/" },
  "load": { "threads": 1, "connections": 8, "duration": "1s", "warmup": "0s" },
  "repeat": { "count": 9, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%",
    "cpu_pressure": "100%", "steal": "100%", "memory_available": "0%" })" +
         extra + "\n}";
}

// 1000 responses a window, each costing about `us` CPU-microseconds of the service.
std::vector<double> cpu_s(double us) {
  std::vector<double> out;
  for (int i = 0; i < 9; ++i) out.push_back((us + 0.01 * i) * 1000 / 1e6);
  return out;
}

class ServiceCostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.profile_path = dir_ / "profile.json";
    options_.store_path = dir_ / "perfgate.db";
    options_.json_path = dir_ / "result.json";
    testing::write_file(options_.profile_path, profile());
    fake_.script = [](const Profile&) { return testing::steady(9, 1000, 5ms); };
  }

  // A stored-mode gate whose service costs `us` a request (0: not attributed).
  ExitStatus gate(double us) {
    fake_.service_cpu = [us](const Profile&) { return us > 0 ? cpu_s(us) : std::vector<double>{}; };
    return run();
  }

  ExitStatus run() {
    // Every run its own commit, as in CI: runs of one branch without commits
    // would pool as one code's noise, and these runs differ on purpose.
    options_.ci.commit = "c" + std::to_string(++runs_);
    std::ostringstream out;
    return run_gate(
        options_, [](std::string_view) { return std::optional<std::string>(); }, out, stop_,
        fake_.measurer());
  }

  // A/A runs of three days in the noise pool (testing::spread_over_days),
  // without which a baseline of one run judges nothing (issue 39): a cost
  // that scatters by 0.25 %, the same throughput and latency.
  void seed_pool() {
    for (int day = 0; day < 3; ++day)
      for (double us : {19.95, 20.0, 20.05}) {
        options_.ci = {"pool" + std::to_string(day), "pool", ""};
        fake_.service_cpu = [us](const Profile&) { return cpu_s(us); };
        std::ostringstream out;
        run_gate(
            options_, [](std::string_view) { return std::optional<std::string>(); }, out, stop_,
            fake_.measurer());
      }
    testing::spread_over_days(options_.store_path, {"pool0", "pool1", "pool2"});
    options_.ci = {};
  }

  nlohmann::json cost() {
    return nlohmann::json::parse(
        testing::read_file(options_.json_path))["metrics"]["service_cpu_us_per_request"];
  }

  TempDir dir_;
  RunOptions options_;
  int runs_ = 0;
  FakeMeasurer fake_;
  std::atomic<bool> stop_{false};
};

TEST_F(ServiceCostTest, StoredModeFailsACostlierServiceAndWarnsOfASlightlyCostlierOne) {
  seed_pool();
  ASSERT_EQ(gate(20), ExitStatus::kPass);
  EXPECT_EQ(gate(21.8), ExitStatus::kFail);  // +9 %, past the default fail limit of 8 %
  EXPECT_EQ(cost()["verdict"], "fail");
  EXPECT_NE(cost()["test"]["method"].get<std::string>().find("run-level t (1 runs, noise pooled"),
            std::string::npos)
      << cost()["test"].dump();
  EXPECT_EQ(gate(21.2), ExitStatus::kWarn);  // +6 %: past warn 5 %
  EXPECT_EQ(gate(20.2), ExitStatus::kPass);
  // A cheaper service never fails. Against three runs that scatter by 6 % (the
  // warned run joined them) the run-level t of 2 df cannot rule out an 8 % rise:
  // inconclusive, which is a warn.
  EXPECT_NE(gate(17), ExitStatus::kFail);
}

TEST_F(ServiceCostTest, NoAttributedServiceNoCostAndNothingToGate) {
  seed_pool();
  ASSERT_EQ(gate(20), ExitStatus::kPass);
  EXPECT_EQ(gate(0), ExitStatus::kPass);
  EXPECT_TRUE(cost().is_null());
}

TEST_F(ServiceCostTest, PairedModeJudgesTheCostOnThePairsRatios) {
  testing::write_file(options_.profile_path, profile(R"(,
  "paired": { "baseline": { "origin": "http://127.0.0.1:10" }, "leg_warmup": "0s" })"));
  auto sides = [](double base_us, double cand_us) {
    return [=](const Profile& p) {
      return cpu_s(p.target.url.find(":10") != std::string::npos ? base_us : cand_us);
    };
  };
  fake_.service_cpu = sides(20, 21.8);
  EXPECT_EQ(run(), ExitStatus::kFail);
  EXPECT_EQ(cost()["verdict"], "fail");
  EXPECT_NE(cost()["test"]["method"].get<std::string>().find("wilcoxon"), std::string::npos)
      << cost()["test"].dump();
  fake_.service_cpu = sides(20, 20);
  EXPECT_EQ(run(), ExitStatus::kPass);
}

}  // namespace
}  // namespace perfgate
