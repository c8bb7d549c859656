#include "perfgate/verdict.h"

#include <gtest/gtest.h>

namespace perfgate {
namespace {

MetricSet metrics(double rps, double p99_ms, double err_pct = 0) {
  MetricSet m;
  m["throughput_rps"] = rps;
  m["latency_p99_ms"] = p99_ms;
  m["error_rate_pct"] = err_pct;
  return m;
}

ThresholdSet limits() {
  ThresholdSet t;
  t["throughput_rps"].warn_pct = 3;
  t["throughput_rps"].fail_pct = 5;
  t["latency_p99_ms"].warn_pct = 10;
  t["latency_p99_ms"].fail_pct = 20;
  t["latency_p99_ms"].max = 50;
  t["error_rate_pct"].max = 0.1;
  return t;
}

const MetricCheck& check(const Judgement& j, const std::string& key) {
  for (const auto& c : j.checks)
    if (c.metric == key) return c;
  throw std::runtime_error("no check " + key);
}

TEST(VerdictTest, NoBaselinePassesWithAbsoluteLimitsOnly) {
  auto j = judge(metrics(1000, 10), nullptr, limits(), {});
  EXPECT_EQ(j.verdict, Verdict::kPass);
  EXPECT_FALSE(check(j, "throughput_rps").baseline);
  EXPECT_NE(check(j, "throughput_rps").message.find("no baseline"), std::string::npos);
}

TEST(VerdictTest, AbsoluteMaxFailsWithoutBaseline) {
  auto j = judge(metrics(1000, 62.5), nullptr, limits(), {});
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_EQ(check(j, "latency_p99_ms").verdict, Verdict::kFail);
  EXPECT_NE(check(j, "latency_p99_ms").message.find("above the max 50.000 ms"), std::string::npos);
}

TEST(VerdictTest, ThroughputDropBands) {
  auto base = metrics(1000, 10);
  EXPECT_EQ(judge(metrics(980, 10), &base, limits(), {}).verdict, Verdict::kPass);  // -2%
  EXPECT_EQ(judge(metrics(960, 10), &base, limits(), {}).verdict, Verdict::kWarn);  // -4%
  auto j = judge(metrics(940, 10), &base, limits(), {});                            // -6%
  EXPECT_EQ(j.verdict, Verdict::kFail);
  EXPECT_NEAR(*check(j, "throughput_rps").change_pct, -6.0, 1e-9);
  EXPECT_NE(check(j, "throughput_rps").message.find("fail limit -5%"), std::string::npos);
}

TEST(VerdictTest, ImprovementsNeverFail) {
  auto base = metrics(1000, 10);
  auto j = judge(metrics(2000, 5), &base, limits(), {});
  EXPECT_EQ(j.verdict, Verdict::kPass);
  EXPECT_NEAR(*check(j, "latency_p99_ms").change_pct, -50.0, 1e-9);
}

TEST(VerdictTest, LatencyGrowthBands) {
  auto base = metrics(1000, 10);
  EXPECT_EQ(judge(metrics(1000, 11.5), &base, limits(), {}).verdict, Verdict::kWarn);
  EXPECT_EQ(judge(metrics(1000, 12.5), &base, limits(), {}).verdict, Verdict::kFail);
}

TEST(VerdictTest, ZeroBaselineHasNoRelativeChange) {
  auto base = metrics(1000, 10, 0);
  auto j = judge(metrics(1000, 10, 0.05), &base, limits(), {});
  EXPECT_FALSE(check(j, "error_rate_pct").change_pct);
  EXPECT_EQ(j.verdict, Verdict::kPass);
  EXPECT_EQ(judge(metrics(1000, 10, 0.5), &base, limits(), {}).verdict, Verdict::kFail);
}

TEST(VerdictTest, UngatedMetricsAreReportedNotJudged) {
  auto now = metrics(1000, 10);
  now["latency_p50_ms"] = 99;
  auto base = now;
  base["latency_p50_ms"] = 1;
  auto j = judge(now, &base, limits(), {});
  EXPECT_FALSE(check(j, "latency_p50_ms").gated);
  EXPECT_EQ(check(j, "latency_p50_ms").verdict, Verdict::kPass);
  EXPECT_EQ(j.verdict, Verdict::kPass);
}

TEST(VerdictTest, SaturationTurnsFailIntoWarnThatSaysWhy) {
  auto base = metrics(1000, 10);
  Saturation s{true, {"generator thread 0 at 97% of a core"}};
  auto j = judge(metrics(500, 10), &base, limits(), s);
  EXPECT_EQ(j.verdict, Verdict::kWarn);
  const auto& c = check(j, "throughput_rps");
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_NE(c.message.find("saturated"), std::string::npos);
  EXPECT_NE(c.message.find("97%"), std::string::npos);
  ASSERT_FALSE(j.notes.empty());
}

TEST(VerdictTest, SaturatedPassIsStillInconclusive) {
  Saturation s{true, {"steal 12%"}};
  EXPECT_EQ(judge(metrics(1000, 10), nullptr, limits(), s).verdict, Verdict::kWarn);
}

TEST(VerdictTest, ExitCodesAndOrdering) {
  EXPECT_EQ(to_int(exit_status_of(Verdict::kPass)), 0);
  EXPECT_EQ(to_int(exit_status_of(Verdict::kFail)), 1);
  EXPECT_EQ(to_int(exit_status_of(Verdict::kWarn)), 2);
  EXPECT_EQ(to_int(exit_status_of(Verdict::kError)), 3);
  EXPECT_EQ(worst(Verdict::kWarn, Verdict::kFail), Verdict::kFail);
  EXPECT_EQ(worst(Verdict::kError, Verdict::kFail), Verdict::kError);
  EXPECT_EQ(to_string(Verdict::kWarn), "warn");
}

}  // namespace
}  // namespace perfgate
