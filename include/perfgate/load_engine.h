#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string_view>

#include "perfgate/load_result.h"
#include "perfgate/profile.h"

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
};

LoadPlan plan_from_profile(const Profile& profile);

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

/// "auto", "curl" or "native"; throws Error for a kind that cannot serve the URL.
std::unique_ptr<LoadEngine> make_load_engine(std::string_view kind, const TargetSpec& target);

/// Sends one request and throws Error("cannot reach URL: Connection refused")
/// when no HTTP response comes back, so that an unreachable target is an error
/// (exit 3) and not a 100 % error rate.
void probe_target(const TargetSpec& target, Nanos timeout);

}  // namespace perfgate
