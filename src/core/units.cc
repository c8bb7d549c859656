#include "perfgate/core/units.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include "perfgate/core/checked.h"

namespace perfgate {
namespace {

/// A number made of digits with an optional fraction ("10", "1.5"), then a suffix.
struct Decimal {
  long double value = 0;
  std::string_view suffix;
};

std::optional<Decimal> split_decimal(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    size_t fraction = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == fraction) return std::nullopt;  // "1." is a typo, not a number
  }
  Decimal d;
  // strtold needs a terminated string; the digits are at most a few dozen chars.
  std::string digits(text.substr(0, i));
  d.value = std::strtold(digits.c_str(), nullptr);
  d.suffix = text.substr(i);
  return d;
}

std::optional<long double> unit_ns(std::string_view suffix) {
  struct Unit {
    std::string_view name;
    long double ns;
  };
  static constexpr std::array<Unit, 7> kUnits = {{{"ns", 1},
                                                  {"us", 1e3L},
                                                  {"ms", 1e6L},
                                                  {"s", 1e9L},
                                                  {"", 1e9L},  // bare number: seconds
                                                  {"m", 60e9L},
                                                  {"h", 3600e9L}}};
  for (const auto& unit : kUnits)
    if (unit.name == suffix) return unit.ns;
  return std::nullopt;
}

/// wrk's unit tables: `units` are the larger steps after `base`.
struct UnitScale {
  int scale;
  const char* base;
  std::array<const char*, 6> units;  // nullptr-terminated
};

constexpr UnitScale kTimeUs = {1000, "us", {"ms", "s", nullptr}};
constexpr UnitScale kTimeS = {60, "s", {"m", "h", nullptr}};
constexpr UnitScale kBinary = {1024, "", {"K", "M", "G", "T", "P", nullptr}};
constexpr UnitScale kMetric = {1000, "", {"k", "M", "G", "T", "P", nullptr}};

// A faithful copy of wrk's format_units(): it steps up once the amount reaches
// 85 % of the next unit, and (by its loop condition) never uses the last unit
// of a table. Reproduced as is so that `perfgate bench` prints what wrk prints.
std::string format_units(long double amount, const UnitScale& m) {
  const char* unit = m.base;
  long double scale = m.scale * 0.85L;
  for (size_t i = 0; m.units[i + 1] && amount >= scale; ++i) {
    amount /= m.scale;
    unit = m.units[i];
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2Lf%s", amount, unit);
  return buf;
}

/// `value` of `unit_ns`-sized units as an exact decimal without trailing zeros.
std::string exact_decimal(int64_t value_ns, int64_t unit_ns, int fraction_digits,
                          const char* unit) {
  std::string out = std::to_string(value_ns / unit_ns);
  int64_t rest = value_ns % unit_ns;
  if (rest != 0) {
    std::string fraction = std::to_string(rest);
    fraction.insert(0, static_cast<size_t>(fraction_digits) - fraction.size(), '0');
    fraction.erase(fraction.find_last_not_of('0') + 1);
    out += "." + fraction;
  }
  return out + unit;
}

}  // namespace

std::optional<Nanos> parse_duration(std::string_view text) {
  auto decimal = split_decimal(text);
  if (!decimal) return std::nullopt;
  auto unit = unit_ns(decimal->suffix);
  if (!unit) return std::nullopt;
  // Beyond ~292 years the nanosecond count no longer fits: not a duration anyone means.
  return checked_nanos(decimal->value * *unit);
}

bool is_overlong_duration(std::string_view text) {
  std::string_view number = text.substr(0, text.find_first_not_of("0123456789."));
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1) return false;
  // Its form and unit are right when one of that unit parses; only its size is not.
  return !parse_duration(text) &&
         parse_duration("1" + std::string(text.substr(number.size()))).has_value();
}

std::optional<double> parse_percent(std::string_view text) {
  auto decimal = split_decimal(text);
  if (!decimal || (decimal->suffix != "%" && !decimal->suffix.empty())) return std::nullopt;
  return static_cast<double>(decimal->value);
}

std::string format_time_us(double microseconds) {
  long double amount = microseconds;
  if (amount >= 1000000.0L) return format_units(amount / 1000000.0L, kTimeS);
  return format_units(amount, kTimeUs);
}

std::string format_binary(double bytes) {
  return format_units(bytes, kBinary);
}

std::string format_metric(double value) {
  return format_units(value, kMetric);
}

std::string format_duration(Nanos d) {
  int64_t ns = d.count();
  if (ns < 0) return "-" + format_duration(-d);
  if (ns == 0) return "0s";
  constexpr int64_t kMinute = 60'000'000'000, kHour = 60 * kMinute;
  // Hours and minutes only when exact: "90s" reads better than "1.5m".
  if (ns % kHour == 0) return std::to_string(ns / kHour) + "h";
  if (ns % kMinute == 0) return std::to_string(ns / kMinute) + "m";
  if (ns >= 1'000'000'000) return exact_decimal(ns, 1'000'000'000, 9, "s");
  if (ns >= 1'000'000) return exact_decimal(ns, 1'000'000, 6, "ms");
  if (ns >= 1'000) return exact_decimal(ns, 1'000, 3, "us");
  return std::to_string(ns) + "ns";
}

}  // namespace perfgate
