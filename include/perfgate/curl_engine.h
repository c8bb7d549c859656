#pragma once

#include <chrono>
#include <string_view>
#include <vector>

#include "perfgate/load_engine.h"

namespace perfgate {

/// The libcurl engine, closed model: `threads` threads, each driving its share
/// of `connections` keep-alive easy handles on its own multi handle. Serves
/// whatever libcurl serves (plain HTTP, HTTPS, HTTP/2).
class CurlEngine : public LoadEngine {
 public:
  std::string_view name() const override { return "curl"; }
  /// Throws Error for a plan it cannot run (open model, no connections) or when
  /// libcurl cannot be set up; request failures are counted, never thrown.
  LoadResult run(const LoadPlan& plan, const std::atomic<bool>& stop,
                 const IterationCallback& on_iteration) override;
};

/// One request with the engine's options; throws Error("cannot reach URL: why")
/// when no HTTP response (of any status) comes back within `timeout`.
void curl_probe(const TargetSpec& target, Nanos timeout);

/// Counts one failed transfer by kind, wrk's way: a CURLcode (an int here so
/// that this header needs no curl.h) -> connect, read, write, timeout or other.
void count_transfer_error(int curl_code, ErrorCounts& errors);

/// `connections` spread over `threads`, the remainder to the first ones:
/// 50 over 3 -> {17, 17, 16}.
std::vector<int> split_connections(int connections, int threads);

/// The consecutive windows of one run, all measured from one shared t0:
/// warm-up [0, warmup), then iteration i [warmup + i*duration, warmup + (i+1)*duration).
struct RunWindows {
  Nanos warmup{0};
  Nanos duration{0};
  int iterations = 0;

  /// Slot of a moment: 0 for the warm-up, i + 1 for iteration i, iterations + 1
  /// from the end on (too late to count).
  int slot_of(Nanos since_t0) const;
  /// Windows in a run, the warm-up included: the slots that hold figures.
  int slots() const { return iterations + 1; }
  Nanos end() const { return warmup + duration * iterations; }
};

}  // namespace perfgate
