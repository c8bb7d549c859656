#include "perfgate/report/benchmark_export.h"

#include <gtest/gtest.h>

#include "support/gate_result_builder.h"
#include "support/run_record_builder.h"

namespace perfgate {
namespace {

using nlohmann::json;

RunRecord stored_run() {
  RunRecord run = testing::synthetic_run(7, 20000, 2.0);
  run.id = 7;
  return run;
}

TEST(BenchmarkExportTest, MatchesGoldenFiles) {
  testing::expect_golden("benchmark_smaller.json",
                         github_action_benchmark(stored_run(), Better::kLower).dump(2) + "\n");
  testing::expect_golden("benchmark_bigger.json",
                         github_action_benchmark(stored_run(), Better::kHigher).dump(2) + "\n");
}

// The action's custom tools read name, unit and a numeric value; range and extra are text.
TEST(BenchmarkExportTest, EveryEntryHasTheFieldsTheActionReads) {
  for (Better direction : {Better::kLower, Better::kHigher}) {
    json entries = github_action_benchmark(stored_run(), direction);
    ASSERT_FALSE(entries.empty());
    for (const json& e : entries) {
      EXPECT_TRUE(e["name"].is_string());
      EXPECT_TRUE(e["unit"].is_string());
      EXPECT_TRUE(e["value"].is_number());
      EXPECT_TRUE(e["range"].is_string());
      EXPECT_TRUE(e["extra"].is_string());
    }
  }
}

TEST(BenchmarkExportTest, OneDirectionPerFile) {
  json bigger = github_action_benchmark(stored_run(), Better::kHigher);
  ASSERT_EQ(bigger.size(), 1u);
  EXPECT_EQ(bigger[0]["name"], "hello throughput_rps");
  EXPECT_DOUBLE_EQ(bigger[0]["value"], 20000.0);  // the median kept iteration
  EXPECT_EQ(bigger[0]["range"], "\xC2\xB1 100.0");
  EXPECT_EQ(github_action_benchmark(stored_run(), Better::kLower).size(), 7u);
}

TEST(BenchmarkExportTest, MarksASaturatedRun) {
  RunRecord run = stored_run();
  run.saturation = {true, {"generator thread 0 at 97% of a core"}, {}};
  json entries = github_action_benchmark(run, Better::kHigher);
  EXPECT_NE(entries[0]["extra"].get<std::string>().find("saturated"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
