#pragma once

// Formatting shared by the reporters, so that the console table, the JUnit
// messages and the Markdown summary print a figure the same way, with fixed
// decimals per unit, and golden files stay byte-stable. Header-only on purpose:
// these are small and used by every report file.

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/core/metrics.h"
#include "perfgate/core/sequential.h"
#include "perfgate/core/verdict.h"
#include "perfgate/report/gate_result.h"

namespace perfgate::report {

/// Decimals per unit: req/s 1, ms 3, % 3; any other unit 3.
inline int decimals_for(std::string_view unit) {
  return unit == "req/s" ? 1 : 3;
}

/// printf("%.*f") without a "-0.000": a rounded zero has no sign. "-" when not finite.
inline std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string text = buf;
  if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

/// A figure in its unit's decimals, without the unit: 2.044 -> "2.044".
inline std::string format_value(double value, std::string_view unit) {
  return fixed(value, decimals_for(unit));
}

/// `number` followed by its unit: "2.044 ms", "0.100%", "21034.2 req/s".
inline std::string with_unit(const std::string& number, std::string_view unit) {
  if (unit.empty() || number == "-") return number;
  if (unit == "%") return number + "%";
  return number + " " + std::string(unit);
}

/// A relative change, one decimal and always signed: "+6.9%", "-0.7%", "0.0%";
/// "-" when there is no baseline to compare with.
inline std::string format_change(const std::optional<double>& change_pct) {
  if (!change_pct || !std::isfinite(*change_pct)) return "-";
  // An interval of a handful of noisy runs can reach absurd factors; past this
  // it says no more than "huge" (the JSON keeps the number).
  if (std::fabs(*change_pct) > 99999) return *change_pct > 0 ? ">+99999%" : "<-99999%";
  std::string text = fixed(*change_pct, 1);
  if (text == "0.0") return "0.0%";
  return (text.front() == '-' ? "" : "+") + text + "%";
}

/// A change point's step (a history's new level against the old): format_change,
/// or "from 0" when the old level was 0 and the step has no ratio (NaN).
inline std::string format_step(double size_pct) {
  return std::isnan(size_pct) ? "from 0" : format_change(size_pct);
}

/// A change's confidence interval, "-12.1%..-8.0%"; "-" when it was not tested
/// or has none (a baseline of one or two runs and no noise pool).
inline std::string format_interval(const std::optional<ChangeTest>& test) {
  if (!test || !std::isfinite(test->ci_low_pct) || !std::isfinite(test->ci_high_pct)) return "-";
  return format_change(test->ci_low_pct) + ".." + format_change(test->ci_high_pct);
}

/// The test's estimate of the change, the centre of its interval: "-1.8%";
/// "-" without a test, or where the test has no interval (runs of a young store).
inline std::string format_estimate(const std::optional<ChangeTest>& test) {
  if (!test || !std::isfinite(test->ci_low_pct) || !std::isfinite(test->estimate_pct)) return "-";
  return format_change(test->estimate_pct);
}

/// A p-value with three decimals, "<0.001" below that; "-" when not tested.
inline std::string format_p(const std::optional<ChangeTest>& test) {
  if (!test) return "-";
  return test->p_value < 0.001 ? "<0.001" : fixed(test->p_value, 3);
}

/// A confidence level as a reader takes it: 95 -> "95", 98.3333 -> "98.33".
inline std::string level(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", pct);
  return buf;
}

/// A limit as the user wrote it, without trailing zeros: 10 -> "10", 0.1 -> "0.1".
inline std::string compact(double value) {
  std::string text = fixed(value, 3);
  if (text.find('.') == std::string::npos) return text;
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

/// The parts with `separator` between them.
inline std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) text += (i ? std::string(separator) : "") + parts[i];
  return text;
}

/// The metric's definition, for its direction; unknown keys count as "lower is better".
inline Better better_of(std::string_view metric) {
  const MetricDef* def = find_metric(metric);
  return def ? def->better : Better::kLower;
}

/// The sign of a regression: throughput regresses downwards, latency upwards.
inline std::string regression_sign(std::string_view metric) {
  return better_of(metric) == Better::kHigher ? "-" : "+";
}

