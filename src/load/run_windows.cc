#include "perfgate/load/run_windows.h"

#include <algorithm>
#include <string>

#include "perfgate/core/error.h"

namespace perfgate {

std::vector<int> split_connections(int connections, int threads) {
  std::vector<int> shares(static_cast<size_t>(std::max(threads, 0)), 0);
  for (size_t i = 0; i < shares.size(); ++i)
    shares[i] = connections / threads + (static_cast<int>(i) < connections % threads ? 1 : 0);
  return shares;
}

void check_plan(const LoadPlan& plan) {
  if (plan.threads < 1) throw Error("load.threads must be at least 1");
  if (plan.connections < plan.threads)
    throw Error("load.connections (" + std::to_string(plan.connections) +
                ") must be at least load.threads (" + std::to_string(plan.threads) + ")");
  if (plan.iterations < 1) throw Error("repeat.count must be at least 1");
  if (plan.duration <= Nanos::zero()) throw Error("load.duration must be positive");
  if (plan.warmup < Nanos::zero()) throw Error("load.warmup must not be negative");
}

int RunWindows::slot_of(Nanos since_t0) const {
  if (since_t0 < warmup) return 0;
  int64_t whole = (since_t0 - warmup) / duration;
  return static_cast<int>(std::min<int64_t>(whole, iterations)) + 1;
}

}  // namespace perfgate
