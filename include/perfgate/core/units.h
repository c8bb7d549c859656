#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace perfgate {

using Nanos = std::chrono::nanoseconds;

/// "500ms", "10s", "2m", "1h", "250us", "1.5s", or a bare number of seconds.
/// Returns nullopt for anything else (negative values included).
std::optional<Nanos> parse_duration(std::string_view text);
/// True when `text` is written like a duration ("1e6" aside) but is too long to
/// count in nanoseconds, like "99999999999h": worth its own error message.
bool is_overlong_duration(std::string_view text);

/// "3%", "0.1%", or a bare number taken as a percentage. Returns the percentage
/// (3.0 for "3%"); nullopt when malformed or negative.
std::optional<double> parse_percent(std::string_view text);

/// Seconds as a double, for rates.
inline double to_seconds(Nanos d) {
  return std::chrono::duration<double>(d).count();
}
inline double to_millis(Nanos d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

/// wrk's formats, so that `perfgate bench` output reads like wrk's:
/// format_time_us(635.91) == "635.91us", 1234.0 -> "1.23ms", 5e6 -> "5.00s".
std::string format_time_us(double microseconds);
/// Binary units without the trailing B: 1288490 -> "1.23M" (wrk appends "B").
std::string format_binary(double bytes);
/// Metric units (1000): 56200 -> "56.20k".
std::string format_metric(double value);

/// Compact duration for profiles and messages: 2'000'000'000ns -> "2s", 1.5ms -> "1.5ms".
std::string format_duration(Nanos d);

}  // namespace perfgate
