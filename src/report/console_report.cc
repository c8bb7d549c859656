#include "perfgate/report/console_report.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "perfgate/host/host_sampler.h"
#include "perfgate/host/saturation.h"
#include "perfgate/report/report_format.h"

namespace perfgate {
namespace {

using report::one_line;

constexpr size_t kColumns = 9;
using Row = std::array<std::string, kColumns>;
// Figures line up on their decimal point when right-aligned; words read left to right.
constexpr std::array<bool, kColumns> kRightAligned = {false, true, true,  true, true,
                                                      true,  true, false, false};

// "change" is what the two figures say; "estimate" is the test's, the centre
// of the interval beside it and what the limits judge (they differ where the
// test looks at pairs or windows, not at the two figures).
Row header_row(const GateResult& r) {
  return {"metric", "baseline", "now",
          "change", "estimate", report::level(r.confidence) + "% CI",
          "p",      "limit",    "verdict"};
}

// Ungated metrics are shown for information: they have no verdict of their own.
Row row_of(const MetricCheck& c) {
  return {one_line(c.metric),
          c.baseline ? report::format_value(*c.baseline, c.unit) : "-",
          report::format_value(c.value, c.unit),
          report::format_change(c.change_pct),
          report::format_estimate(c.test),
          report::format_interval(c.test),
          report::format_p(c.test),
          report::format_limits(c),
          c.gated ? std::string(to_string(c.verdict)) : "-"};
}

// Columns on screen, not bytes: a replaced character (U+FFFD) takes three bytes.
size_t display_width(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string padded(const std::string& cell, size_t width, bool right) {
  std::string pad(width - display_width(cell), ' ');
  return right ? pad + cell : cell + pad;
}

std::string render_row(const Row& row, const std::array<size_t, kColumns>& width) {
  std::string line;
  for (size_t i = 0; i < kColumns; ++i) line += "  " + padded(row[i], width[i], kRightAligned[i]);
  line.erase(line.find_last_not_of(' ') + 1);  // no trailing blanks in the log
  return line + "\n";
}

std::string render_table(const std::vector<Row>& rows) {
  std::array<size_t, kColumns> width{};
  for (const Row& row : rows)
    for (size_t i = 0; i < kColumns; ++i) width[i] = std::max(width[i], display_width(row[i]));
  std::string out;
  for (const Row& row : rows) out += render_row(row, width);
  return out;
}

std::string title(const GateResult& r) {
  std::vector<std::string> facts;
  if (!r.profile_source.empty()) facts.push_back("profile " + one_line(r.profile_source));
  if (!r.profile_hash.empty()) facts.push_back("hash " + report::short_id(r.profile_hash, 8));
  std::string name = r.profile_name.empty() ? "(unnamed profile)" : one_line(r.profile_name);
  std::string text = "perfgate: " + name;
  if (!facts.empty()) text += " (" + report::join(facts, ", ") + ")";
  return text + "\n";
}

std::string load_line(const GateResult& r) {
  std::string text = "  engine " + one_line(r.engine) + ", " + report::plural(r.threads, "thread") +
                     " x " + report::plural(r.connections, "connection") + ", " +
                     std::to_string(r.iterations_kept) + " of " +
                     std::to_string(r.iterations_total) + " iterations kept";
  if (r.iterations_kept > 0)
    text += " (" + report::fixed(r.kept_seconds / r.iterations_kept, 2) + "s each)";
  return text + "\n";
}

// The breakdown only when there is something to break down: a clean run stays one line.
std::string socket_errors(const ErrorCounts& e) {
  std::string text = report::plural(static_cast<int64_t>(e.total()), "socket error");
  if (e.total() == 0) return text;
  return text + " (connect " + std::to_string(e.connect) + ", read " + std::to_string(e.read) +
         ", write " + std::to_string(e.write) + ", timeout " + std::to_string(e.timeout) +
         ", other " + std::to_string(e.other) + ")" +
         (e.invalid > 0 ? "; " + e.invalid_text() : "");
}

// Which statuses failed, by class, when any did: a wrong path reads "4xx x 12000".
std::string failed_statuses(const StatusCounts& s) {
  std::string text = std::to_string(s.failed()) + " with a status not counted as success";
  return s.failed() == 0 ? text : text + " (" + s.failed_text() + ")";
}

std::string traffic_line(const IterationStats& t) {
  return "  " + report::plural(static_cast<int64_t>(t.responses), "response") + ", " +
         socket_errors(t.errors) + ", " + failed_statuses(t.statuses) + ", " +
         std::to_string(t.bytes_read) + " bytes read\n";
}

// Whose CPU counted as the service's, and how perfgate knew.
std::string service_line(const HostSummary& h) {
  if (!h.service) return "";
  std::string cost;
  if (h.service_cpu_us_per_request)
    cost = "; " + report::fixed(*h.service_cpu_us_per_request, 1) + " us CPU per request";
  return "  service: " + one_line(h.service->describe()) + cost + "\n";
}

// Where the scheduler kept the load and the service: a run "apart" and one
// "mixed" cost the service differently per request on a few cores.
std::string placement_text(const HostSummary& h) {
  if (!h.shared_cpu_pct) return "";
  auto share = placing_share(h.shared_cpu_pct, h.samples);
  return "; load and service on one CPU in " + report::fixed(*h.shared_cpu_pct, 0) +
         "% of samples (" + (share ? placement_class(*share) : "too few samples to place") + ")";
}

// Who was busy while measuring: the first thing to read when a run looks odd.
std::string load_machine_line(const HostSummary& h) {
  if (h.samples == 0) return "";
  return "  load machine: host CPU " + report::fixed(h.host_cpu_mean_pct, 0) + "% mean, " +
         report::fixed(h.host_cpu_max_pct, 0) + "% max; busiest load thread " +
         report::fixed(h.generator_thread_max_pct, 0) + "% of a core; other processes " +
         report::fixed(h.foreign_cpu_max_pct, 0) + "%; steal " + report::fixed(h.steal_max_pct, 0) +
         "%" + placement_text(h) + "\n" + service_line(h);
}

// A merged run's shards, one line each: which machine made how much of the load.
std::string shard_lines(const std::vector<ShardSummary>& shards) {
  std::string text;
  for (const auto& s : shards)
    text += "  shard " + s.spec.text() + ": " + one_line(s.source) + ", host " + s.host_key + ", " +
            report::plural(s.connections, "connection") + ", " +
            report::plural(static_cast<int64_t>(s.responses), "response") + ", " +
            report::fixed(s.throughput_rps, 1) + " req/s" + (s.saturated ? ", saturated" : "") +
            "\n";
  return text;
}

std::string facts(const GateResult& r) {
  std::string text;
  if (!r.target_url.empty()) text += "  target " + one_line(r.target_url) + "\n";
  if (r.iterations_total > 0)
    text += load_line(r) + traffic_line(r.totals) + shard_lines(r.shards) +
            load_machine_line(r.host_summary);
  return text;
}

std::string notes(const GateResult& r) {
  std::string text;
  for (const auto& note : r.notes) {
    bool warning = std::find(r.warnings.begin(), r.warnings.end(), note) != r.warnings.end();
    text += (warning ? "warning: " : "note: ") + one_line(note) + "\n";
  }
  if (r.saturation.saturated && r.saturation.reasons.empty())
    text += "saturated: the load machine was the bottleneck\n";
  for (const auto& reason : r.saturation.reasons) text += "saturated: " + one_line(reason) + "\n";
  for (const auto& advice : saturation_advice(r.saturation))
    text += "what to do: " + one_line(advice) + "\n";
  return text;
}

std::string verdict_line(const GateResult& r) {
  std::string text = "verdict: " + report::verdict_word(r.verdict) + " (exit " +
                     std::to_string(to_int(r.exit_code)) + ")";
  if (r.verdict == Verdict::kError) return "error: " + one_line(r.error) + "\n" + text + "\n";
  return text + " - " + report::comparison_summary(r) + "\n";
}

}  // namespace

std::string console_report(const GateResult& result) {
  std::string text = title(result) + facts(result);
  if (!result.checks.empty()) {
    std::vector<Row> rows = {header_row(result)};
    for (const MetricCheck& check : result.checks) rows.push_back(row_of(check));
    text += render_table(rows);
    if (auto detectable = report::detectable_changes(result); !detectable.empty())
      text += detectable + "\n";
    text += report::inconclusive_lines(result.checks);
  }
  return text + notes(result) + verdict_line(result);
}

}  // namespace perfgate
