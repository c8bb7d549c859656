#pragma once

// What the curl and native engine tests share: a short plan, demo-server dials
// and the totals of a run. Both engines are held to the same checks with them.

#include <chrono>
#include <string>

#include "perfgate/demo_server.h"
#include "perfgate/load_engine.h"

namespace perfgate::testing {

/// Short windows: the tests check counts and relations, never speed.
inline LoadPlan plan_for(const std::string& url) {
  using namespace std::chrono_literals;
  LoadPlan plan;
  plan.target.url = url;
  plan.threads = 2;
  plan.connections = 4;
  plan.warmup = 200ms;
  plan.duration = 300ms;
  plan.iterations = 3;
  plan.discard = 1;
  plan.timeout = 5s;
  return plan;
}

/// Demo server options set by `set`, in one expression.
template <typename Set>
DemoServerOptions dials(Set set) {
  DemoServerOptions options;
  set(options);
  return options;
}

/// Every response of a run, warm-up included.
inline IterationStats everything(const LoadResult& result) {
  IterationStats total = result.warmup;
  for (const auto& it : result.iterations) total.merge(it.stats);
  return total;
}

}  // namespace perfgate::testing
