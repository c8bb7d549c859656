// LatencyHistogram::deserialize() on arbitrary bytes (a damaged store or shard
// file): it may throw perfgate::Error; what it accepts must behave and round-trip.
#include <cstddef>
#include <cstdint>
#include <string>

#include "perfgate/core/error.h"
#include "perfgate/core/latency_histogram.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    auto h = perfgate::LatencyHistogram::deserialize(bytes);
    (void)h.percentile_ns(99.9);
    (void)h.mean_ns();
    (void)h.stdev_ns();
    (void)h.within_stdev_pct();
    auto again = perfgate::LatencyHistogram::deserialize(h.serialize());
    if (!(again == h)) __builtin_trap();
    h.merge(again);
  } catch (const perfgate::Error&) {
  }
  return 0;
}
