// `perfgate history`, `compare`, `accept` and `reject`: working with the stored
// runs without new load.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "perfgate/cli/command.h"
#include "perfgate/core/error.h"
#include "perfgate/core/printable.h"
#include "perfgate/gate/gate.h"
#include "perfgate/gate/progress.h"
#include "perfgate/gate/store_access.h"
#include "perfgate/host/host_sampler.h"
#include "perfgate/profile/json_text.h"
#include "perfgate/profile/text_limits.h"
#include "perfgate/report/report_format.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/store_maintenance.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct HistoryOptions {
  fs::path store_path = kDefaultStorePath;
  std::string profile_name;
  std::string branch;
  int limit = 20;
  bool json = false;
  bool change_points = false;
};

// Reading commands never create a store: a mistyped --store must not leave one.
BaselineStore open_existing(const fs::path& path, BaselineStore::Mode mode) {
  return open_existing_store(path, mode);
}

// Why a run is not a baseline, or what a person said about it: one word each.
std::vector<std::string> flags_of(const RunRecord& run) {
  std::vector<std::string> flags;
  if (run.status != "complete") flags.push_back(run.status);
  if (run.kind != "gate") flags.push_back(run.kind);
  if (run.saturation.saturated) flags.push_back("saturated");
  if (!run.review.state.empty()) flags.push_back(run.review.state);
  if (run.eligible_as_baseline()) flags.push_back("baseline");
  // Runs of the other placement class are no baseline for it (select_baseline).
  if (auto shared = stored_shared_cpu_pct(run)) flags.push_back(placement_class(*shared));
  return flags;
}

constexpr std::array<const char*, 3> kKeyMetrics = {"throughput_rps", "latency_p99_ms",
                                                    "error_rate_pct"};

json run_json(const RunRecord& run, const RunFigures& figures) {
  json metrics = json::object();
  for (const auto& [key, value] : figures.summary) metrics[key] = value;
  auto shared = stored_shared_cpu_pct(run);
  return {{"run_id", run.id},
          {"created_at", run.created_at},
          {"profile", run.profile_name},
          {"profile_hash", run.profile_hash},
          {"branch", run.ci.branch},
          {"baseline_branch", run.ci.baseline_branch},
          {"commit", run.ci.commit},
          {"pipeline_id", run.ci.pipeline_id},
          {"verdict", std::string(to_string(run.verdict))},
          {"status", run.status},
          {"kind", run.kind},
          {"saturation",
           {{"saturated", run.saturation.saturated}, {"reasons", run.saturation.reasons}}},
          {"review",
           {{"state", run.review.state},
            {"reason", run.review.reason},
            {"by", run.review.by},
            {"at", run.review.at}}},
          {"baseline_eligible", run.eligible_as_baseline()},
          {"engine", run.engine},
          {"host_key", run.host.key()},
          {"shared_cpu_pct", shared ? json(*shared) : json(nullptr)},
          {"placement_class", shared ? json(placement_class(*shared)) : json(nullptr)},
          {"metrics", metrics}};
}

