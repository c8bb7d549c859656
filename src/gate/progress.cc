#include "perfgate/gate/progress.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "perfgate/report/report_format.h"

namespace perfgate {
namespace {

constexpr std::string_view kRed = "\x1b[31m", kDim = "\x1b[2m", kReset = "\x1b[0m";

std::string paint(const std::string& text, std::string_view code, bool color) {
  return color ? std::string(code) + text + std::string(kReset) : text;
}

std::string two_digits(long value) {
  return (value < 10 ? "0" : "") + std::to_string(value);
}

}  // namespace

ProgressStyle progress_style(bool is_tty, const EnvLookup& env) {
  auto no_color = env("NO_COLOR");
  return {is_tty, is_tty && !(no_color && !no_color->empty())};
}

std::string clock_text(double seconds) {
  long total = std::isfinite(seconds) && seconds > 0 ? std::lround(seconds) : 0;
  long hours = total / 3600, minutes = total / 60 % 60, secs = total % 60;
  if (hours > 0) return std::to_string(hours) + ":" + two_digits(minutes) + ":" + two_digits(secs);
  return std::to_string(minutes) + ":" + two_digits(secs);
}

std::string utc_timestamp(std::chrono::system_clock::time_point t) {
  std::time_t time = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&time, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string progress_line(const ProgressSnapshot& s, bool color) {
  std::string text = "iteration " + std::to_string(s.iteration) + "/" + std::to_string(s.total) +
                     "  " + clock_text(s.elapsed_s) + " elapsed, " + clock_text(s.left_s) +
                     " left  " + report::fixed(s.rps, 1) + " req/s  p99 " +
                     report::fixed(s.p99_ms, 3) + " ms";
  if (s.errors > 0) text += "  " + paint(std::to_string(s.errors) + " errors", kRed, color);
  if (s.discarded) text += "  " + paint("(discarded)", kDim, color);
  return text;
}

std::string progress_log_line(const ProgressSnapshot& s, std::string_view timestamp) {
  return std::string(timestamp) + " iteration " + std::to_string(s.iteration) + "/" +
         std::to_string(s.total) + ": " + report::fixed(s.rps, 1) + " req/s, p99 " +
         report::fixed(s.p99_ms, 3) + " ms, " + std::to_string(s.errors) + " errors, " +
         clock_text(s.elapsed_s) + " elapsed, " + clock_text(s.left_s) + " left" +
         (s.discarded ? " (discarded)" : "");
}

ProgressSnapshot snapshot_of(const Iteration& it, int total, Nanos elapsed, Nanos planned) {
  ProgressSnapshot s;
  s.iteration = it.index + 1;
  s.total = total;
  s.elapsed_s = to_seconds(elapsed);
  s.left_s = std::max(0.0, to_seconds(planned - elapsed));
  s.rps = it.throughput_rps();
  s.p99_ms = static_cast<double>(it.stats.latency.percentile_ns(99)) / 1e6;
  s.errors = it.stats.errors.total() + it.stats.statuses.failed();
  s.discarded = it.discarded;
  return s;
}

Progress::Progress(std::ostream& out, ProgressStyle style, int total, Nanos planned,
                   SteadyClock steady, WallClock wall)
    : out_(out),
      style_(style),
      total_(total),
      planned_(planned),
      steady_(std::move(steady)),
      wall_(std::move(wall)),
      start_(steady_()) {}

void Progress::on_iteration(const Iteration& it) {
  auto elapsed = std::chrono::duration_cast<Nanos>(steady_() - start_);
  ProgressSnapshot s = snapshot_of(it, total_, elapsed, planned_);
  if (!style_.live) {
    out_ << progress_log_line(s, utc_timestamp(wall_())) << "\n" << std::flush;
    return;
  }
  // "\r" and spaces rather than an erase-line escape: the line stays plain text.
  std::string line = progress_line(s, style_.color);
  size_t width = progress_line(s, false).size();
  out_ << "\r" << line << std::string(last_width_ > width ? last_width_ - width : 0, ' ')
       << std::flush;
  last_width_ = width;
}

void Progress::finish() {
  if (style_.live && last_width_ > 0) out_ << "\n" << std::flush;
  last_width_ = 0;
}

}  // namespace perfgate
