#include "perfgate/core/checked.h"

#include <gtest/gtest.h>

#include <limits>

namespace perfgate {
namespace {

using std::chrono::hours;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(CheckedTest, MultipliesAndAddsOrSaysItDoesNotFit) {
  EXPECT_EQ(checked_multiply(3, 4), 12);
  EXPECT_EQ(checked_multiply(kMax, 2), std::nullopt);
  EXPECT_EQ(checked_multiply(-kMax, 2), std::nullopt);
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
}

TEST(CheckedTest, DaysPastNanosecondsRangeAreNoDuration) {
  // 200000 days * 24 h overflowed the nanosecond count: prune's cut-off landed
  // in the future and every run went.
  EXPECT_EQ(checked_duration(200'000, hours(24)), std::nullopt);
  EXPECT_EQ(checked_duration(106'751, hours(24)), Nanos(hours(24 * 106'751)));
  EXPECT_EQ(checked_duration(106'752, hours(24)), std::nullopt);
  EXPECT_EQ(checked_duration(-1, hours(24)), std::nullopt);
}

TEST(CheckedTest, SecondsBecomeNanosecondsOnlyWhenTheyFit) {
  EXPECT_EQ(checked_seconds(1.5L), Nanos(1'500'000'000));
  EXPECT_EQ(checked_seconds(0), Nanos(0));
  EXPECT_EQ(checked_seconds(9.3e9L), std::nullopt);
  EXPECT_EQ(checked_seconds(-1), std::nullopt);
  EXPECT_EQ(checked_seconds(std::numeric_limits<long double>::quiet_NaN()), std::nullopt);
  EXPECT_EQ(checked_seconds(std::numeric_limits<long double>::infinity()), std::nullopt);
}

TEST(CheckedTest, ScheduleTimesSaturateInsteadOfWrapping) {
  // 1e10 s is past int64_t nanoseconds; wrapped, it was a time before t0.
  EXPECT_EQ(saturated_seconds(1e10L), Nanos::max());
  EXPECT_EQ(saturated_seconds(std::numeric_limits<long double>::infinity()), Nanos::max());
  EXPECT_EQ(saturated_seconds(2), Nanos(2'000'000'000));
  EXPECT_EQ(saturated_seconds(-3), Nanos(0));
}

TEST(CheckedTest, RangesSayTheirLimitsInWords) {
  EXPECT_TRUE(kRequestRate.contains(0.001));
  EXPECT_TRUE(kRequestRate.contains(1e8));
  EXPECT_FALSE(kRequestRate.contains(1e-10));
  EXPECT_FALSE(kRequestRate.contains(5e-324));
  EXPECT_FALSE(kRequestRate.contains(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(kRequestRate.contains(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(kRequestRate.words(), "from 0.001 to 100000000 requests/s");
}

TEST(CheckedTest, NumbersInMessagesStayShort) {
  EXPECT_EQ(short_number(1e300), "1e+300");
  EXPECT_EQ(short_number(1e-10), "1e-10");
  EXPECT_EQ(short_number(12.5), "12.5");
  EXPECT_LE(short_number(-std::numeric_limits<double>::max()).size(), 20u);
}

}  // namespace
}  // namespace perfgate
