#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace perfgate {

/// A fixed-size log-linear histogram of latencies in nanoseconds (the HdrHistogram
/// idea, simplified): values below 128 ns are exact, above that each power of two
/// is split into 128 linear buckets, so a reported value is within 0.4 % of the
/// recorded one from 1 ns to ~137 s (larger values are clamped to the top bucket,
/// min/max stay exact). Memory is fixed whatever the run length; histograms merge
/// exactly, so each load thread keeps its own and they are added after the join.
class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;  // 128
  static constexpr int kMaxExponent = 37;                                 // 2^37 ns ~ 137 s
  static constexpr size_t kBucketCount = kSubBuckets * (kMaxExponent - kSubBucketBits + 2);

  LatencyHistogram();

  void record(std::chrono::nanoseconds value);
  void record_ns(uint64_t value_ns);
  /// Adds every value of `other`, as if they had been recorded here.
  void merge(const LatencyHistogram& other);
  void clear();

  uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  uint64_t min_ns() const { return count_ ? min_ns_ : 0; }
  uint64_t max_ns() const { return max_ns_; }
  double mean_ns() const;
  /// From bucket midpoints (exact to the histogram's resolution).
  double stdev_ns() const;
  /// Value at quantile q in [0, 100] (percent); 0 when empty. The representative
  /// value of a bucket is its midpoint, clamped to the exact min and max.
  uint64_t percentile_ns(double percent) const;
  /// Percentage of recorded values within mean +/- one stdev (wrk's "+/- Stdev").
  double within_stdev_pct() const;

  /// Compact, versioned binary form for the store and shard files.
  std::string serialize() const;
  /// Throws perfgate::Error when the bytes are not a histogram of this format.
  static LatencyHistogram deserialize(const std::string& bytes);

  friend bool operator==(const LatencyHistogram& a, const LatencyHistogram& b);

  static size_t bucket_index(uint64_t value_ns);
  static uint64_t bucket_low(size_t index);
  static uint64_t bucket_high(size_t index);  // exclusive

 private:
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  uint64_t min_ns_ = UINT64_MAX;
  uint64_t max_ns_ = 0;
  // Exact sum for the mean: 128 bits never overflow for any realistic run.
  unsigned __int128 sum_ns_ = 0;
};

}  // namespace perfgate