// The change points of the default branch's history of each series (profile,
// hash, host) among `runs`, whatever the listing's own branch and limit.
std::vector<RunChangePoint> change_points_of(BaselineStore& store,
                                             const std::vector<RunRecord>& runs) {
  std::vector<RunChangePoint> out;
  std::set<std::string> seen;
  for (const auto& newest : runs) {
    if (!seen.insert(newest.profile_name + '\n' + newest.profile_hash + '\n' + newest.host.key())
             .second)
      continue;
    auto history = searched_history(store, newest);
    if (history.empty()) continue;
    auto found = history_change_points(history, gated_metrics(history.back()));
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

json change_point_json(const RunChangePoint& cp) {
  return {{"metric", cp.metric},
          {"run_id", cp.run_id},
          {"commit", cp.commit},
          {"index", cp.index},
          {"size_pct", std::isnan(cp.size_pct) ? json(nullptr) : json(cp.size_pct)},
          {"p", cp.p}};
}

// One line per change point: the run that opened the new level, its commit,
// the step and its p-value.
std::string change_point_line(const RunChangePoint& cp) {
  return "change point: run " + std::to_string(cp.run_id) +
         (cp.commit.empty() ? "" : " (commit " + report::short_id(cp.commit, 7) + ")") + " " +
         report::one_line(cp.metric) + " " + report::format_step(cp.size_pct) +
         " p=" + report::fixed(cp.p, 3) + "\n";
}

// A cell of the table: one line, and short, whatever the store holds (a
// newline in a commit broke the table; a 200 MB branch made every line 200 MB).
std::string cell(std::string_view text, size_t max_bytes = 64) {
  std::string line = report::one_line(text);
  if (line.size() <= max_bytes) return line;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return line.substr(0, cut) + "...";
}

std::string table_line(const std::vector<std::string>& cells, const std::vector<size_t>& width) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    std::string pad(width[i] - std::min(width[i], cells[i].size()), ' ');
    line += (i ? "  " : "") + (i >= 5 && i <= 7 ? pad + cells[i] : cells[i] + pad);
  }
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

using EachRun = std::function<void(const std::function<void(const RunRecord&)>&)>;
using Opened = std::function<json(const RunRecord&)>;

// `history --change-points`: the change points alone.
int print_change_points(const std::vector<RunChangePoint>& points, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& cp : points) out.push_back(change_point_json(cp));
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  for (const auto& cp : points) std::cout << change_point_line(cp);
  if (points.empty()) std::cout << "(no change points)\n";
  return 0;
}

// Streamed, element by element, as json::array().dump(2) would print it.
int print_history_json(const EachRun& each_run, const Opened& opened) {
  bool first = true;
  std::cout << "[";
  each_run([&](const RunRecord& run) {
    json one = run_json(run, run_figures_of(run));
    one["change_points"] = opened(run);
    std::string text = json_text(one, 2);
    for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 3))
      text.replace(at, 1, "\n  ");
    std::cout << (first ? "\n  " : ",\n  ") << text;
    first = false;
  });
  std::cout << (first ? "]\n" : "\n]\n");
  return 0;
}

std::vector<std::vector<std::string>> history_rows(const EachRun& each_run, const Opened& opened) {
  std::vector<std::vector<std::string>> rows = {{"run", "created", "profile", "branch", "commit",
                                                 "req/s", "p99 ms", "errors %", "verdict",
                                                 "flags"}};
  each_run([&](const RunRecord& run) {
    auto figures = run_figures_of(run).summary;
    auto figure = [&](const char* key, std::string_view unit) {
      auto it = figures.find(key);
      return it == figures.end() ? std::string("-") : report::format_value(it->second, unit);
    };
    auto flags = flags_of(run);
    if (!opened(run).empty()) flags.push_back("change-point");
    rows.push_back({std::to_string(run.id), cell(run.created_at), cell(run.profile_name),
                    cell(run.ci.branch), cell(report::short_id(run.ci.commit, 7)),
                    figure(kKeyMetrics[0], "req/s"), figure(kKeyMetrics[1], "ms"),
                    figure(kKeyMetrics[2], "%"), std::string(to_string(run.verdict)),
                    report::join(flags, ",")});
  });
  return rows;
}

int history(const HistoryOptions& opt) {
  auto store = open_existing(opt.store_path, BaselineStore::Mode::kReadOnly);
  // The runs' rows alone: their figures are stored there, and a 30,000-run
  // history of whole runs held at once took 6 GB.
  auto headers = store.runs(opt.profile_name, opt.branch, opt.limit);
  EachRun each_run = [&](const std::function<void(const RunRecord&)>& use) {
    for (const auto& header : headers) use(header);
  };
  auto points = change_points_of(store, headers);
  if (opt.change_points) return print_change_points(points, opt.json);
  Opened opened = [&](const RunRecord& run) {
    json out = json::array();
    for (const auto& cp : points)
      if (cp.run_id == run.id) out.push_back(change_point_json(cp));
    return out;
  };
  if (opt.json) return print_history_json(each_run, opened);
  auto rows = history_rows(each_run, opened);
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows) std::cout << table_line(row, width);
  if (headers.empty()) std::cout << "(no runs)\n";
  for (const auto& cp : points) std::cout << change_point_line(cp);
  if (auto pruned = pruned_summary(store); !pruned.empty()) std::cout << pruned << "\n";
  return 0;
}

