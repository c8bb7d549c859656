#include "perfgate/core/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

TEST(LatencyHistogramTest, EmptyHasZeroes) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min_ns(), 0u);
  EXPECT_EQ(h.max_ns(), 0u);
  EXPECT_EQ(h.percentile_ns(99), 0u);
  EXPECT_EQ(h.mean_ns(), 0.0);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 0; v < 128; ++v) h.record_ns(v);
  EXPECT_EQ(h.percentile_ns(50), 63u);
  EXPECT_EQ(h.min_ns(), 0u);
  EXPECT_EQ(h.max_ns(), 127u);
}

// The resolution promise: every value from 1 us to 100 s reads back within 1 %
// (a percentile reports its bucket's midpoint unless clamped to the exact min/max).
TEST(LatencyHistogramTest, RelativeErrorBoundAcrossRange) {
  double worst = 0;
  for (double step = 1000; step <= 100e9; step *= 1.013) {
    auto v = static_cast<double>(static_cast<uint64_t>(step));
    LatencyHistogram h;
    h.record_ns(1);
    h.record_ns(static_cast<uint64_t>(v));
    h.record_ns(static_cast<uint64_t>(v));
    h.record_ns(uint64_t{1} << 40);
    double got = static_cast<double>(h.percentile_ns(50));
    worst = std::max(worst, std::fabs(got - v) / v);
  }
  EXPECT_LT(worst, 0.01);
  EXPECT_LT(worst, 0.004);  // the design figure: half of 1/128
}

TEST(LatencyHistogramTest, BucketsTileTheRange) {
  for (size_t i = 0; i + 1 < LatencyHistogram::kBucketCount; ++i) {
    ASSERT_EQ(LatencyHistogram::bucket_high(i), LatencyHistogram::bucket_low(i + 1)) << i;
    ASSERT_EQ(LatencyHistogram::bucket_index(LatencyHistogram::bucket_low(i)), i);
  }
}

TEST(LatencyHistogramTest, HugeValuesClampButMaxStaysExact) {
  LatencyHistogram h;
  uint64_t year_ns = 365ull * 24 * 3600 * 1000000000ull;
  h.record_ns(year_ns);
  EXPECT_EQ(h.max_ns(), year_ns);
  EXPECT_EQ(h.percentile_ns(100), year_ns);
  EXPECT_EQ(h.percentile_ns(50), year_ns);  // clamped to [min, max]
}

TEST(LatencyHistogramTest, ExactCountMinMaxMean) {
  LatencyHistogram h;
  h.record(std::chrono::microseconds(100));
  h.record(std::chrono::microseconds(300));
  h.record(std::chrono::milliseconds(2));
  EXPECT_EQ(h.count(), 3u);
  EXPECT_EQ(h.min_ns(), 100000u);
  EXPECT_EQ(h.max_ns(), 2000000u);
  EXPECT_DOUBLE_EQ(h.mean_ns(), 800000.0);
}

TEST(LatencyHistogramTest, PercentilesFollowNearestRank) {
  LatencyHistogram h;
  for (int i = 1; i <= 1000; ++i) h.record(std::chrono::microseconds(i));
  EXPECT_NEAR(h.percentile_ns(50), 500000.0, 500000.0 * 0.004);
  EXPECT_NEAR(h.percentile_ns(90), 900000.0, 900000.0 * 0.004);
  EXPECT_NEAR(h.percentile_ns(99), 990000.0, 990000.0 * 0.004);
  EXPECT_NEAR(h.percentile_ns(99.9), 999000.0, 999000.0 * 0.004);
  EXPECT_EQ(h.percentile_ns(100), 1000000u);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingAllValuesInOne) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(13.0, 1.5);
  LatencyHistogram a, b, all;
  for (int i = 0; i < 20000; ++i) {
    auto v = static_cast<uint64_t>(dist(rng));
    (i % 3 ? a : b).record_ns(v);
    all.record_ns(v);
  }
  a.merge(b);
  EXPECT_EQ(a, all);
  for (double p : {50.0, 90.0, 99.0, 99.9, 99.99})
    EXPECT_EQ(a.percentile_ns(p), all.percentile_ns(p));
}

// Empty histograms hold no buckets until their first value (a failed window's,
// a default's): merged either way, cleared and compared, they are the same
// histogram as one that always had its buckets.
TEST(LatencyHistogramTest, AnEmptyHistogramMergesAndComparesLikeAnyOther) {
  LatencyHistogram values, empty, cleared;
  for (uint64_t v : {700ull, 90000ull, 3000000ull}) values.record_ns(v);
  cleared.record_ns(5);
  cleared.clear();
  EXPECT_EQ(cleared, empty);
  LatencyHistogram into_empty;
  into_empty.merge(values);
  EXPECT_EQ(into_empty, values);
  LatencyHistogram from_empty = values;
  from_empty.merge(empty);
  EXPECT_EQ(from_empty, values);
  EXPECT_EQ(from_empty.percentile_ns(50), values.percentile_ns(50));
  empty.merge(LatencyHistogram());
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.percentile_ns(99), 0u);
  EXPECT_EQ(empty.stdev_ns(), 0.0);
  empty.record_ns(700);
  EXPECT_EQ(empty.percentile_ns(99), 700u);
}

TEST(LatencyHistogramTest, SerializeRoundTrip) {
  LatencyHistogram h;
  for (uint64_t v : {5ull, 1000ull, 123456789ull, 99000000000ull}) h.record_ns(v);
  auto bytes = h.serialize();
  EXPECT_LT(bytes.size(), 64u);  // sparse: a few bytes per used bucket
  EXPECT_EQ(LatencyHistogram::deserialize(bytes), h);
  EXPECT_EQ(LatencyHistogram::deserialize(LatencyHistogram().serialize()), LatencyHistogram());
}

TEST(LatencyHistogramTest, DeserializeRejectsGarbage) {
  EXPECT_THROW(LatencyHistogram::deserialize("nope"), Error);
  LatencyHistogram h;
  h.record_ns(1000);
  auto bytes = h.serialize();
  EXPECT_THROW(LatencyHistogram::deserialize(bytes.substr(0, bytes.size() - 1)), Error);
}

TEST(LatencyHistogramTest, StdevAndWithinStdev) {
  LatencyHistogram h;
  for (int i = 0; i < 50; ++i) h.record_ns(1000);
  for (int i = 0; i < 50; ++i) h.record_ns(3000);
  EXPECT_NEAR(h.stdev_ns(), 1005.0, 15.0);
  EXPECT_NEAR(h.within_stdev_pct(), 100.0, 0.001);
}

}  // namespace
}  // namespace perfgate
