#include "perfgate/core/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

constexpr char kMagic[4] = {'P', 'G', 'H', '1'};

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Reads one varint at `pos`; throws on truncated or over-long input.
uint64_t get_varint(const std::string& in, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) throw Error("latency histogram: truncated data");
    auto byte = static_cast<uint8_t>(in[pos++]);
    v |= uint64_t{byte & 0x7fu} << shift;
    if (!(byte & 0x80)) return v;
  }
  throw Error("latency histogram: malformed number");
}

uint64_t midpoint(size_t index) {
  return (LatencyHistogram::bucket_low(index) + LatencyHistogram::bucket_high(index) - 1) / 2;
}

void allocate(std::vector<uint64_t>& buckets) {
  if (buckets.empty()) buckets.assign(LatencyHistogram::kBucketCount, 0);
}

}  // namespace

// The buckets are allocated at the first value: an empty histogram (a window
// that only failed, a default value) costs no 32 KiB to make, copy or merge.
LatencyHistogram::LatencyHistogram() = default;

size_t LatencyHistogram::bucket_index(uint64_t value_ns) {
  if (value_ns < kSubBuckets) return static_cast<size_t>(value_ns);
  int exponent = 63 - std::countl_zero(value_ns);
  if (exponent > kMaxExponent) return kBucketCount - 1;  // clamped; max stays exact
  int shift = exponent - kSubBucketBits;
  uint64_t sub = (value_ns >> shift) - kSubBuckets;
  return static_cast<size_t>(kSubBuckets + static_cast<uint64_t>(shift) * kSubBuckets + sub);
}

uint64_t LatencyHistogram::bucket_low(size_t index) {
  if (index < kSubBuckets) return index;
  uint64_t shift = (index - kSubBuckets) / kSubBuckets;
  uint64_t sub = (index - kSubBuckets) % kSubBuckets;
  return (kSubBuckets + sub) << shift;
}

uint64_t LatencyHistogram::bucket_high(size_t index) {
  if (index < kSubBuckets) return index + 1;
  uint64_t shift = (index - kSubBuckets) / kSubBuckets;
  return bucket_low(index) + (uint64_t{1} << shift);
}

void LatencyHistogram::record(std::chrono::nanoseconds value) {
  record_ns(value.count() < 0 ? 0 : static_cast<uint64_t>(value.count()));
}

void LatencyHistogram::record_ns(uint64_t value_ns) {
  allocate(buckets_);
  ++buckets_[bucket_index(value_ns)];
  ++count_;
  min_ns_ = std::min(min_ns_, value_ns);
  max_ns_ = std::max(max_ns_, value_ns);
  sum_ns_ += value_ns;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (!other.buckets_.empty()) {
    allocate(buckets_);
    for (size_t i = 0; i < kBucketCount; ++i) buckets_[i] += other.buckets_[i];
  }
  count_ += other.count_;
  min_ns_ = std::min(min_ns_, other.min_ns_);
  max_ns_ = std::max(max_ns_, other.max_ns_);
  sum_ns_ += other.sum_ns_;
}

void LatencyHistogram::clear() {
  *this = LatencyHistogram();
}

double LatencyHistogram::mean_ns() const {
  return count_ ? static_cast<double>(sum_ns_) / static_cast<double>(count_) : 0.0;
}

double LatencyHistogram::stdev_ns() const {
  if (count_ < 2) return 0.0;
  double mean = mean_ns();
  long double squares = 0;
  for (size_t i = 0; i < kBucketCount; ++i) {
    if (!buckets_[i]) continue;
    double d = static_cast<double>(midpoint(i)) - mean;
    squares += static_cast<long double>(d * d) * buckets_[i];
  }
  return std::sqrt(static_cast<double>(squares / (count_ - 1)));
}

double LatencyHistogram::within_stdev_pct() const {
  if (!count_) return 0.0;
  double mean = mean_ns(), sd = stdev_ns();
  uint64_t within = 0;
  for (size_t i = 0; i < kBucketCount; ++i) {
    auto mid = static_cast<double>(midpoint(i));
    if (buckets_[i] && mid >= mean - sd && mid <= mean + sd) within += buckets_[i];
  }
  return 100.0 * static_cast<double>(within) / static_cast<double>(count_);
}

uint64_t LatencyHistogram::percentile_ns(double percent) const {
  if (!count_) return 0;
  if (percent >= 100.0) return max_ns_;
  // The nearest-rank definition: the smallest value with at least p% at or below it.
  auto rank = static_cast<uint64_t>(std::ceil(percent / 100.0 * static_cast<double>(count_)));
  rank = std::max<uint64_t>(rank, 1);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBucketCount; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::clamp(midpoint(i), min_ns_, max_ns_);
  }
  return max_ns_;
}

std::string LatencyHistogram::serialize() const {
  std::string out(kMagic, sizeof kMagic);
  put_varint(out, count_);
  put_varint(out, min_ns());
  put_varint(out, max_ns_);
  put_varint(out, static_cast<uint64_t>(sum_ns_));
  put_varint(out, static_cast<uint64_t>(sum_ns_ >> 64));
  size_t previous = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (!buckets_[i]) continue;
    put_varint(out, i - previous);  // deltas keep sparse histograms small
    put_varint(out, buckets_[i]);
    previous = i;
  }
  return out;
}

LatencyHistogram LatencyHistogram::deserialize(const std::string& bytes) {
  if (bytes.size() < sizeof kMagic || !std::equal(kMagic, kMagic + 4, bytes.begin()))
    throw Error("latency histogram: unknown format");
  LatencyHistogram h;
  size_t pos = sizeof kMagic;
  uint64_t count = get_varint(bytes, pos);
  uint64_t min = get_varint(bytes, pos);
  h.max_ns_ = get_varint(bytes, pos);
  uint64_t sum_lo = get_varint(bytes, pos);
  uint64_t sum_hi = get_varint(bytes, pos);
  h.sum_ns_ = (static_cast<unsigned __int128>(sum_hi) << 64) | sum_lo;
  size_t index = 0;
  uint64_t total = 0;
  while (pos < bytes.size()) {
    index += get_varint(bytes, pos);
    if (index >= kBucketCount) throw Error("latency histogram: bucket out of range");
    allocate(h.buckets_);
    h.buckets_[index] = get_varint(bytes, pos);
    total += h.buckets_[index];
  }
  if (total != count) throw Error("latency histogram: counts do not add up");
  h.count_ = count;
  h.min_ns_ = count ? min : UINT64_MAX;
  return h;
}

bool operator==(const LatencyHistogram& a, const LatencyHistogram& b) {
  return a.count_ == b.count_ && a.min_ns() == b.min_ns() && a.max_ns_ == b.max_ns_ &&
         a.sum_ns_ == b.sum_ns_ && (a.count_ == 0 || a.buckets_ == b.buckets_);
}

}  // namespace perfgate