// Who accepted a regression, from the CI's own variables: the audit trail.
std::string reviewer(const EnvLookup& env) {
  for (const char* name : {"GITLAB_USER_LOGIN", "GITHUB_ACTOR", "USER", "LOGNAME"})
    if (auto value = env(name); value && !value->empty()) return *value;
  return "unknown";
}

struct ReviewOptions {
  fs::path store_path = kDefaultStorePath;
  std::string run;  // a run id, or "latest" (accept only)
  std::string branch, profile;
  std::string reason;
};

// Why a run cannot be accepted, or "": only a run that measured the service
// can be its new normal.
std::string not_acceptable(const RunRecord& run) {
  if (run.status != "complete") return "is " + run.status;
  if (run.kind != "gate") return "is a " + run.kind + " run";
  if (run.saturation.saturated) return "was saturated: its figures say nothing about the service";
  return "";
}

// `accept latest`: the newest run (of --branch, --profile) that can be
// accepted, skipping newer ones that cannot (a saturated run, a paired one).
int64_t latest_acceptable(BaselineStore& store, const ReviewOptions& opt) {
  int64_t found = 0;
  int skipped = 0;
  store.each_run(opt.profile, opt.branch, 0, [&](RunRecord&& run) {
    if (found) return;
    // A run the user rejected is not "latest" to accept (issue 50, item 13):
    // `accept ID` takes it back, by its id.
    if (not_acceptable(run).empty() && run.review.state != "rejected")
      found = run.id;
    else
      ++skipped;
  });
  std::string of = opt.branch.empty() ? "" : " of branch " + printable(opt.branch);
  if (!found)
    throw Error("accept latest: no run" + of + " can be accepted (" + std::to_string(skipped) +
                " stored, none a complete, unsaturated gate run that was not rejected)");
  if (skipped)
    std::cout << "accept latest: " << skipped << " newer run" << (skipped == 1 ? "" : "s") << of
              << " cannot be accepted (saturated, paired, rejected or incomplete); taking run "
              << found << "\n";
  return found;
}

int review(const ReviewOptions& opt, const std::string& state, const EnvLookup& env) {
  auto store = open_existing(opt.store_path, BaselineStore::Mode::kReadWrite);
  int64_t id = opt.run == "latest" ? latest_acceptable(store, opt) : std::stoll(opt.run);
  auto run = store.run(id);
  std::string name = "run " + std::to_string(id);
  if (!run) throw Error(opt.store_path.string() + ": no " + name);
  if (auto why = not_acceptable(*run); state == "accepted" && !why.empty())
    throw Error(name + " " + why + "; it cannot be accepted");
  store.set_review(
      id, {state, opt.reason, reviewer(env), utc_timestamp(std::chrono::system_clock::now())});
  std::cout << name << " (profile " << printable(run->profile_name) << ", branch "
            << printable(run->ci.branch) << ", commit "
            << printable(report::short_id(run->ci.commit, 7)) << ") " << state
            << (state == "accepted" ? ": it is the baseline of the runs after it"
                                    : ": it is never a baseline")
            << "\n";
  return 0;
}

void register_history(CommandSet& commands) {
  auto opt = std::make_shared<HistoryOptions>();
  auto* cmd = commands.app().add_subcommand("history", "List stored runs, newest first");
  cmd->add_option("--store", opt->store_path, "Baseline store (SQLite)")->capture_default_str();
  cmd->add_option("--profile", opt->profile_name, "Only runs of this profile");
  cmd->add_option("--branch", opt->branch, "Only runs of this branch");
  cmd->add_option("--limit", opt->limit, "At most this many runs (0: all)")
      ->capture_default_str()
      ->check(whole_number_from(0));
  cmd->add_flag("--json", opt->json, "Print JSON (an array of runs) instead of a table");
  cmd->add_flag("--change-points", opt->change_points,
                "List only the change points of the default branch's history (E-divisive)");
  commands.add(cmd, [opt](const CommandContext&) { return history(*opt); });
}

