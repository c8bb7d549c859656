#include "perfgate/report/junit_report.h"

#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfgate/report/console_report.h"
#include "perfgate/report/report_format.h"

namespace perfgate {
namespace {

// What a consumer shows for a testcase: GitLab and the GitHub reporters take its
// status from the first of `failure`, `error`, `skipped` and read its message.
enum class Outcome { kPassed, kSkipped, kFailure, kError };

struct Case {
  std::string name;
  Outcome outcome = Outcome::kPassed;
  std::string type;     // the child's `type` attribute
  std::string message;  // its headline, shown by the reporters in one line
  std::string detail;   // its text, shown when someone unfolds the case
};

struct Counts {
  int tests = 0;
  int failures = 0;
  int errors = 0;
  int skipped = 0;
};

// printable() first: XML 1.0 forbids most control characters even as references.
// Newlines in attributes are escaped, or parsers would turn them into spaces.
std::string xml_escape(std::string_view text, bool attribute) {
  return report::markup_escape(report::printable(text), "&apos;", attribute);
}

std::string attr(std::string_view name, std::string_view value) {
  return " " + std::string(name) + "=\"" + xml_escape(value, true) + "\"";
}

// The schema's SUREFIRE_TIME: digits with at most three decimals, never negative.
std::string xml_time(double seconds) {
  return report::fixed(std::isfinite(seconds) && seconds > 0 ? seconds : 0, 3);
}

std::string saturation_text(const Saturation& s) {
  return s.reasons.empty() ? "the load machine was the bottleneck" : report::join(s.reasons, "; ");
}

std::string check_detail(const MetricCheck& c, const Saturation& s) {
  std::string base = c.baseline ? report::format_value(*c.baseline, c.unit) : "-";
  std::string text = c.message.empty() ? "" : c.message + "\n";
  text += "now " + report::with_unit(report::format_value(c.value, c.unit), c.unit) +
          ", baseline " + report::with_unit(base, c.unit) + ", change " +
          report::format_change(c.change_pct) + "\n";
  text += "limits: " + report::format_limits(c) + "\n";
  if (s.saturated) text += "load machine saturated: " + saturation_text(s) + "\n";
  return text;
}

// A warn is reported as `skipped`: GitLab, dorny/test-reporter and
// action-junit-report show skipped as neither red nor green, which is what a
// warning is; as a failure it would block the merge that exit code 2 allows.
Case check_case(const MetricCheck& c, const Saturation& s) {
  Case out;
  out.name = c.metric;
  if (c.verdict == Verdict::kPass) return out;
  out.detail = check_detail(c, s);
  out.message = report::headline(c);
  if (c.verdict == Verdict::kFail) {
    out.outcome = Outcome::kFailure;
    out.type = "regression";
  } else if (c.verdict == Verdict::kWarn) {
    out.outcome = Outcome::kSkipped;
    out.type = "warn";
    out.message = "warn: " + out.message + (s.saturated ? " (inconclusive: saturated)" : "");
  } else {
    out.outcome = Outcome::kError;
    out.type = "error";
  }
  return out;
}

// Always present, so that a saturated run is visible in the test list and a
// clean one is a green "saturation" check.
Case saturation_case(const Saturation& s) {
  Case out;
  out.name = "saturation";
  if (!s.saturated) return out;
  out.outcome = Outcome::kSkipped;
  out.type = "saturated";
  out.message = "saturated: " + saturation_text(s);
  out.detail =
      "The load machine was the bottleneck, so these figures say little about the service:\n"
      "fails became warns, and this run will not become a baseline.\n";
  for (const auto& reason : s.reasons) out.detail += "- " + reason + "\n";
  return out;
}

// A cost phase that could not count is visible as skipped, not silently absent.
std::optional<Case> cost_case(const CostRun& cost) {
  if (cost.skipped.empty()) return std::nullopt;
  std::string message = "cost phase skipped: " + cost.skipped;
  return Case{"cost", Outcome::kSkipped, "unavailable", message, message + "\n"};
}

Case error_case(const GateResult& r) {
  std::string message = r.error.empty() ? "no verdict could be made" : r.error;
  return {"run", Outcome::kError, "error", message, message + "\n"};
}

// Consumers key cases by name (GitLab keeps only the first of duplicates).
void make_names_unique(std::vector<Case>& cases) {
  std::set<std::string> seen;
  for (Case& c : cases) {
    std::string name = c.name;
    for (int n = 2; !seen.insert(name).second; ++n) name = c.name + "#" + std::to_string(n);
    c.name = name;
  }
}

std::vector<Case> cases_of(const GateResult& r) {
  if (r.verdict == Verdict::kError) return {error_case(r)};
  std::vector<Case> cases;
  for (const MetricCheck& check : r.checks)
    if (check.gated) cases.push_back(check_case(check, r.saturation));
  cases.push_back(saturation_case(r.saturation));
  if (auto cost = cost_case(r.cost)) cases.push_back(*cost);
  make_names_unique(cases);
  return cases;
}

Counts count(const std::vector<Case>& cases) {
  Counts counts;
  for (const Case& c : cases) {
    ++counts.tests;
    counts.failures += c.outcome == Outcome::kFailure;
    counts.errors += c.outcome == Outcome::kError;
    counts.skipped += c.outcome == Outcome::kSkipped;
  }
  return counts;
}

std::string_view element_of(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSkipped:
      return "skipped";
    case Outcome::kFailure:
      return "failure";
    case Outcome::kError:
      return "error";
    case Outcome::kPassed:
      break;
  }
  return "";
}

std::string render_case(const Case& c, const std::string& classname) {
  std::string open = "    <testcase" + attr("classname", classname) + attr("name", c.name) +
                     attr("time", xml_time(0));
  if (c.outcome == Outcome::kPassed) return open + "/>\n";
  std::string element(element_of(c.outcome));
  return open + ">\n      <" + element + attr("message", c.message) + attr("type", c.type) + ">" +
         xml_escape(c.detail, false) + "</" + element + ">\n    </testcase>\n";
}

std::vector<std::pair<std::string, std::string>> properties_of(const GateResult& r) {
  auto id = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : ""; };
  std::vector<std::pair<std::string, std::string>> props = {
      {"profile", r.profile_name},
      {"profile_hash", r.profile_hash},
      {"profile_source", r.profile_source},
      {"target_url", r.target_url},
      {"run_id", id(r.run_id)},
      {"baseline_run_id", id(r.baseline_run_id)},
      {"baseline_commit", r.baseline_commit},
      {"ci_provider", r.ci.provider},
      {"commit", r.ci.commit},
      {"branch", r.ci.branch},
      {"baseline_branch", r.ci.baseline_branch},
      {"pipeline_id", r.ci.pipeline_id},
      {"engine", r.engine},
      {"host_key", r.host.key()}};
  for (const auto& [name, value] : r.host.fields) props.emplace_back("host." + name, value);
  return props;
}

