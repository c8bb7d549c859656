#include "perfgate/report/openmetrics_report.h"

#include <cctype>
#include <cmath>
#include <string_view>

#include "perfgate/report/report_format.h"

namespace perfgate {
namespace {

// Metric names allow [a-zA-Z0-9_:] only; a contract key always fits, but a
// future key with a dash must not make the whole file unreadable.
std::string metric_name(std::string_view key) {
  std::string out = "perfgate_";
  for (char c : key) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// Label values escape backslash, double quote and newline (OpenMetrics ABNF).
std::string label_value(std::string_view raw) {
  std::string out;
  for (char c : report::one_line(raw)) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

// OpenMetrics spells a figure that could not be computed NaN.
std::string number(double value, std::string_view unit) {
  return std::isfinite(value) ? report::format_value(value, unit) : "NaN";
}

std::string gauge(const std::string& name, const std::string& help, const std::string& labels,
                  const std::string& value) {
  return "# TYPE " + name + " gauge\n# HELP " + name + " " + help + "\n" + name + labels + " " +
         value + "\n";
}

std::string check_lines(const MetricCheck& c, const std::string& labels) {
  std::string name = metric_name(c.metric);
  std::string unit = c.unit.empty() ? "" : " (" + c.unit + ")";
  std::string out = gauge(name, "perfgate " + c.metric + unit, labels, number(c.value, c.unit));
  if (c.baseline)
    out += gauge(name + "_baseline", "baseline of " + c.metric + unit, labels,
                 number(*c.baseline, c.unit));
  return out;
}

}  // namespace

std::string openmetrics(const GateResult& result) {
  std::string labels = "{profile=\"" + label_value(result.profile_name) + "\"}";
  std::string out;
  for (const MetricCheck& c : result.checks) out += check_lines(c, labels);
  out += gauge("perfgate_exit_code", "0 pass, 1 fail, 2 warn, 3 error", labels,
               std::to_string(to_int(result.exit_code)));
  out += gauge("perfgate_saturated", "1 when the load machine was the bottleneck", labels,
               result.saturation.saturated ? "1" : "0");
  return out + "# EOF\n";
}

}  // namespace perfgate