void register_compare(CommandSet& commands) {
  auto opt = std::make_shared<RunOptions>();
  auto run_id = std::make_shared<int64_t>(0);
  auto* cmd = commands.app().add_subcommand(
      "compare", "Judge a stored run again against the runs before it, without new load");
  cmd->add_option("run", *run_id, "Run id (see perfgate history)")
      ->required()
      ->check(whole_number_from(1));
  cmd->add_option("--store", opt->store_path, "Baseline store (SQLite)")->capture_default_str();
  cmd->add_option_function<int64_t>(
         "--baseline-run", [opt](int64_t id) { opt->baseline_run = id; },
         "Judge against this run alone")
      ->check(whole_number_from(1));
  cmd->add_flag("--any-host", opt->any_host, "Take baselines from runs on any load machine");
  cmd->add_flag("--any-placement", opt->any_placement,
                "Take baselines from runs of either placement class (apart / mixed)");
  cmd->add_option("--junit", opt->junit_path, "Write a JUnit XML report here");
  cmd->add_option("--json", opt->json_path, "Write the JSON result here");
  commands.add(cmd, [opt, run_id](const CommandContext& ctx) {
    // Judged against itself, any run passes: every change is 0 %.
    if (opt->baseline_run == *run_id)
      throw Error("--baseline-run " + std::to_string(*run_id) +
                  ": that is the run being compared, and a run is no baseline of itself; give "
                  "another run (see perfgate history)");
    auto store = open_existing(opt->store_path, BaselineStore::Mode::kReadOnly);
    auto result = rejudge_run(store, *run_id, *opt);
    // Annotations follow where it runs now, not where the stored run ran.
    result.ci.provider = read_ci_context({}, ctx.env).provider;
    write_reports(*opt, result, &std::cout);
    return to_int(result.exit_code);
  });
}

void register_review(CommandSet& commands, const std::string& name, const std::string& state,
                     const std::string& help) {
  auto opt = std::make_shared<ReviewOptions>();
  auto* cmd = commands.app().add_subcommand(name, help);
  bool accept = state == "accepted";
  auto* run = cmd->add_option("run", opt->run,
                              accept ? "Run id (see perfgate history), or latest: the newest run "
                                       "that can be accepted (of --branch, --profile)"
                                     : "Run id (see perfgate history)")
                  ->required();
  run->check(
      [accept](const std::string& value) -> std::string {
        if (accept && value == "latest") return "";
        bool digits = !value.empty() && value.size() <= 18 &&
                      value.find_first_not_of("0123456789") == std::string::npos;
        if (digits && std::stoll(value) > 0) return "";
        return accept ? "must be a run id (a positive number) or latest"
                      : "must be a run id (a positive number)";
      },
      "RUN");
  cmd->add_option("--store", opt->store_path, "Baseline store (SQLite)")->capture_default_str();
  if (accept) {
    cmd->add_option("--branch", opt->branch, "latest: only runs of this branch");
    cmd->add_option("--profile", opt->profile, "latest: only runs of this profile");
  }
  auto* reason = cmd->add_option("--reason", opt->reason, "Why, for the record");
  if (state == "accepted") reason->required();
  commands.add(cmd, [opt, state](const CommandContext& ctx) {
    if (state == "accepted" && opt->reason.find_first_not_of(" \t") == std::string::npos)
      throw Error("--reason: say why the change is intended");
    if (opt->reason.size() > kMaxReasonBytes)
      throw Error("--reason: " + std::to_string(opt->reason.size()) +
                  " bytes, more than the 16 KiB a stored reason may hold");
    return review(*opt, state, ctx.env);
  });
}

}  // namespace

void register_history_command(CommandSet& commands) {
  register_history(commands);
  register_compare(commands);
  register_review(commands, "accept", "accepted",
                  "Accept a run's regression as intended: it becomes the new baseline");
  register_review(commands, "reject", "rejected", "Keep a run from ever being a baseline");
}

}  // namespace perfgate
