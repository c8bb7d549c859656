// `perfgate report --html` and `perfgate export`: views of the stored runs.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>

#include "perfgate/cli/command.h"
#include "perfgate/core/error.h"
#include "perfgate/core/printable.h"
#include "perfgate/gate/gate.h"
#include "perfgate/gate/store_access.h"
#include "perfgate/report/benchmark_export.h"
#include "perfgate/report/chart_sample.h"
#include "perfgate/report/html_report.h"
#include "perfgate/report/output_file.h"
#include "perfgate/store/baseline_store.h"
#include "perfgate/store/store_maintenance.h"
#include "perfgate/store/stored_run.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

// Runs a chart draws besides every failed and saturated one: enough to show the
// trend, few enough that the page of a long history stays a couple of MB at most.
constexpr size_t kChartedRuns = 400;

struct ReportOptions {
  fs::path html_path;
  fs::path store_path = kDefaultStorePath;
  std::string profile;  // empty = the latest run's profile
  std::string branch;   // empty = every branch
  int limit = 0;        // 0 = the whole history
};

struct ExportOptions {
  std::string format = "github-action-benchmark";
  std::string tool = "customSmallerIsBetter";
  fs::path store_path = kDefaultStorePath;
  std::string profile;
  fs::path output;  // empty = stdout
};

// Reading must never create a store: a typo in --store is an error, not an empty report.
BaselineStore open_existing(const fs::path& path) {
  return open_existing_store(path, BaselineStore::Mode::kReadOnly);
}

void write_text(const fs::path& store, const fs::path& path, const char* flag,
                const std::string& text) {
  OutputGuard().store(store).check(path, flag);
  write_output_file(path, text);
}

std::vector<RunRecord> newest_first(BaselineStore& store, const std::string& profile, int limit) {
  auto runs = store.runs(profile, limit);
  if (runs.empty())
    throw Error(store.path().string() + ": no runs" +
                (profile.empty() ? "" : " of profile \"" + profile + "\""));
  return runs;
}

// The rows (no iterations) of one series: the latest run's profile and hash
// (another hash is another test), optionally one branch, oldest first. Only the
// latest keeps its profile text (its limits draw the band): memory stays small
// for a history of any length.
std::vector<RunRecord> series_rows(BaselineStore& store, const ReportOptions& opt) {
  std::vector<RunRecord> rows;
  std::optional<std::pair<std::string, std::string>> series;  // name, hash
  // The branch's own newest run picks the series: the store's newest, of
  // another hash on another branch, left none to draw (issue 41, item 6).
  store.each_run(
      opt.profile, opt.branch, opt.limit,
      [&](RunRecord&& run) {
        if (!series) series.emplace(run.profile_name, run.profile_hash);
        if (run.profile_name != series->first || run.profile_hash != series->second) return;
        if (!rows.empty()) run.profile_json = std::string();
        rows.push_back(std::move(run));
      },
      BaselineStore::Depth::kListing);
  if (!series)
    throw Error(store.path().string() + ": no runs" +
                (opt.profile.empty() ? "" : " of profile \"" + opt.profile + "\"") +
                (opt.branch.empty() ? "" : " on branch \"" + opt.branch + "\" (see --branch)"));
  std::reverse(rows.begin(), rows.end());
  return rows;
}

// The whole history, drawn from a sample of it when long (chart_sample.h),
// from the figures stored in the runs' rows: no iterations are read.
HtmlReportInput report_input(BaselineStore& store, const ReportOptions& opt) {
  auto rows = series_rows(store, opt);
  auto picked = chart_sample(rows, kChartedRuns, baseline_index(rows));
  std::vector<RunRecord> runs;
  for (size_t i : picked) runs.push_back(std::move(rows[i]));
  store.load_figures(runs);
  HtmlReportInput in = html_input(runs);
  for (size_t k = 0; k < picked.size() && rows.size() > runs.size(); ++k)
    in.runs[k].position = picked[k];
  in.history_size = rows.size();
  in.pruned = pruned_summary(store);
  return in;
}

int run_report(const ReportOptions& opt) {
  OutputGuard().store(opt.store_path).check(opt.html_path, "--html");
  auto store = open_existing(opt.store_path);
  auto in = report_input(store, opt);
  write_text(opt.store_path, opt.html_path, "--html", html_report(in));
  std::cout << "wrote " << printable(opt.html_path.string()) << " (" << in.history_size
            << " runs of \"" << printable(in.profile_name) << "\"";
  if (in.history_size > in.runs.size()) std::cout << ", " << in.runs.size() << " charted";
  std::cout << ")\n";
  return 0;
}

int run_export(const ExportOptions& opt) {
  OutputGuard().store(opt.store_path).check(opt.output, "--output");
  auto store = open_existing(opt.store_path);
  auto latest = store.run(newest_first(store, opt.profile, 1).front().id);
  if (!latest) throw Error(opt.store_path.string() + ": the latest run vanished while reading");
  Better direction = opt.tool == "customBiggerIsBetter" ? Better::kHigher : Better::kLower;
  std::string text = github_action_benchmark(*latest, direction).dump(2) + "\n";
  if (opt.output.empty())
    std::cout << text;
  else
    write_text(opt.store_path, opt.output, "--output", text);
  return 0;
}

void register_report(CommandSet& commands) {
  auto opt = std::make_shared<ReportOptions>();
  auto* cmd = commands.app().add_subcommand("report", "Write an HTML report of the stored runs");
  cmd->add_option("--html", opt->html_path, "Write the HTML report here")->required();
  cmd->add_option("--store", opt->store_path, "Baseline store (SQLite)")->capture_default_str();
  cmd->add_option("--profile", opt->profile, "Profile name (default: the latest run's)");
  cmd->add_option("--branch", opt->branch, "Only runs of this branch (default: all)");
  cmd->add_option("--limit", opt->limit,
                  "At most this many recent runs (0: all; a long history is charted from a "
                  "sample that keeps every failed and saturated run)")
      ->capture_default_str()
      ->check(whole_number_from(0));
  commands.add(cmd, [opt](const CommandContext&) { return run_report(*opt); });
}

void register_export(CommandSet& commands) {
  auto opt = std::make_shared<ExportOptions>();
  auto* cmd = commands.app().add_subcommand("export", "Export the latest stored run");
  cmd->add_option("--format", opt->format, "Output format")
      ->check(CLI::IsMember({"github-action-benchmark"}))
      ->capture_default_str();
  cmd->add_option("--tool", opt->tool,
                  "github-action-benchmark's tool: the metrics of one direction")
      ->check(CLI::IsMember({"customSmallerIsBetter", "customBiggerIsBetter"}))
      ->capture_default_str();
  cmd->add_option("--store", opt->store_path, "Baseline store (SQLite)")->capture_default_str();
  cmd->add_option("--profile", opt->profile, "Profile name (default: the latest run's)");
  cmd->add_option("--output", opt->output, "Write here instead of stdout");
  commands.add(cmd, [opt](const CommandContext&) { return run_export(*opt); });
}

}  // namespace

void register_report_command(CommandSet& commands) {
  register_report(commands);
  register_export(commands);
}

}  // namespace perfgate
