#include "perfgate/report/gitlab_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/gate_result_builder.h"

namespace perfgate {
namespace {

using nlohmann::json;
using testing::NamedResult;

class GitlabReportGoldenTest : public ::testing::TestWithParam<NamedResult> {};

TEST_P(GitlabReportGoldenTest, MatchesGoldenFile) {
  testing::expect_golden("gitlab_" + GetParam().name + ".json",
                         gitlab_load_performance(GetParam().make()));
}

INSTANTIATE_TEST_SUITE_P(Cases, GitlabReportGoldenTest,
                         ::testing::ValuesIn(testing::report_cases()), testing::case_name);

// The fields GitLab's merge request widget reads, with the run's own values.
TEST(GitlabReportTest, CarriesTheWidgetFieldsWithTheRunsValues) {
  json j = json::parse(gitlab_load_performance(testing::pass_result()));
  EXPECT_DOUBLE_EQ(j["metrics"]["http_reqs"]["rate"], 20876.9);
  EXPECT_EQ(j["metrics"]["http_reqs"]["count"], 104384);
  EXPECT_DOUBLE_EQ(j["metrics"]["http_req_waiting"]["p(90)"], 1.404);
  EXPECT_EQ(j["metrics"]["checks"]["passes"], 3);
  EXPECT_EQ(j["metrics"]["checks"]["fails"], 0);
}

// The builder's results carry no histogram: p(95) is not gated, so not guessed.
TEST(GitlabReportTest, LeavesOutP95WithoutAHistogram) {
  json j = json::parse(gitlab_load_performance(testing::pass_result()));
  EXPECT_FALSE(j["metrics"]["http_req_waiting"].contains("p(95)"));
}

TEST(GitlabReportTest, TakesEveryPercentileFromTheKeptHistogram) {
  GateResult r = testing::pass_result();
  for (uint64_t ms = 1; ms <= 100; ++ms) r.totals.latency.record_ns(ms * 1'000'000);
  json waiting = json::parse(gitlab_load_performance(r))["metrics"]["http_req_waiting"];
  EXPECT_NEAR(waiting["p(95)"].get<double>(), 95, 0.5);
  EXPECT_NEAR(waiting["p(90)"].get<double>(), 90, 0.5);
  EXPECT_NEAR(waiting["avg"].get<double>(), 50.5, 0.01);
  EXPECT_DOUBLE_EQ(waiting["min"], 1.0);
  EXPECT_DOUBLE_EQ(waiting["max"], 100.0);
}

TEST(GitlabReportTest, CountsFailedChecks) {
  json checks = json::parse(gitlab_load_performance(testing::fail_result()))["metrics"]["checks"];
  EXPECT_EQ(checks["fails"], 2);
  EXPECT_EQ(checks["passes"], 1);  // the p99 warn is not a failure
}

TEST(GitlabReportTest, AnErrorHasNoFiguresAndOneFailedCheck) {
  json metrics = json::parse(gitlab_load_performance(testing::error_result()))["metrics"];
  EXPECT_FALSE(metrics.contains("http_reqs"));
  EXPECT_EQ(metrics["checks"]["fails"], 1);
}

}  // namespace
}  // namespace perfgate
