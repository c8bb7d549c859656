#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/latency_histogram.h"
#include "perfgate/core/units.h"

namespace perfgate {

/// Socket-level failures, counted by kind as wrk does; never thrown.
struct ErrorCounts {
  uint64_t connect = 0;
  uint64_t read = 0;  // reset, closed early, malformed response
  uint64_t write = 0;
  uint64_t timeout = 0;
  uint64_t other = 0;

  uint64_t total() const { return connect + read + write + timeout + other; }
  void merge(const ErrorCounts& o);
  friend bool operator==(const ErrorCounts&, const ErrorCounts&) = default;
};

/// Responses by status class: index 1 for 1xx ... 5 for 5xx, 0 for anything else.
struct StatusCounts {
  std::array<uint64_t, 6> by_class{};

  void count(int status_code);
  uint64_t of_class(int cls) const { return by_class.at(static_cast<size_t>(cls)); }
  /// wrk's "Non-2xx or 3xx responses".
  uint64_t non_2xx_3xx() const;
  /// Responses that count as failed requests: 4xx and 5xx, unparseable codes, and
  /// 1xx, which is never a final answer (a 101 switched protocols: no HTTP response).
  uint64_t failed() const { return by_class[0] + by_class[1] + by_class[4] + by_class[5]; }
  void merge(const StatusCounts& o);
  friend bool operator==(const StatusCounts&, const StatusCounts&) = default;
};

/// What happened in one measurement window; merges across threads.
struct IterationStats {
  uint64_t responses = 0;   // complete responses of any status
  uint64_t bytes_read = 0;  // headers and bodies, as wrk counts
  ErrorCounts errors;
  StatusCounts statuses;
  LatencyHistogram latency;  // of complete responses only; open model: from the intended send
  /// Open model only: from the actual send (what a client without
  /// coordinated-omission correction would report). Empty in the closed model.
  LatencyHistogram latency_uncorrected;
  uint64_t late = 0;        // open model: sent after their intended time (see arrival_schedule.h)
  uint64_t never_sent = 0;  // open model: intended in this window, not sent by the run's end

  void merge(const IterationStats& o);
  /// Requests attempted that ended one way or another in this window.
  uint64_t attempts() const { return responses + errors.total(); }
  /// Failed requests (socket errors plus 4xx/5xx) over attempts, in percent.
  double error_rate_pct() const;
};

/// One timed iteration of `repeat.count`.
struct Iteration {
  int index = 0;           // 0-based, in run order
  bool discarded = false;  // among the first `repeat.discard`
  Nanos duration{0};       // length of the measurement window
  IterationStats stats;
  double target_rate = 0;  // requests/s asked for (open model); 0 = closed model

  /// Open model: the run fell short of its asked rate (achieved < 95 % of it).
  bool below_target_rate() const {
    return target_rate > 0 && throughput_rps() < 0.95 * target_rate;
  }

  double throughput_rps() const;
};

/// Everything the load engine measured in one run.
struct LoadResult {
  std::string engine;  // "curl" or "native"
  int threads = 0;
  int connections = 0;
  IterationStats warmup;              // measured but never judged
  std::vector<Iteration> iterations;  // in order, discarded ones included
  /// Requests sent but never counted: unanswered when the load ended, or
  /// answered after its last window. Dropped as wrk drops them, though the server
  /// may have served them. nullopt when the engine does not count them.
  std::optional<uint64_t> in_flight_at_end;

  std::vector<const Iteration*> kept() const;
  /// All kept iterations merged: totals for bench output and reports.
  IterationStats kept_total() const;
  Nanos kept_duration() const;
};

}  // namespace perfgate
