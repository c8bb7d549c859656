#include "perfgate/gate/gate.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "cost_phase.h"
#include "gate_pipeline.h"
#include "perfgate/gate/store_access.h"
#include "perfgate/host/host_sampler.h"
#include "perfgate/profile/ci_context.h"
#include "perfgate/report/console_report.h"
#include "perfgate/report/github_annotations.h"
#include "perfgate/report/gitlab_report.h"
#include "perfgate/report/json_report.h"
#include "perfgate/report/junit_report.h"
#include "perfgate/report/markdown_report.h"
#include "perfgate/report/openmetrics_report.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/baseline_store.h"
#include "sequential_run.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A pull/merge request or a merge queue's run with nothing to compare with
// would pass unjudged (a hosted runner's new host fingerprint is enough): it
// warns instead, unless the user said --no-baseline=pass.
void warn_without_baseline(const RunOptions& options, const CiContext& ci, GateResult& r) {
  if (r.baseline_run_id || !ci.change_request) return;
  std::string why = "no comparable baseline on branch " + ci.baseline_branch +
                    " (same profile hash and host fingerprint): this " + ci.change_kind +
                    " was not judged";
  if (options.pass_without_baseline) {
    r.notes.push_back(why + "; passing as --no-baseline=pass asks");
    return;
  }
  r.notes.push_back(why + "; warn, not pass (--no-baseline=pass to let it pass)");
  if (r.verdict == Verdict::kPass) {
    r.verdict = Verdict::kWarn;
    r.exit_code = ExitStatus::kWarn;
  }
}

void write_file(const OutputGuard& guard, const fs::path& path, const char* flag,
                const std::string& text) {
  if (path.empty()) return;
  guard.check(path, flag);
  write_output_file(path, text);
}

// A stored-mode run's measurement, its disturbed minority of windows dropped
// (drop_disturbed_windows).
MeasuredRun screened_run(const Profile& profile, Measurement m, GateRun& gate,
                         const HostFingerprint& host, std::string& note) {
  note = drop_disturbed_windows(m, profile.saturation);
  if (!note.empty()) spdlog::info("load machine: {}", note);
  return measured(profile, m, gate.partial().ci, host, gate.partial().started_at);
}

}  // namespace

GateResult judged(const Profile& profile, const RunRecord& rec, const RunFigures& now,
                  const BaselineSelection& selection,
                  const std::function<double(double)>& look_level,
                  std::optional<double> estimate_level) {
  const auto& base = selection.baseline;
  const auto& drift = selection.drift_reference;
  DecisionSettings settings{profile.baseline.confidence, look_level, planned_cost_family(profile),
                            estimate_level};
  auto judgement = judge(now, base ? &base->sample : nullptr, profile.thresholds, rec.saturation,
                         settings, drift ? &drift->sample : nullptr);
  add_cost_checks(judgement, rec.cost, &selection.cost, profile.thresholds, cost_looks(profile));
  GateResult r = assemble(profile, rec, judgement, selection);
  if (auto note = cost_note(rec.cost); !note.empty()) r.notes.push_back(note);
  return r;
}

bool inconclusive_placement(const BaselineSelection& selection, GateResult& r) {
  if (selection.incomparable.empty() || r.verdict == Verdict::kError) return false;
  r.notes.insert(r.notes.begin(), selection.incomparable);
  if (r.verdict == Verdict::kPass) {
    r.verdict = Verdict::kWarn;
    r.exit_code = ExitStatus::kWarn;
  }
  return true;
}

BaselineSelection choose_baseline(const RunOptions& options, std::optional<BaselineStore>& store,
                                  const Profile& profile, const CiContext& ci,
                                  const HostFingerprint& host,
                                  std::optional<double> shared_cpu_pct) {
  if (!store) {
    if (options.baseline_run)
      throw Error("--baseline-run " + std::to_string(*options.baseline_run) + ": no store at " +
                  options.store_path.string());
    return {};
  }
  BaselineQuery query{profile.name, profile.hash, ci.baseline_branch,
                      options.any_host ? "" : host.key()};
  BaselinePolicy policy{profile.baseline.window, profile.baseline.drift_window,
                        options.baseline_run};
  if (shared_cpu_pct && !options.any_placement) {
    policy.placement_class = placement_class(*shared_cpu_pct);
    policy.shared_cpu_pct = *shared_cpu_pct;
  }
  auto selection = select_baseline(*store, query, policy);
  if (selection.baseline)
    spdlog::info("baseline: {} run(s) of branch {}, newest run {}",
                 selection.baseline->run_ids.size(), ci.baseline_branch,
                 selection.baseline->run_ids.front());
  return selection;
}

GateResult judge_and_store(const RunOptions& options, std::optional<BaselineStore>& store,
                           const Profile& profile, const BaselineSelection& selection,
                           RunRecord rec, const RunFigures& now) {
  GateResult r = judged(profile, rec, now, selection);
  rec.verdict = r.verdict;  // as measured: a run that merely lacked a baseline may become one
  rec.regressed = shows_regression(r.checks);  // an undecided warn is no regression
  if (!inconclusive_placement(selection, r)) warn_without_baseline(options, rec.ci, r);
  if (auto note = unstarted_service_note(profile, rec.ci); !note.empty()) r.notes.push_back(note);
  if (!options.record) {
    r.notes.push_back("not recorded (--no-record)");
    return r;
  }
  if (!store) store = BaselineStore::open(options.store_path);
  r.run_id = record_or_keep(*store, {rec}, [&] { return std::vector{store->record(rec)}; }).front();
  r.recorded = true;
  rec.id = *r.run_id;
  note_new_levels(*store, rec, r.notes);
  if (!r.baseline_run_id && !rec.ci.change_request)
    r.notes.push_back(rec.eligible_as_baseline()
                          ? "no baseline yet: this run becomes the baseline"
                          : "no baseline yet, and this run is not eligible to become one");
  return r;
}