// Unknown facts are left out rather than written as empty values.
std::string render_properties(const GateResult& r) {
  std::string out = "    <properties>\n";
  for (const auto& [name, value] : properties_of(r))
    if (!value.empty())
      out += "      <property" + attr("name", name) + attr("value", value) + "/>\n";
  return out + "    </properties>\n";
}

std::string counts_attrs(const Counts& c) {
  return attr("tests", std::to_string(c.tests)) + attr("failures", std::to_string(c.failures)) +
         attr("errors", std::to_string(c.errors));
}

std::string render_suite(const GateResult& r, const std::vector<Case>& cases) {
  std::string name = "perfgate." + r.profile_name;
  Counts counts = count(cases);
  std::string out = "  <testsuite" + attr("name", name) + counts_attrs(counts) +
                    attr("skipped", std::to_string(counts.skipped)) +
                    attr("time", xml_time(r.duration_s));
  if (!r.started_at.empty()) out += attr("timestamp", r.started_at);
  out += ">\n" + render_properties(r);
  for (const Case& c : cases) out += render_case(c, name);
  // The console table, for readers of the raw report and consumers that show system-out.
  out += "    <system-out>" + xml_escape(console_report(r), false) + "</system-out>\n";
  return out + "  </testsuite>\n";
}

}  // namespace

std::string junit_report(const GateResult& result) {
  std::vector<Case> cases = cases_of(result);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites" + attr("name", "perfgate") +
         counts_attrs(count(cases)) + attr("time", xml_time(result.duration_s)) + ">\n" +
         render_suite(result, cases) + "</testsuites>\n";
}

}  // namespace perfgate
