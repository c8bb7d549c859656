#include "perfgate/store/run_figures.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "perfgate/core/error.h"
#include "perfgate/host/host_sampler.h"
#include "perfgate/store/run_record.h"

namespace perfgate {
namespace {

// ---- the packed form ---------------------------------------------------------
//
// 'F', then the number of metrics, then per metric: its code (1 + its place in
// kMetricCodes; 0 and the key's length and bytes for a key not listed), its
// shape ((values + 1, or 0 without a values entry) * 2 + 1 with a summary), the
// summary and the values. Varints are LEB128. A value is varint 2k when it is
// exactly k / 1e6 for a whole k (a latency from whole nanoseconds, a zero rate:
// 1 to 5 bytes), else varint 1 and its 8 bytes, little-endian.

constexpr char kFormatTag = 'F';

// Append only: a stored code means its place here for ever.
constexpr std::array<std::string_view, 10> kMetricCodes = {"throughput_rps",
                                                           "latency_p50_ms",
                                                           "latency_p75_ms",
                                                           "latency_p90_ms",
                                                           "latency_p99_ms",
                                                           "latency_p999_ms",
                                                           "latency_max_ms",
                                                           "error_rate_pct",
                                                           "service_cpu_us_per_request",
                                                           "requests_per_service_cpu_s"};

constexpr double kMicro = 1e6;
constexpr double kWholeBelow = 9007199254740992.0;  // 2^53: every whole double below is exact

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_value(std::string& out, double v) {
  if (std::isfinite(v) && v >= 0 && v * kMicro < kWholeBelow) {
    auto k = static_cast<uint64_t>(std::llround(v * kMicro));
    double back = static_cast<double>(k) / kMicro;
    if (std::bit_cast<uint64_t>(back) == std::bit_cast<uint64_t>(v)) {
      put_varint(out, k * 2);
      return;
    }
  }
  put_varint(out, 1);
  auto bits = std::bit_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void put_key(std::string& out, std::string_view key) {
  for (size_t i = 0; i < kMetricCodes.size(); ++i)
    if (kMetricCodes[i] == key) return put_varint(out, i + 1);
  put_varint(out, 0);
  put_varint(out, key.size());
  out.append(key);
}

class Reader {
 public:
  Reader(std::string_view bytes, std::string_view what) : bytes_(bytes), what_(what) {}
  bool done() const { return at_ == bytes_.size(); }
  uint8_t byte() {
    if (at_ >= bytes_.size()) damaged("cut short");
    return static_cast<uint8_t>(bytes_[at_++]);
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b = byte();
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    damaged("a number runs past 64 bits");
  }
  // A count of items of at least one byte each: never more than the bytes left.
  size_t count() {
    auto n = varint();
    if (n > bytes_.size() - at_) damaged("a count past its bytes");
    return static_cast<size_t>(n);
  }
  double value() {
    auto u = varint();
    if (u % 2 == 0) {
      if (u / 2 >= static_cast<uint64_t>(kWholeBelow)) damaged("a value out of range");
      return static_cast<double>(u / 2) / kMicro;
    }
    if (u != 1) damaged("an unknown value encoding");
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(byte()) << (8 * i);
    return std::bit_cast<double>(bits);
  }
  std::string key() {
    auto code = varint();
    if (code > kMetricCodes.size()) damaged("an unknown metric code");
    if (code > 0) return std::string(kMetricCodes[code - 1]);
    auto n = count();
    std::string key(bytes_.substr(at_, n));
    at_ += n;
    return key;
  }
  [[noreturn]] void damaged(std::string_view why) const {
    throw Error(std::string(what_) + ": stored figures are damaged (" + std::string(why) + ")");
  }

 private:
  std::string_view bytes_;
  std::string_view what_;
  size_t at_ = 0;
};

// The service's CPU figures as the store reads them back: one per iteration,
// or none (DetailReader keeps them only when every iteration has one).
std::vector<std::optional<double>> service_cpu_of(const RunRecord& run) {
  std::vector<std::optional<double>> cpu(run.service_cpu_s.begin(), run.service_cpu_s.end());
  if (cpu.empty()) cpu = service_cpu_by_iteration(run.host_samples_json, run.iterations.size());
  return cpu;
}

std::optional<double> computed_shared_cpu_pct(const RunRecord& run) {
  auto shares = shared_cpu_by_iteration(run.host_samples_json, run.iterations.size());
  double weighted = 0;
  int samples = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (!shares[i] || run.iterations[i].discarded) continue;
    weighted += shares[i]->shared_cpu_pct * shares[i]->samples;
    samples += shares[i]->samples;
  }
  if (samples == 0) return std::nullopt;
  return placing_share(weighted / samples, samples);
}

}  // namespace

RunFigures stored_run_figures(const RunRecord& run, int block) {
  return per_launch_figures(run.iterations, service_cpu_of(run), block);
}

std::optional<double> stored_shared_cpu_pct(const RunRecord& run) {
  return run.stored ? run.stored->shared_cpu_pct : computed_shared_cpu_pct(run);
}

StoredFigures compute_stored_figures(const RunRecord& run) {
  RunFigures all = stored_run_figures(run);
  StoredFigures out;
  out.figures.summary = std::move(all.summary);
  out.figures.values = std::move(all.values);
  out.shared_cpu_pct = computed_shared_cpu_pct(run);
  return out;
}

RunFigures run_figures_of(const RunRecord& run) {
  return run.stored ? run.stored->figures : compute_stored_figures(run).figures;
}

std::string pack_figures(const RunFigures& figures) {
  std::map<std::string_view, std::pair<const double*, const std::vector<double>*>> metrics;
  for (const auto& [key, value] : figures.summary) metrics[key].first = &value;
  for (const auto& [key, values] : figures.values) metrics[key].second = &values;
  std::string out(1, kFormatTag);
  put_varint(out, metrics.size());
  for (const auto& [key, parts] : metrics) {
    const auto& [summary, values] = parts;
    put_key(out, key);
    put_varint(out, (values ? values->size() + 1 : 0) * 2 + (summary ? 1 : 0));
    if (summary) put_value(out, *summary);
    if (values)
      for (double v : *values) put_value(out, v);
  }
  return out;
}

RunFigures unpack_figures(std::string_view bytes, std::string_view what) {
  Reader in(bytes, what);
  if (in.byte() != static_cast<uint8_t>(kFormatTag)) in.damaged("unknown format");
  RunFigures out;
  for (size_t n = in.count(); n > 0; --n) {
    auto key = in.key();
    auto shape = in.varint();
    if (shape / 2 > bytes.size()) in.damaged("a count past its bytes");
    if (shape % 2) out.summary[key] = in.value();
    if (shape / 2 == 0) continue;
    auto& values = out.values[key];
    for (auto k = shape / 2 - 1; k > 0; --k) values.push_back(in.value());
  }
  if (!in.done()) in.damaged("bytes after the last metric");
  return out;
}

}  // namespace perfgate
