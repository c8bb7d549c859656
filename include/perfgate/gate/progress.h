#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "perfgate/core/load_result.h"
#include "perfgate/core/units.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

/// What one progress report says about the run so far.
struct ProgressSnapshot {
  int iteration = 0;  // 1-based: the iteration that just ended
  int total = 0;
  double elapsed_s = 0;
  double left_s = 0;
  double rps = 0;
  double p99_ms = 0;
  uint64_t errors = 0;  // socket errors plus 4xx/5xx in that iteration
  bool discarded = false;
};

/// How progress is shown on the stream it goes to.
struct ProgressStyle {
  bool live = false;   // a terminal: one line rewritten in place
  bool color = false;  // ANSI colours (only ever on a terminal)
};

/// A terminal gets a live line; anything else (a CI log, a file) plain lines.
/// NO_COLOR set to anything non-empty turns colours off (no-color.org).
ProgressStyle progress_style(bool is_tty, const EnvLookup& env);

/// "1:05" for 65 s, "1:01:05" past an hour; negative or unknown as "0:00".
std::string clock_text(double seconds);
/// ISO 8601 UTC to the second: "2026-11-30T00:52:23Z".
std::string utc_timestamp(std::chrono::system_clock::time_point t);
/// The live line: "iteration 3/10  0:12 elapsed, 0:28 left  20876.9 req/s  p99 2.044 ms".
/// Errors and discarded iterations are added when there are any; `color`
/// paints errors red and the discard note dim.
std::string progress_line(const ProgressSnapshot& s, bool color);
/// A log line: "2026-11-30T00:52:23Z iteration 3/10: 20876.9 req/s, p99 2.044 ms,
/// 0 errors, 0:12 elapsed, 0:28 left".
std::string progress_log_line(const ProgressSnapshot& s, std::string_view timestamp);
/// The snapshot after `it` ended, `elapsed` into a run planned to take `planned`.
ProgressSnapshot snapshot_of(const Iteration& it, int total, Nanos elapsed, Nanos planned);

/// Progress of a gated run, fed by the load engine's per-iteration callback.
class Progress {
 public:
  using SteadyClock = std::function<std::chrono::steady_clock::time_point()>;
  using WallClock = std::function<std::chrono::system_clock::time_point()>;

  /// Starts timing now. `planned` is the load's whole length (warm-up plus every
  /// iteration), from which the time left is estimated.
  Progress(std::ostream& out, ProgressStyle style, int total, Nanos planned,
           SteadyClock steady = std::chrono::steady_clock::now,
           WallClock wall = std::chrono::system_clock::now);
  /// Reports one ended iteration: rewrites the live line or prints a log line.
  void on_iteration(const Iteration& it);
  /// Ends the live line so that what follows starts on a line of its own.
  void finish();

 private:
  std::ostream& out_;
  ProgressStyle style_;
  int total_;
  Nanos planned_;
  SteadyClock steady_;
  WallClock wall_;
  std::chrono::steady_clock::time_point start_;
  size_t last_width_ = 0;  // of the live line, to blank what a shorter one leaves
};

}  // namespace perfgate
