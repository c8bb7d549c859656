#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/latency_histogram.h"
#include "perfgate/core/units.h"

namespace perfgate {

/// Why an answer was not valid HTTP/1.1: bits of ErrorCounts::invalid_why.
enum InvalidAnswer : uint32_t {
  kBothLengthAndChunked = 1,  // Content-Length and chunked framing together
  kNoStatusLine = 2,          // HTTP/0.9, or not HTTP at all
  kMalformed = 4,             // anything else the parser refused
};

/// Socket-level failures, counted by kind as wrk does; never thrown.
struct ErrorCounts {
  uint64_t connect = 0;
  uint64_t read = 0;  // reset, closed early, malformed response
  uint64_t write = 0;
  uint64_t timeout = 0;
  uint64_t other = 0;
  /// Of `read`: the server answered, but not with valid HTTP. Not stored (the
  /// store keeps them as read errors); reports name them in the user's words.
  uint64_t invalid = 0;
  uint32_t invalid_why = 0;  // InvalidAnswer bits

  uint64_t total() const { return connect + read + write + timeout + other; }
  void count_invalid(InvalidAnswer why) {
    ++read;
    ++invalid;
    invalid_why |= why;
  }
  /// "3 invalid responses (both Content-Length and chunked)"; "" when none.
  std::string invalid_text() const;
  /// The errors by kind, the kinds with none left out: "timeout x 30, connect x 2";
  /// "" when none.
  std::string kinds_text() const;
  void merge(const ErrorCounts& o);
  friend bool operator==(const ErrorCounts&, const ErrorCounts&) = default;
};

/// Responses by status class: index 1 for 1xx ... 5 for 5xx, 0 for anything else.
struct StatusCounts {
  std::array<uint64_t, 6> by_class{};
  /// Of by_class, by class: responses their request's `success_statuses` judged
  /// otherwise than the default (a 404 listed as a success, a 204 left out).
  std::array<uint64_t, 6> overridden{};

  /// One response, judged by the default rule: 2xx and 3xx are successes.
  void count(int status_code);
  /// One response, `success` as its request's SuccessStatuses judged it.
  void count(int status_code, bool success);
  uint64_t of_class(int cls) const { return by_class.at(static_cast<size_t>(cls)); }
  /// wrk's "Non-2xx or 3xx responses".
  uint64_t non_2xx_3xx() const;
  /// Responses that count as failed requests: those whose status is not a
  /// success. By default 4xx and 5xx, unparseable codes, and 1xx, which is never
  /// a final answer (a 101 switched protocols: no HTTP response).
  uint64_t failed() const;
  /// failed(), by class (the index as by_class's): a 2xx a request's
  /// `success_statuses` left out counts under 2xx.
  std::array<uint64_t, 6> failed_by_class() const;
  /// The failed responses by class, as a report names them: "4xx x 12000, 5xx x 3"
  /// ("other" for unparseable codes); "" when none.
  std::string failed_text() const;
  /// The classes as the store keeps them (it has no column for `overridden`):
  /// a response judged otherwise than its class is kept under 2xx when it was
  /// a success and under "other" when it was not, so that failed() of what is
  /// read back is failed() of what was measured.
  std::array<uint64_t, 6> stored_classes() const;
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
  /// Failed requests (socket errors plus statuses not counted as success) over
  /// attempts, in percent.
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
