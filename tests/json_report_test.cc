#include "perfgate/report/json_report.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "perfgate/report/console_report.h"
#include "perfgate/report/markdown_report.h"
#include "support/gate_result_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using nlohmann::json;
using testing::NamedResult;

testing::CommandResult validate(const json& document) {
  testing::TempDir dir;
  testing::write_file(dir / "result.json", document.dump(2));
  return testing::validate_result_json(dir / "result.json");
}

class JsonReportGoldenTest : public ::testing::TestWithParam<NamedResult> {};

TEST_P(JsonReportGoldenTest, MatchesGoldenFile) {
  testing::expect_golden("result_" + GetParam().name + ".json",
                         json_report(GetParam().make()).dump(2) + "\n");
}

TEST_P(JsonReportGoldenTest, IsValidAgainstTheSchema) {
  auto check = validate(json_report(GetParam().make()));
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

INSTANTIATE_TEST_SUITE_P(Cases, JsonReportGoldenTest, ::testing::ValuesIn(testing::report_cases()),
                         testing::case_name);

TEST(JsonReportTest, HasEveryContractField) {
  json j = json_report(testing::pass_result());
  for (const char* key : {"verdict", "exit_code", "metrics", "saturation", "host", "run_id"})
    EXPECT_TRUE(j.contains(key)) << key;
  for (const char* metric : {"throughput_rps", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms",
                             "latency_p999_ms", "latency_max_ms", "error_rate_pct"})
    for (const char* key : {"value", "baseline", "change_pct", "verdict"})
      EXPECT_TRUE(j["metrics"][metric].contains(key)) << metric << "." << key;
  EXPECT_TRUE(j["saturation"].contains("saturated"));
  EXPECT_TRUE(j["saturation"].contains("reasons"));
  EXPECT_TRUE(j["host"]["key"].is_string());
  EXPECT_EQ(j["host"]["os"], "Debian GNU/Linux 12 (bookworm)");
}

TEST(JsonReportTest, VerdictAndExitCodeFollowTheContract) {
  EXPECT_EQ(json_report(testing::pass_result())["verdict"], "pass");
  EXPECT_EQ(json_report(testing::fail_result())["exit_code"], 1);
  EXPECT_EQ(json_report(testing::warn_result())["exit_code"], 2);
  json error = json_report(testing::error_result());
  EXPECT_EQ(error["verdict"], "error");
  EXPECT_EQ(error["exit_code"], 3);
  EXPECT_TRUE(error["error"].is_string());
  EXPECT_TRUE(error["run_id"].is_null());
  EXPECT_TRUE(json_report(testing::pass_result())["error"].is_null());
}

TEST(JsonReportTest, MissingBaselineIsNull) {
  json j = json_report(testing::no_baseline_result());
  EXPECT_TRUE(j["baseline"].is_null());
  EXPECT_TRUE(j["metrics"]["latency_p99_ms"]["baseline"].is_null());
  EXPECT_TRUE(j["metrics"]["latency_p99_ms"]["change_pct"].is_null());
  EXPECT_EQ(j["run_id"], 1);
}

TEST(JsonReportTest, ThresholdsHoldOnlyTheLimitsSet) {
  json metrics = json_report(testing::pass_result())["metrics"];
  EXPECT_EQ(metrics["latency_p99_ms"]["thresholds"],
            json({{"warn_pct", 25.0}, {"fail_pct", 50.0}, {"max", 50.0}}));
  EXPECT_EQ(metrics["error_rate_pct"]["thresholds"], json({{"max", 0.1}}));
  EXPECT_EQ(metrics["latency_p50_ms"]["thresholds"], json::object());
  EXPECT_FALSE(metrics["latency_p50_ms"]["gated"].get<bool>());
}

TEST(JsonReportTest, MetricsJsonIsTheReportsMetricsObject) {
  GateResult r = testing::fail_result();
  EXPECT_EQ(metrics_json(r.checks), json_report(r)["metrics"]);
}

// Invalid UTF-8 would make dump() throw in the CLI; it is replaced instead.
TEST(JsonReportTest, HostileTextStillSerializes) {
  GateResult r = testing::hostile_result();
  std::string text;
  ASSERT_NO_THROW(text = json_report(r).dump());
  json back = json::parse(text);
  EXPECT_TRUE(back["profile"]["name"].get<std::string>().starts_with("shop <&\"'|>"));
  EXPECT_NE(back["profile"]["name"].get<std::string>().find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(JsonReportTest, FiguresThatCannotBeComputedAreNull) {
  GateResult r = testing::pass_result();
  r.checks.front().value = std::numeric_limits<double>::quiet_NaN();
  json j = json_report(r);
  EXPECT_TRUE(j["metrics"]["throughput_rps"]["value"].is_null());
  auto check = validate(j);
  EXPECT_EQ(check.exit_code, 0) << check.out;
}

// The schema test is only worth something if the schema rejects what breaks the contract.
TEST(JsonReportTest, SchemaRejectsABrokenResult) {
  json j = json_report(testing::fail_result());
  j["exit_code"] = 0;  // a fail that exits 0
  EXPECT_NE(validate(j).exit_code, 0);
  j = json_report(testing::pass_result());
  j["metrics"].erase("latency_p99_ms");
  EXPECT_NE(validate(j).exit_code, 0);
  j = json_report(testing::pass_result());
  j["verdict"] = "maybe";
  EXPECT_NE(validate(j).exit_code, 0);
}

}  // namespace
}  // namespace perfgate

namespace perfgate {
namespace {

// Issue 48, item 3: "change" is one thing everywhere, the contract's
// (value - baseline) / baseline; the test's estimate is shown as the estimate.
// (The HTML report computes the same ratio from the stored figures.)
TEST(ChangeEverywhereTest, ChangeIsTheFiguresRatioAndTheEstimateIsLabelled) {
  GateResult r = testing::pass_result();
  MetricCheck* c = nullptr;
  for (auto& check : r.checks)
    if (check.metric == "throughput_rps") c = &check;
  ASSERT_TRUE(c && c->baseline && c->test);
  c->value = 9020;
  c->baseline = 10000;
  c->change_pct = -9.8;
  c->test->estimate_pct = 1.1;  // a median of pairs the pooled figures disagree with
  auto doc = json_report(r);
  EXPECT_DOUBLE_EQ(doc["metrics"]["throughput_rps"]["change_pct"].get<double>(), -9.8);
  EXPECT_DOUBLE_EQ(doc["metrics"]["throughput_rps"]["test"]["estimate_pct"].get<double>(), 1.1);
  std::string console = console_report(r);
  auto row = console.substr(console.find("  throughput_rps"));
  row = row.substr(0, row.find('\n'));
  EXPECT_NE(row.find("  -9.8%     +1.1%  "), std::string::npos) << console;
  EXPECT_NE(console.find("  change  estimate  "), std::string::npos) << console;
  std::string md = markdown_report(r);
  EXPECT_NE(md.find("| throughput_rps | 10000.0 | 9020.0 | -9.8% | +1.1% | "), std::string::npos)
      << md;
}

}  // namespace
}  // namespace perfgate
