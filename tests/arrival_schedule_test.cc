#include "perfgate/load/arrival_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

using namespace std::chrono_literals;

TEST(ArrivalSchedule, SpreadsArrivalsEvenlyOverConnections) {
  ArrivalSchedule s(1000, 4);  // one request every ms overall, every 4 ms per connection
  EXPECT_EQ(s.interval(), 4ms);
  EXPECT_EQ(s.intended(0, 0), 0ms);
  EXPECT_EQ(s.intended(1, 0), 1ms);
  EXPECT_EQ(s.intended(3, 0), 3ms);
  EXPECT_EQ(s.intended(0, 1), 4ms);
  EXPECT_EQ(s.intended(2, 5), 22ms);
  // Merged over the connections, the arrivals are exactly 1 ms apart.
  std::vector<Nanos> all;
  for (int c = 0; c < 4; ++c)
    for (uint64_t k = 0; k < 25; ++k) all.push_back(s.intended(c, k));
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], Nanos(i * 1'000'000));
}

TEST(ArrivalSchedule, CountsWhatIsDueBeforeAMoment) {
  ArrivalSchedule s(1000, 4);
  EXPECT_EQ(s.due_before(0, 0ms), 0u);  // intended at 0: not strictly before 0
  EXPECT_EQ(s.due_before(0, 1ns), 1u);
  EXPECT_EQ(s.due_before(0, 4ms), 1u);     // 0 only; 4 ms is not before 4 ms
  EXPECT_EQ(s.due_before(1, 4ms), 1u);     // 1 ms
  EXPECT_EQ(s.due_before(1, 5001us), 2u);  // 1 ms and 5 ms
  EXPECT_EQ(s.due_before(3, 2ms), 0u);
  // Over all connections, 1 s at 1000/s is 1000 requests.
  uint64_t total = 0;
  for (int c = 0; c < 4; ++c) total += s.due_before(c, 1s);
  EXPECT_EQ(total, 1000u);
}

TEST(ArrivalSchedule, NeverDriftsOverLongRuns) {
  ArrivalSchedule s(333.3, 7);
  uint64_t total = 0;
  for (int c = 0; c < 7; ++c) total += s.due_before(c, 3600s);
  EXPECT_NEAR(static_cast<double>(total), 333.3 * 3600, 1);
}

TEST(ArrivalSchedule, LateMeansBeyondATenthOfAnIntervalOrOneMs) {
  EXPECT_EQ(ArrivalSchedule(10, 1).late_after(), 10ms);     // interval 100 ms
  EXPECT_EQ(ArrivalSchedule(100000, 1).late_after(), 1ms);  // interval 10 us
}

TEST(ArrivalSchedule, RejectsRatesAndConnectionsThatMakeNoSchedule) {
  EXPECT_THROW(ArrivalSchedule(0, 1), Error);
  EXPECT_THROW(ArrivalSchedule(-5, 1), Error);
  EXPECT_THROW(ArrivalSchedule(100, 0), Error);
}

TEST(ArrivalSchedule, RefusesRatesTooSlowToSchedule) {
  // 1e-10/s put the next request past int64_t nanoseconds: wrapped, it was due
  // before t0 and due_before() counted for ever; 5e-324 flooded the target.
  EXPECT_THROW(ArrivalSchedule(1e-10, 1), Error);
  EXPECT_THROW(ArrivalSchedule(5e-324, 1), Error);
}

TEST(ArrivalSchedule, TimesTooFarToCountSaturateAndCountingEnds) {
  ArrivalSchedule slowest(0.001, 1'000'000);  // each connection every 1e9 s
  EXPECT_EQ(slowest.intended(0, 100), Nanos::max());
  EXPECT_EQ(slowest.due_before(0, 24h), 1u);
  EXPECT_EQ(slowest.due_before(999'999, 24h), 0u);
}

}  // namespace
}  // namespace perfgate
