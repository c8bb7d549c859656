#pragma once

// Checked arithmetic for the numbers that come from outside: durations, rates
// and counts read from a profile, a flag or a store. An overflow must never
// wrap into a value that means something else (a prune cut-off in the future
// deletes every run), and a range error says its limit in words, never as a
// 300-digit number.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "perfgate/core/units.h"

namespace perfgate {

/// a * b, or nullopt when it does not fit in an int64_t.
std::optional<int64_t> checked_multiply(int64_t a, int64_t b);
/// a + b, or nullopt when it does not fit in an int64_t.
std::optional<int64_t> checked_add(int64_t a, int64_t b);

/// `count` times `unit`, or nullopt when negative or past what Nanos holds.
std::optional<Nanos> checked_duration(int64_t count, Nanos unit);
/// `ns` nanoseconds rounded, or nullopt when negative, NaN or past what Nanos
/// holds.
std::optional<Nanos> checked_nanos(long double ns);
/// `seconds` rounded to the nanosecond, or nullopt when negative, NaN or past
/// what Nanos holds.
std::optional<Nanos> checked_seconds(long double seconds);
/// As checked_seconds, but a time too far to count is Nanos::max(): for
/// schedules, where such a time only has to compare as later than any other.
Nanos saturated_seconds(long double seconds);

/// The longest duration perfgate counts (int64_t nanoseconds), in words.
inline constexpr std::string_view kLongestDurationWords = "106751 days (about 292 years)";

/// A closed range that a number from outside must lie in, with its unit, so
/// that an error can say what the limit is.
struct NumberRange {
  double min;
  double max;
  std::string_view unit;  // "requests/s"; "" for a bare number

  /// False for NaN and for anything outside [min, max].
  bool contains(double value) const { return value >= min && value <= max; }
  /// "from 0.001 to 100000000 requests/s"
  std::string words() const;
};

/// The open model's request rates: below a request in 1000 s a run of at most
/// 24 h sends next to nothing, and the schedule's times leave Nanos' range;
/// above 1e8/s no load machine keeps up.
inline constexpr NumberRange kRequestRate{0.001, 100'000'000, "requests/s"};

/// `value` for a message, short whatever its size: "1e-10", "1e+300", "12.5",
/// "nan". Never hundreds of digits.
std::string short_number(double value);

}  // namespace perfgate