std::optional<WallTime> start_time(const RunOptions& options) {
  if (options.start_at.empty()) return std::nullopt;
  return parse_start_at(options.start_at);
}

void write_reports(const RunOptions& options, const OutputGuard& guard, const GateResult& r,
                   std::ostream* out) {
  if (out) *out << console_report(r);
  // Errors are annotated where the CLI prints them, whatever failed.
  if (out && r.ci.provider == "github" && r.verdict != Verdict::kError)
    *out << github_annotations(r);
  write_file(guard, options.junit_path, "--junit", junit_report(r));
  if (!options.json_path.empty())
    write_file(guard, options.json_path, "--json", json_report(r).dump(2) + "\n");
  write_file(guard, options.gitlab_load_performance_path, "--gitlab-load-performance",
             gitlab_load_performance(r));
  write_file(guard, options.openmetrics_path, "--openmetrics", openmetrics(r));
  // --summary does not turn the step summary off: a job page that shows
  // nothing looks like a job that did nothing. Both get it, once each.
  bool summary_is_step_summary = !options.summary_path.empty() && !r.ci.summary_path.empty() &&
                                 same_output_file(options.summary_path, r.ci.summary_path);
  if (!summary_is_step_summary)
    write_file(guard, options.summary_path, "--summary", markdown_report(r));
  if (!r.ci.summary_path.empty()) {
    // GitHub shows the step summary on the job page; it expects appends.
    guard.check(r.ci.summary_path, "GITHUB_STEP_SUMMARY");
    append_output_file(r.ci.summary_path, markdown_report(r));
  }
}

void write_reports(const RunOptions& options, const GateResult& result, std::ostream* out) {
  OutputGuard guard;
  guard.store(options.store_path).input(options.profile_path, "the profile");
  write_reports(options, guard, result, out);
}

MeasuredRun measure_run(const Profile& profile, const CiContext& ci, const HostFingerprint& host,
                        const std::atomic<bool>& stop, std::optional<WallTime> start_at) {
  auto started_at = utc_now();
  Measurement m = measure_load(profile, stop, start_at);
  if (m.aborted) throw Error("interrupted by a signal; the service was stopped");
  return measured(profile, m, ci, host, started_at);
}

ExitStatus run_gate(const RunOptions& options, const EnvLookup& env, std::ostream& out,
                    const std::atomic<bool>& stop) {
  return run_gate(options, env, out, stop, Measurer{});
}

ExitStatus run_gate(const RunOptions& options, const EnvLookup& env, std::ostream& out,
                    const std::atomic<bool>& stop, const Measurer& measurer) {
  Profile profile = load_profile(options.profile_path, env);
  if (options.shard) return run_shard(options, profile, env, out, stop, measurer);
  if (profile.paired) return run_paired(options, profile, env, out, stop, measurer);
  GateRun gate(options, &profile, env);
  return gate.guarded([&] {
    auto started = Clock::now();
    auto start_at = start_time(options);
    gate.check_outputs();
    auto store = open_store(options);
    auto host = placed_host(measurer, profile);
    auto doctor_warnings = preflight(profile);
    auto instrument = required_instrument(profile, measurer.counter);
    auto selection = choose_baseline(options, store, profile, gate.partial().ci, host);
    Measurement m = measurer.load(profile, stop, start_at);
    gate.loaded(m.load);
    if (m.aborted) record_aborted(gate, store, profile, m, host);
    std::string dropped;
    auto run = screened_run(profile, m, gate, host, dropped);
    auto share = placing_share(run.host_summary.shared_cpu_pct, run.host_summary.samples);
    if (selection.baseline && share && !options.baseline_run)
      selection = choose_baseline(options, store, profile, gate.partial().ci, host, share);
    int series = store ? stored_cost_requests(*store, profile.name, instrument.name) : 0;
    run.record.cost = measure_cost(profile, instrument, stop, measurer.counter, series);
    if (store && selection.baseline) {
      selection.cost = cost_baseline(*store, *selection.baseline, run.record.cost.key);
      selection.cost.pool = stored_count_noise(*store, profile.name, run.record.cost.key);
    }
    GateResult result =
        judge_and_store(options, store, profile, selection, std::move(run.record), run.figures);
    if (!dropped.empty()) result.notes.push_back(dropped);
    if (auto once = unextended_note(profile)) result.notes.push_back(*once);
    result.host_summary = run.host_summary;
    result.host_summary.doctor_warnings = doctor_warnings;
    result.in_flight_at_end = run.in_flight_at_end;
    result.duration_s = to_seconds(Clock::now() - started);
    gate.write(result, out, store);
    return result.exit_code;
  });
}

}  // namespace perfgate
