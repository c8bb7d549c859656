#include "perfgate/core/checked.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace perfgate {

std::optional<int64_t> checked_multiply(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

std::optional<Nanos> checked_duration(int64_t count, Nanos unit) {
  if (count < 0 || unit.count() < 0) return std::nullopt;
  auto ns = checked_multiply(count, unit.count());
  if (!ns) return std::nullopt;
  return Nanos(*ns);
}

std::optional<Nanos> checked_nanos(long double ns) {
  ns = std::round(ns);
  // 2^63 is exact in a long double; anything from it on does not fit. NaN
  // fails both comparisons.
  if (!(ns >= 0 && ns < 0x1p63L)) return std::nullopt;
  return Nanos(static_cast<int64_t>(ns));
}

std::optional<Nanos> checked_seconds(long double seconds) {
  return checked_nanos(seconds * 1e9L);
}

Nanos saturated_seconds(long double seconds) {
  if (seconds > 0) return checked_seconds(seconds).value_or(Nanos::max());
  return checked_seconds(seconds).value_or(Nanos(0));
}

std::string NumberRange::words() const {
  std::string text = "from " + short_number(min) + " to " + short_number(max);
  return unit.empty() ? text : text + " " + std::string(unit);
}

std::string short_number(double value) {
  char text[32];
  // %g switches to an exponent past 12 digits: 1e+300 stays six characters.
  std::snprintf(text, sizeof text, "%.12g", value);
  return text;
}

}  // namespace perfgate