/// How far the change goes in the regressing direction, in percent (negative
/// when the metric improved).
inline std::optional<double> regression_pct(const MetricCheck& check) {
  if (!check.change_pct) return std::nullopt;
  return better_of(check.metric) == Better::kHigher ? -*check.change_pct : *check.change_pct;
}

/// The relative limits alone: "+10% / +20%" (warn / fail), "warn +10%", "fail +20%"; "" when none.
inline std::string relative_limits(const MetricCheck& check) {
  const Thresholds& t = check.thresholds;
  std::string sign = regression_sign(check.metric);
  if (t.warn_pct && t.fail_pct)
    return sign + compact(*t.warn_pct) + "% / " + sign + compact(*t.fail_pct) + "%";
  if (t.warn_pct) return "warn " + sign + compact(*t.warn_pct) + "%";
  if (t.fail_pct) return "fail " + sign + compact(*t.fail_pct) + "%";
  return "";
}

/// Every limit of a metric: "+10% / +20%, max 50 ms", "max 0.1%"; "-" when none.
inline std::string format_limits(const MetricCheck& check) {
  std::vector<std::string> parts;
  if (auto rel = relative_limits(check); !rel.empty()) parts.push_back(rel);
  if (check.thresholds.max)
    parts.push_back("max " + with_unit(compact(*check.thresholds.max), check.unit));
  if (check.thresholds.min)
    parts.push_back("min " + with_unit(compact(*check.thresholds.min), check.unit));
  return parts.empty() ? "-" : join(parts, ", ");
}

/// The limit that decided a warn or fail: an absolute one when broken, else the
/// widest relative one the change went past; all limits when none was passed
/// (a noisy run can pass beyond a limit, and judge() may weigh noise too).
inline std::string decisive_limit(const MetricCheck& check) {
  const Thresholds& t = check.thresholds;
  if (t.max && check.value > *t.max) return "above max " + with_unit(compact(*t.max), check.unit);
  if (t.min && check.value < *t.min) return "below min " + with_unit(compact(*t.min), check.unit);
  std::string sign = regression_sign(check.metric);
  auto regress = regression_pct(check);
  if (regress && t.fail_pct && *regress > *t.fail_pct)
    return "fail limit " + sign + compact(*t.fail_pct) + "%";
  if (regress && t.warn_pct && *regress > *t.warn_pct)
    return "warn limit " + sign + compact(*t.warn_pct) + "%";
  return "limits " + format_limits(check);
}

