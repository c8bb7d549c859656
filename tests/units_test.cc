#include "perfgate/core/units.h"

#include <gtest/gtest.h>

namespace perfgate {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(UnitsTest, ParsesDurationsWithEveryUnit) {
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("10s"), seconds(10));
  EXPECT_EQ(parse_duration("2m"), minutes(2));
  EXPECT_EQ(parse_duration("1h"), hours(1));
  EXPECT_EQ(parse_duration("250us"), microseconds(250));
  EXPECT_EQ(parse_duration("75ns"), nanoseconds(75));
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1500));
  EXPECT_EQ(parse_duration("0.1s"), milliseconds(100));
  EXPECT_EQ(parse_duration("0"), seconds(0));
}

TEST(UnitsTest, BareNumbersAreSeconds) {
  EXPECT_EQ(parse_duration("3"), seconds(3));
  EXPECT_EQ(parse_duration("2.25"), milliseconds(2250));
}

TEST(UnitsTest, RejectsMalformedDurations) {
  for (const char* text : {"", "s", "-1s", "10 s", "10sec", "1.s", ".5s", "10.5.3", "1e3s", "ten",
                           "10S", "5d", "99999999999999999999h"})
    EXPECT_EQ(parse_duration(text), std::nullopt) << text;
}

TEST(UnitsTest, ParsesPercentages) {
  EXPECT_EQ(parse_percent("3%"), 3.0);
  EXPECT_EQ(parse_percent("0.1%"), 0.1);
  EXPECT_EQ(parse_percent("12"), 12.0);
  for (const char* text : {"", "%", "-3%", "3 %", "3%%", "three", "3pc"})
    EXPECT_EQ(parse_percent(text), std::nullopt) << text;
}

TEST(UnitsTest, FormatsTimeLikeWrk) {
  EXPECT_EQ(format_time_us(635.91), "635.91us");
  EXPECT_EQ(format_time_us(1234), "1.23ms");
  EXPECT_EQ(format_time_us(5000000), "5.00s");
  EXPECT_EQ(format_time_us(0), "0.00us");
  // wrk moves up a unit at 85 % of it, so 900us already reads as milliseconds.
  EXPECT_EQ(format_time_us(900), "0.90ms");
  EXPECT_EQ(format_time_us(849), "849.00us");
  EXPECT_EQ(format_time_us(120e6), "2.00m");
  // wrk's loop never reaches the last unit of a table: hours show as minutes.
  EXPECT_EQ(format_time_us(7200e6), "120.00m");
}

TEST(UnitsTest, FormatsBinaryLikeWrk) {
  EXPECT_EQ(format_binary(512), "512.00");
  EXPECT_EQ(format_binary(1288490), "1.23M");
  EXPECT_EQ(format_binary(2048), "2.00K");
  EXPECT_EQ(format_binary(900), "0.88K");
  EXPECT_EQ(format_binary(3.5 * 1024 * 1024 * 1024), "3.50G");
  EXPECT_EQ(format_binary(1024.0 * 1024 * 1024 * 1024 * 2048), "2048.00T");
}

TEST(UnitsTest, FormatsMetricLikeWrk) {
  EXPECT_EQ(format_metric(56200), "56.20k");
  EXPECT_EQ(format_metric(12.5), "12.50");
  EXPECT_EQ(format_metric(849), "849.00");
  EXPECT_EQ(format_metric(1.5e6), "1.50M");
  EXPECT_EQ(format_metric(2e9), "2.00G");
}

TEST(UnitsTest, FormatsCompactDurations) {
  EXPECT_EQ(format_duration(seconds(2)), "2s");
  EXPECT_EQ(format_duration(microseconds(1500)), "1.5ms");
  EXPECT_EQ(format_duration(microseconds(250)), "250us");
  EXPECT_EQ(format_duration(minutes(2)), "2m");
  EXPECT_EQ(format_duration(hours(3)), "3h");
  EXPECT_EQ(format_duration(seconds(90)), "90s");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(format_duration(nanoseconds(1'000'000'001)), "1.000000001s");
  EXPECT_EQ(format_duration(nanoseconds(42)), "42ns");
  EXPECT_EQ(format_duration(nanoseconds(0)), "0s");
  EXPECT_EQ(format_duration(milliseconds(-5)), "-5ms");
}

TEST(UnitsTest, CompactDurationsParseBack) {
  for (Nanos d : {Nanos(seconds(2)), Nanos(microseconds(1500)), Nanos(nanoseconds(1'234'567'891)),
                  Nanos(minutes(5)), Nanos(seconds(3601)), Nanos(nanoseconds(7))})
    EXPECT_EQ(parse_duration(format_duration(d)), d) << format_duration(d);
}

}  // namespace
}  // namespace perfgate
