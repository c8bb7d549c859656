#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "perfgate/load/load_engine.h"

namespace perfgate {

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

/// Throws Error for a plan no engine can run (no threads, fewer connections
/// than threads, no iterations, a non-positive duration).
void check_plan(const LoadPlan& plan);

/// A load thread as run_load_threads() sees it: it measures into one
/// IterationStats per slot and publishes how many slots are final.
template <class W>
concept LoadThread = requires(W& w, const W& cw, std::chrono::steady_clock::time_point t0,
                              const std::atomic<bool>& flag) {
  w.run(t0, flag, flag);
  { cw.closed_slots() } -> std::convertible_to<int>;
  { cw.finished() } -> std::convertible_to<bool>;
  { cw.slot(0) } -> std::convertible_to<const IterationStats&>;
};

namespace detail {

// How often run()'s caller looks whether the threads have closed a window.
inline constexpr std::chrono::milliseconds kCallerTick{5};

// Waits until every thread has closed `slot`; false when one finished before
// that (stopped early) or failed, so the window is incomplete and not reported.
template <LoadThread W>
bool wait_for_slot(const std::vector<std::unique_ptr<W>>& workers, int slot,
                   const std::atomic<bool>& failed) {
  for (const auto& w : workers) {
    while (w->closed_slots() <= slot) {
      if (failed || (w->finished() && w->closed_slots() <= slot)) return false;
      std::this_thread::sleep_for(kCallerTick);
    }
  }
  return true;
}

template <LoadThread W>
IterationStats merge_slot(const std::vector<std::unique_ptr<W>>& workers, int slot) {
  IterationStats total;
  for (const auto& w : workers) total.merge(w->slot(slot));
  return total;
}

}  // namespace detail

/// Runs one thread per worker from one shared t0 (so that their windows line
/// up) and reports each iteration through `on_iteration` as soon as every
/// thread has closed it, while the next one is already being measured. The
/// workers were built on the caller's thread, so a setup failure is an Error
/// before any thread starts. A thread that throws (std::bad_alloc mid-run) stops
/// the others, and its exception is rethrown here once all have joined: thrown
/// out of a thread it would end the process in std::terminate, with no line
/// a user could act on.
template <LoadThread W>
LoadResult run_load_threads(std::vector<std::unique_ptr<W>>& workers, const LoadPlan& plan,
                            std::string engine, const std::atomic<bool>& stop,
                            const IterationCallback& on_iteration) {
  LoadResult result;
  result.engine = std::move(engine);
  result.threads = plan.threads;
  result.connections = plan.connections;
  // Set when the callback throws: the threads stop too.
  std::atomic<bool> abort{false};
  std::atomic<bool> failed{false};
  std::vector<std::exception_ptr> failures(workers.size());
  const auto t0 = std::chrono::steady_clock::now();
  if (plan.on_start) plan.on_start(t0);
  {
    std::vector<std::jthread> threads;
    try {
      for (size_t k = 0; k < workers.size(); ++k)
        threads.emplace_back([&, k] {
          try {
            workers[k]->run(t0, stop, abort);
          } catch (...) {
            failures[k] = std::current_exception();
            abort = true;
            failed = true;
          }
        });
      for (int i = 0; i < plan.iterations && detail::wait_for_slot(workers, i + 1, failed); ++i) {
        Iteration it;
        it.index = i;
        it.discarded = i < plan.discard;
        it.duration = plan.duration;
        it.stats = detail::merge_slot(workers, i + 1);
        it.target_rate = plan.rate;
        result.iterations.push_back(std::move(it));
        if (on_iteration) on_iteration(result.iterations.back());
      }
    } catch (...) {
      abort = true;
      throw;  // the jthreads join on the way out
    }
  }
  for (const auto& e : failures)
    if (e) std::rethrow_exception(e);
  result.warmup = detail::merge_slot(workers, 0);
  if constexpr (requires(const W& w) { w.in_flight(); }) {
    result.in_flight_at_end = 0;
    for (const auto& w : workers) *result.in_flight_at_end += w->in_flight();
  }
  return result;
}

}  // namespace perfgate
