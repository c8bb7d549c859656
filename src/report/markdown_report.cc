#include "perfgate/report/markdown_report.h"

#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfgate/report/report_format.h"

namespace perfgate {
namespace {

using Facts = std::vector<std::pair<std::string, std::string>>;

bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// GitHub never reads an underscore between letters or digits as emphasis, so
// metric keys like throughput_rps stay readable in the raw summary.
bool is_intraword_underscore(const std::string& text, size_t i) {
  return text[i] == '_' && i > 0 && i + 1 < text.size() && is_alnum(text[i - 1]) &&
         is_alnum(text[i + 1]);
}

// Escaped text never starts a line here (cells start with "| ", list items with a
// label), so only inline syntax needs escaping: emphasis, code, links, raw HTML,
// entities, table pipes, strikethrough and GitHub's $math$.
//
// A branch name, commit subject or profile name may hold "@someone" or "#12":
// in a pull request comment GitHub would notify that user or link that issue.
// A WORD JOINER (U+2060) after the '@' or '#' breaks the reference and stays
// invisible, so the text reads as written (backticks would show it as code and
// need escaping of their own; a backslash does not stop a mention).
std::string md(std::string_view raw) {
  std::string text = report::one_line(raw);
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    bool active = std::string_view("\\`*_[]<>|~&$").find(text[i]) != std::string_view::npos;
    if (active && !is_intraword_underscore(text, i)) out += '\\';
    out += text[i];
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if ((text[i] == '@' && (is_alnum(next) || next == '-')) ||
        (text[i] == '#' && std::isdigit(static_cast<unsigned char>(next))))
      out += "\u2060";
  }
  return out;
}

std::string verdict_cell(const MetricCheck& c) {
  if (!c.gated) return "-";
  std::string word(to_string(c.verdict));
  return c.verdict == Verdict::kPass ? word : "**" + word + "**";
}

std::string table_row(const std::vector<std::string>& cells) {
  return "| " + report::join(cells, " | ") + " |\n";
}

std::string metrics_table(const std::vector<MetricCheck>& checks, double confidence) {
  std::string out = table_row({"metric", "baseline", "now", "change", "estimate",
                               report::level(confidence) + "% CI", "p", "limit", "verdict"});
  out += "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | :--- | :--- |\n";
  for (const MetricCheck& c : checks) {
    std::string base = c.baseline ? report::format_value(*c.baseline, c.unit) : "-";
    out += table_row({md(c.metric), base, report::format_value(c.value, c.unit),
                      report::format_change(c.change_pct), report::format_estimate(c.test),
                      report::format_interval(c.test), md(report::format_p(c.test)),
                      md(report::format_limits(c)), verdict_cell(c)});
  }
  return out + "\n";
}

// The status word in the heading: a job page lists several summaries, and a
// word reads in every theme and screen reader where an emoji may not.
std::string heading(const GateResult& r) {
  std::string name = r.profile_name.empty() ? "(unnamed profile)" : md(r.profile_name);
  std::string what = r.verdict == Verdict::kError ? "no verdict could be made: " + md(r.error)
                                                  : md(report::comparison_summary(r));
  return "## perfgate " + name + ": " + report::verdict_word(r.verdict) + "\n\nExit code " +
         std::to_string(to_int(r.exit_code)) + ", " + what + ".\n\n";
}

// The headline of each warn and fail, so the reader sees why without reading the table.
std::string findings(const std::vector<MetricCheck>& checks) {
  std::string out;
  for (const MetricCheck& c : checks)
    if (c.gated && c.verdict != Verdict::kPass)
      out += "- " + verdict_cell(c) + ": " + md(c.inconclusive ? c.message : report::headline(c)) +
             "\n";
  return out.empty() ? "" : out + "\n";
}

std::string notes(const GateResult& r) {
  std::string out;
  for (const auto& note : r.notes) out += "- Note: " + md(note) + "\n";
  if (!out.empty()) out += "\n";
  if (!r.saturation.saturated) return out;
  out +=
      "**Saturated:** the load machine was the bottleneck, so these figures say little about "
      "the service: fails became warns, and this run will not become a baseline.\n\n";
  for (const auto& reason : r.saturation.reasons) out += "- Reason: " + md(reason) + "\n";
  return r.saturation.reasons.empty() ? out : out + "\n";
}

std::string counts(const ErrorCounts& e) {
  return "connect " + std::to_string(e.connect) + ", read " + std::to_string(e.read) + ", write " +
         std::to_string(e.write) + ", timeout " + std::to_string(e.timeout) + ", other " +
         std::to_string(e.other);
}

std::string counts(const StatusCounts& s) {
  std::vector<std::string> parts;
  for (int cls = 1; cls <= 5; ++cls)
    parts.push_back(std::to_string(cls) + "xx " + std::to_string(s.of_class(cls)));
  parts.push_back("other " + std::to_string(s.of_class(0)));
  return report::join(parts, ", ");
}

Facts run_facts(const GateResult& r) {
  auto id = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-"; };
  return {{"profile", r.profile_name},
          {"profile file", r.profile_source},
          {"profile hash", r.profile_hash},
          {"target", r.target_url},
          {"started", r.started_at},
          {"duration", report::fixed(r.duration_s, 3) + " s"},
          {"run", id(r.run_id)},
          {"baseline run", id(r.baseline_run_id)},
          {"baseline commit", r.baseline_commit},
          {"commit", r.ci.commit},
          {"branch", r.ci.branch},
          {"baseline branch", r.ci.baseline_branch}};
}

Facts load_facts(const GateResult& r) {
  Facts facts = {
      {"engine", r.engine},
      {"threads x connections", std::to_string(r.threads) + " x " + std::to_string(r.connections)},
      {"iterations kept", std::to_string(r.iterations_kept) + " of " +
                              std::to_string(r.iterations_total) + " (" +
                              report::fixed(r.kept_seconds, 2) + " s)"},
      {"responses", std::to_string(r.totals.responses)},
      {"bytes read", std::to_string(r.totals.bytes_read)},
      {"socket errors", counts(r.totals.errors)},
      {"status classes", counts(r.totals.statuses)}};
  if (const auto& s = r.host_summary.service) {
    std::string cost;
    if (r.host_summary.service_cpu_us_per_request)
      cost = "; " + report::fixed(*r.host_summary.service_cpu_us_per_request, 1) +
             " us CPU per request";
    facts.emplace_back("service", s->describe() + cost);
  }
  return facts;
}

Facts host_facts(const HostFingerprint& host) {
  Facts facts = {{"host key", host.key()}};
  for (const auto& [name, value] : host.fields) facts.emplace_back("host " + name, value);
  return facts;
}

// Blank lines around the table: GitHub renders Markdown inside <details> only then.
std::string details(const GateResult& r) {
  std::string out = "<details>\n<summary>Run, load and host</summary>\n\n";
  out += table_row({"fact", "value"}) + "| :--- | :--- |\n";
  for (const Facts& facts : {run_facts(r), load_facts(r), host_facts(r.host)})
    for (const auto& [name, value] : facts)
      if (!value.empty()) out += table_row({md(name), md(value)});
  return out + "\n</details>\n";
}

}  // namespace

std::string markdown_report(const GateResult& result) {
  std::string text = heading(result);
  if (!result.checks.empty())
    text += metrics_table(result.checks, result.confidence) + findings(result.checks);
  if (auto detectable = report::detectable_changes(result); !detectable.empty()) {
    detectable[0] = 'S';
    text += md(detectable) + ".\n\n";
  }
  return text + notes(result) + details(result);
}

}  // namespace perfgate