/// "PASS", "WARN", "FAIL", "ERROR".
inline std::string verdict_word(Verdict verdict) {
  std::string word(to_string(verdict));
  for (char& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return word;
}

/// The first `n` characters of a hash or commit, as people quote them.
inline std::string short_id(std::string_view id, size_t n) {
  return std::string(id.substr(0, n));
}

/// "1 thread", "16 connections".
inline std::string plural(int64_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

/// Length of a UTF-8 sequence from its first byte; 0 when no sequence starts so.
inline size_t utf8_lead_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

/// Length of the UTF-8 sequence starting at `s[i]` when it is a well-formed
/// scalar value that XML accepts (no surrogates, overlongs, U+FFFE/U+FFFF); 0 otherwise.
inline size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  size_t len = utf8_lead_length(byte(i));
  if (len == 0 || i + len > s.size()) return 0;
  uint32_t cp = len == 1 ? byte(i) : byte(i) & (0x7Fu >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  bool forbidden = (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF || cp > 0x10FFFF;
  return overlong || forbidden ? 0 : len;
}

/// `text` with every malformed UTF-8 sequence replaced by U+FFFD, so that JSON
/// serialization cannot throw and XML stays well-formed whatever a profile holds.
inline std::string valid_utf8(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t len = utf8_sequence_length(text, i);
    out += len ? text.substr(i, len) : std::string_view("\xEF\xBF\xBD");
    i += len ? len : 1;
  }
  return out;
}

/// valid_utf8() that also replaces control characters other than tab and
/// newlines by U+FFFD: XML 1.0 forbids them, and in a log they could move the
/// cursor or start a colour.
inline std::string printable(std::string_view text) {
  std::string out;
  for (char c : valid_utf8(text)) {
    auto u = static_cast<unsigned char>(c);
    bool control = (u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7F;
    out += control ? std::string("\xEF\xBF\xBD") : std::string(1, c);
  }
  return out;
}

/// printable() on one line: tabs and newlines become spaces (names, table cells).
inline std::string one_line(std::string_view text) {
  std::string out = printable(text);
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

/// Escapes text for XML or HTML: the five markup characters, the apostrophe as
/// `apostrophe` (XML's "&apos;", or "&#39;", which old HTML knows too), and with
/// `whitespace_refs` CR, LF and tab as references, which attribute values need
/// to keep them. The caller drops what must not appear at all (printable()).
inline std::string markup_escape(std::string_view text, std::string_view apostrophe,
                                 bool whitespace_refs) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += apostrophe;
        break;
      case '\r':
        out += "&#13;";
        break;
      case '\n':
        out += whitespace_refs ? "&#10;" : "\n";
        break;
      case '\t':
        out += whitespace_refs ? "&#9;" : "\t";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// Why each metric that could not have failed says so, one line each:
/// "inconclusive: throughput_rps ... about 40 pairs would decide (this run has 7)".
inline std::string inconclusive_lines(const std::vector<MetricCheck>& checks) {
  std::string out;
  for (const MetricCheck& c : checks)
    if (c.gated && c.inconclusive) out += one_line(c.message) + "\n";
  return out;
}

/// One line with metric, now, baseline, change and the deciding limit:
/// "latency_p99_ms: 2.044 ms vs baseline 1.912 ms (+6.9%), fail limit +20%".
inline std::string headline(const MetricCheck& check) {
  std::string now = with_unit(format_value(check.value, check.unit), check.unit);
  std::string text = one_line(check.metric) + ": " + now;
  if (check.baseline) {
    text += " vs baseline " + with_unit(format_value(*check.baseline, check.unit), check.unit);
    // A zero baseline has no relative change: the absolute limit says the rest.
    if (check.change_pct)
      text += " (" + format_change(check.change_pct) +
              (check.test ? ", p" + std::string(check.test->p_value < 0.001 ? "" : "=") +
                                format_p(check.test)
                          : "") +
              ")";
  } else {
    text += ", no baseline";
  }
  return text + ", " + decisive_limit(check);
}

/// "run 2 compared with run 1 (commit abc1234)", "run 2, no baseline",
/// "run not recorded, compared with run 1".
inline std::string comparison_summary(const GateResult& result) {
  std::string text = result.run_id ? "run " + std::to_string(*result.run_id) : "run not recorded";
  if (!result.baseline_run_id) return text + ", no baseline";
  text += (result.run_id ? " " : ", ") + std::string("compared with run ") +
          std::to_string(*result.baseline_run_id);
  if (!result.baseline_commit.empty())
    text += " (commit " + one_line(short_id(result.baseline_commit, 7)) + ")";
  if (result.baseline_run_ids.size() > 1)
    text += " and " + std::to_string(result.baseline_run_ids.size() - 1) + " runs before it";
  return text;
}

/// The change this run detects with 80 % power, per gated metric with a test:
/// "change this run detects (80% power, 98.33% level): throughput_rps 2.0%,
/// latency_p99_ms none (level out of reach)"; "" when none has a test.
inline std::string detectable_changes(const GateResult& result) {
  std::string list;
  for (const MetricCheck& c : result.checks) {
    if (!c.gated || !c.test) continue;
    std::string figure =
        c.test->reaches_level ? "not computable (too few iterations)" : "none (level out of reach)";
    if (auto pct = detectable_change_pct(c)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f%%", *pct);
      figure = *pct > 99999 ? ">99999%" : buf;
    }
    list += (list.empty() ? "" : ", ") + one_line(c.metric) + " " + figure;
  }
  if (list.empty()) return "";
  char level[32];
  std::snprintf(level, sizeof level, "%.4g", result.confidence);
  return "change this run detects (80% power, " + std::string(level) + "% level): " + list;
}

}  // namespace perfgate::report
