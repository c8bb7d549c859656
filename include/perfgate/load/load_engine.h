#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/core/load_result.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

/// What to run: one request shape, the load shape, and the timed windows.
struct LoadPlan {
  TargetSpec target;
  std::vector<TargetSpec> mix;  // weighted request mix; empty = `target` alone
  int threads = 1;
  int connections = 1;
  Nanos warmup{0};
  Nanos duration = std::chrono::seconds(1);
  int iterations = 1;
  int discard = 0;
  double rate = 0;  // 0 = closed model
  Nanos timeout = std::chrono::seconds(5);
  Nanos connect_timeout = std::chrono::seconds(2);
  /// Called once with the run's t0, before the first request: the warm-up is
  /// [t0, t0 + warmup) and iteration i starts at t0 + warmup + i * duration, so
  /// a caller can read other counters (the service's CPU) at the very edges.
  std::function<void(std::chrono::steady_clock::time_point)> on_start;
};

LoadPlan plan_from_profile(const Profile& profile);

/// The least memory the engines hold for `plan` before its first request: per
/// thread, a window's figures (two latency histograms) for every window of the
/// run and a read buffer; the run's merged windows; each request's bytes once.
/// A floor, not an estimate (socket buffers, libcurl's and the connections'
/// own state come on top), so that a plan refused for it surely could not run.
/// What the native engine reads into, a buffer per thread.
inline constexpr size_t kNativeReadBufferBytes = 64 * 1024;

struct LoadMemoryFloor {
  uint64_t per_window_bytes = 0;  // one window's figures
  uint64_t windows = 0;           // held at once, over all threads and the merged run
  uint64_t other_bytes = 0;       // read buffers and request bytes
  uint64_t total() const { return per_window_bytes * windows + other_bytes; }
};
LoadMemoryFloor load_memory_floor(const LoadPlan& plan);

/// Called after each timed iteration ends, from the engine's calling thread.
using IterationCallback = std::function<void(const Iteration&)>;

/// A load generator. run() warms up, then measures `iterations` consecutive
/// windows of `duration` over the same keep-alive connections; it always ends
/// by itself at warmup + iterations * duration (plus at most one poll interval),
/// or earlier when `stop` becomes true.
class LoadEngine {
 public:
  virtual ~LoadEngine() = default;
  virtual std::string_view name() const = 0;
  virtual LoadResult run(const LoadPlan& plan, const std::atomic<bool>& stop,
                         const IterationCallback& on_iteration) = 0;
};

/// "auto", "curl" or "native" for every request of the plan (its mix, or its
/// target). "auto" picks the native engine when it can serve them all (see
/// native_engine_refusal()), curl otherwise. Throws Error for an unknown kind,
/// a URL that is neither http:// nor https://, or "native" where it cannot serve.
std::unique_ptr<LoadEngine> make_load_engine(std::string_view kind, const LoadPlan& plan);
/// The same for a plan of `target` alone.
std::unique_ptr<LoadEngine> make_load_engine(std::string_view kind, const TargetSpec& target);

/// No connection could be made to the target: nothing listens there. Its own
/// type, so that the caller who knows whether perfgate starts the service can
/// say what to do about it.
class NothingListening : public Error {
 public:
  using Error::Error;
};

/// Sends one request and throws Error("cannot reach URL: ...") when no HTTP
/// response comes back (NothingListening when no connection is made), so that
/// an unreachable target is an error (exit 3) and not a 100 % error rate.
void probe_target(const TargetSpec& target, Nanos timeout);

/// True when the native engine can serve `target`: plain http:// and HTTP/1.1.
bool native_engine_serves(const TargetSpec& target);

/// Why the native engine cannot run these requests, "" when it can: each must
/// be plain http:// HTTP/1.1, and all on one host and port (it resolves one
/// address per run, as wrk). Proxies never apply: neither engine uses one.
std::string native_engine_refusal(const std::vector<TargetSpec>& requests);

/// The request shapes of a plan: its mix, or its target alone.
std::vector<TargetSpec> requests_of(const LoadPlan& plan);

/// nginx's smooth weighted round-robin: deterministic, and each entry's picks
/// spread evenly over the sequence (weights {5, 1, 1} -> 0 0 1 0 2 0 0, again).
/// Each connection keeps its own, so every connection sends the mix.
class WeightedRoundRobin {
 public:
  /// Throws Error unless every weight is positive.
  explicit WeightedRoundRobin(const std::vector<TargetSpec>& entries);
  /// Index of the entry to send next.
  size_t next();

 private:
  std::vector<double> weights_;
  std::vector<double> current_;
  double total_ = 0;
};

}  // namespace perfgate
