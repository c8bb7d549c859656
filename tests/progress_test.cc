#include "perfgate/gate/progress.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

namespace perfgate {
namespace {

using namespace std::chrono_literals;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

ProgressSnapshot snapshot() {
  ProgressSnapshot s;
  s.iteration = 3;
  s.total = 10;
  s.elapsed_s = 12.4;
  s.left_s = 28;
  s.rps = 20876.94;
  s.p99_ms = 2.0441;
  return s;
}

Iteration iteration(int index, uint64_t responses) {
  Iteration it;
  it.index = index;
  it.duration = 1s;
  it.stats.responses = responses;
  it.stats.latency.record_ns(2'000'000);
  return it;
}

TEST(ProgressTest, ClockText) {
  EXPECT_EQ(clock_text(0), "0:00");
  EXPECT_EQ(clock_text(65.4), "1:05");
  EXPECT_EQ(clock_text(3665), "1:01:05");
  EXPECT_EQ(clock_text(-3), "0:00");
}

TEST(ProgressTest, UtcTimestamp) {
  EXPECT_EQ(utc_timestamp(std::chrono::system_clock::from_time_t(1796000000)),
            "2026-11-30T00:53:20Z");
}

TEST(ProgressTest, LiveLine) {
  EXPECT_EQ(progress_line(snapshot(), false),
            "iteration 3/10  0:12 elapsed, 0:28 left  20876.9 req/s  p99 2.044 ms");
}

TEST(ProgressTest, LiveLineShowsErrorsAndDiscards) {
  ProgressSnapshot s = snapshot();
  s.errors = 4;
  s.discarded = true;
  EXPECT_EQ(progress_line(s, false),
            "iteration 3/10  0:12 elapsed, 0:28 left  20876.9 req/s  p99 2.044 ms  4 errors  "
            "(discarded)");
  EXPECT_NE(progress_line(s, true).find("\x1b[31m4 errors\x1b[0m"), std::string::npos);
}

TEST(ProgressTest, LogLine) {
  EXPECT_EQ(progress_log_line(snapshot(), "2026-11-30T00:52:23Z"),
            "2026-11-30T00:52:23Z iteration 3/10: 20876.9 req/s, p99 2.044 ms, 0 errors, "
            "0:12 elapsed, 0:28 left");
}

TEST(ProgressTest, StyleFollowsTheTerminalAndNoColor) {
  EXPECT_TRUE(progress_style(true, env_of({})).color);
  EXPECT_FALSE(progress_style(true, env_of({{"NO_COLOR", "1"}})).color);
  EXPECT_TRUE(progress_style(true, env_of({{"NO_COLOR", ""}})).color);  // no-color.org: non-empty
  EXPECT_FALSE(progress_style(false, env_of({})).color);
  EXPECT_FALSE(progress_style(false, env_of({})).live);
}

TEST(ProgressTest, SnapshotOfAnIteration) {
  ProgressSnapshot s = snapshot_of(iteration(2, 5000), 10, 13s, 12s);
  EXPECT_EQ(s.iteration, 3);
  EXPECT_DOUBLE_EQ(s.rps, 5000);
  EXPECT_NEAR(s.p99_ms, 2.0, 0.01);
  EXPECT_DOUBLE_EQ(s.left_s, 0);  // late runs never count down below zero
}

TEST(ProgressTest, PrintsLogLinesWhenNotATerminal) {
  std::ostringstream out;
  auto now = std::chrono::steady_clock::time_point{};
  Progress progress(
      out, {false, false}, 2, 4s, [&] { return now; },
      [] { return std::chrono::system_clock::from_time_t(1796000000); });
  now += 3s;
  progress.on_iteration(iteration(0, 100));
  progress.finish();
  EXPECT_EQ(out.str(),
            "2026-11-30T00:53:20Z iteration 1/2: 100.0 req/s, p99 2.000 ms, 0 errors, 0:03 "
            "elapsed, 0:01 left\n");
}

TEST(ProgressTest, RewritesOneLineOnATerminal) {
  std::ostringstream out;
  auto now = std::chrono::steady_clock::time_point{};
  Progress progress(out, {true, false}, 2, 4s, [&] { return now; });
  progress.on_iteration(iteration(0, 10000));
  progress.on_iteration(iteration(1, 1));
  progress.finish();
  std::string text = out.str();
  EXPECT_EQ(text.front(), '\r');
  EXPECT_EQ(text.find('\n'), text.size() - 1);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  // The shorter second line blanks what is left of the first.
  EXPECT_NE(text.find("p99 2.000 ms    \n"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
