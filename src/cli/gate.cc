#include "perfgate/cli/gate.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>

#include "measurement.h"
#include "perfgate/host/doctor.h"
#include "perfgate/host/host_fingerprint.h"
#include "perfgate/report/console_report.h"
#include "perfgate/report/gitlab_report.h"
#include "perfgate/report/json_report.h"
#include "perfgate/report/junit_report.h"
#include "perfgate/report/markdown_report.h"
#include "perfgate/report/openmetrics_report.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/baseline_store.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// A store that does not exist yet gives no baseline; it is created only when a
// run is recorded, so a run that errors out leaves no file behind.
std::optional<BaselineStore> open_store(const RunOptions& options) {
  if (!fs::exists(options.store_path)) return std::nullopt;
  auto mode = options.record ? BaselineStore::Mode::kReadWrite : BaselineStore::Mode::kReadOnly;
  return BaselineStore::open(options.store_path, mode);
}

// The doctor's checks, quietly (issue 4): recorded in the result, in the log at debug. Its CPU
// check is left out, since the sampler watches the CPU during the load itself.
std::vector<std::string> preflight(const Profile& profile) {
  std::vector<std::string> warnings;
  for (const auto& c : doctor_checks(gather_doctor_facts(Nanos(0)), profile.load.connections)) {
    if (c.status != CheckStatus::kWarn) continue;
    warnings.push_back(c.name + " " + c.value + ": " + c.advice);
    spdlog::debug("doctor: {}", warnings.back());
  }
  return warnings;
}

// The baseline, chosen before the load so that a bad --baseline-run fails fast.
BaselineSelection choose_baseline(const RunOptions& options, std::optional<BaselineStore>& store,
                                  const Profile& profile, const CiContext& ci,
                                  const HostFingerprint& host) {
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
  auto selection = select_baseline(*store, query, policy);
  if (selection.baseline)
    spdlog::info("baseline: {} run(s) of branch {}, newest run {}",
                 selection.baseline->run_ids.size(), ci.baseline_branch,
                 selection.baseline->run_ids.front());
  return selection;
}

// A stored run's load, as the reports read it.
LoadResult load_of(const RunRecord& run) {
  LoadResult load;
  load.engine = run.engine;
  load.threads = run.threads;
  load.connections = run.connections;
  load.iterations = run.iterations;
  return load;
}

GateResult assemble(const Profile& profile, const LoadResult& load, const Judgement& judgement,
                    const BaselineSelection& selection) {
  GateResult r;
  r.profile_name = profile.name;
  r.profile_hash = profile.hash;
  r.profile_source = profile.source.string();
  r.target_url = redacted_url(profile.target.url);
  r.verdict = judgement.verdict;
  r.exit_code = exit_status_of(judgement.verdict);
  r.checks = judgement.checks;
  r.notes = selection.notes;
  r.notes.insert(r.notes.end(), judgement.notes.begin(), judgement.notes.end());
  r.confidence = profile.baseline.confidence;
  if (const auto& b = selection.baseline; b && !b->run_ids.empty()) {
    r.baseline_run_id = b->run_ids.front();
    r.baseline_commit = b->commits.front();
    r.baseline_run_ids = b->run_ids;
  }
  if (selection.drift_reference) r.drift_run_ids = selection.drift_reference->run_ids;
  r.engine = load.engine;
  r.threads = load.threads;
  r.connections = load.connections;
  r.iterations_total = static_cast<int>(load.iterations.size());
  r.iterations_kept = static_cast<int>(load.kept().size());
  r.totals = load.kept_total();
  r.kept_seconds = to_seconds(load.kept_duration());
  return r;
}

// The gate proper, for a run measured here or merged from shards: judge it
// against its baseline, then store it with its verdict.
GateResult judge_and_store(const RunOptions& options, std::optional<BaselineStore>& store,
                           const Profile& profile, const BaselineSelection& selection,
                           RunRecord rec, const RunFigures& now) {
  const auto& base = selection.baseline;
  const auto& drift = selection.drift_reference;
  auto judgement = judge(now, base ? &base->sample : nullptr, profile.thresholds, rec.saturation,
                         {profile.baseline.confidence}, drift ? &drift->sample : nullptr);
  GateResult r = assemble(profile, load_of(rec), judgement, selection);
  r.started_at = rec.created_at;
  r.ci = rec.ci;
  r.host = rec.host;
  r.saturation = rec.saturation;
  rec.verdict = r.verdict;
  if (!options.record) {
    r.notes.push_back("not recorded (--no-record)");
    return r;
  }
  if (!store) store = BaselineStore::open(options.store_path);
  r.run_id = store->record(rec);
  r.recorded = true;
  if (!r.baseline_run_id)
    r.notes.push_back(rec.eligible_as_baseline()
                          ? "no baseline yet: this run becomes the baseline"
                          : "no baseline yet, and this run is not eligible to become one");
  return r;
}

std::optional<WallTime> start_time(const RunOptions& options) {
  if (options.start_at.empty()) return std::nullopt;
  return parse_start_at(options.start_at);
}

// An interrupted run leaves a trace, so that history shows it and nobody wonders,
// but it is stored as aborted and never becomes a baseline. Then the gate ends
// with an error: an interrupted run has no verdict.
[[noreturn]] void record_aborted(const RunOptions& options, std::optional<BaselineStore>& store,
                                 const Profile& profile, const Measurement& m,
                                 const GateResult& partial, const HostFingerprint& host) {
  std::string what = "aborted: interrupted by SIGINT or SIGTERM after " +
                     std::to_string(m.load.iterations.size()) +
                     " iterations; the service was "
                     "stopped";
  if (!options.record) throw Error(what + "; nothing stored (--no-record)");
  if (!store) store = BaselineStore::open(options.store_path);
  RunRecord rec = make_record(profile, m, partial.ci, host, partial.started_at);
  rec.verdict = Verdict::kError;
  rec.status = "aborted";
  auto id = store->record(rec);
  throw Error(what + "; stored as run " + std::to_string(id) + ", never a baseline");
}

void write_file(const fs::path& path, const std::string& text, bool append = false) {
  if (path.empty()) return;
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream file(path, append ? std::ios::app : std::ios::trunc);
  file << text;
  if (!file) throw Error("cannot write " + path.string());
}

// Reports of a run that could not be judged, so that CI shows an error and not
// a missing file. The error itself is rethrown to the CLI.
void write_error_reports(const RunOptions& options, GateResult r, const std::string& error) {
  r.verdict = Verdict::kError;
  r.exit_code = ExitStatus::kError;
  r.error = error;
  try {
    write_reports(options, r, nullptr);
  } catch (const std::exception& e) {
    spdlog::warn("{}", e.what());
  }
}

}  // namespace

void write_reports(const RunOptions& options, const GateResult& r, std::ostream* out) {
  if (out) *out << console_report(r);
  write_file(options.junit_path, junit_report(r));
  if (!options.json_path.empty()) write_file(options.json_path, json_report(r).dump(2) + "\n");
  write_file(options.gitlab_load_performance_path, gitlab_load_performance(r));
  write_file(options.openmetrics_path, openmetrics(r));
  if (!options.summary_path.empty()) write_file(options.summary_path, markdown_report(r));
  // GitHub shows the step summary on the job page; it expects appends.
  else if (!r.ci.summary_path.empty())
    write_file(r.ci.summary_path, markdown_report(r), true);
}

// Report paths are checked before the load: a run must not be recorded and
// then fail on a report it cannot write.
void check_writable(const fs::path& path, const char* flag) {
  if (path.empty()) return;
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  std::ofstream probe(path, std::ios::app);
  if (ec || !probe)
    throw Error(std::string(flag) + ": cannot write " + path.string() +
                (ec ? ": " + ec.message() : ""));
}

void check_report_paths(const RunOptions& options) {
  check_writable(options.junit_path, "--junit");
  check_writable(options.json_path, "--json");
  check_writable(options.summary_path, "--summary");
  check_writable(options.gitlab_load_performance_path, "--gitlab-load-performance");
  check_writable(options.openmetrics_path, "--openmetrics");
}

MeasuredRun measure_run(const Profile& profile, const CiContext& ci, const HostFingerprint& host,
                        const std::atomic<bool>& stop, std::optional<WallTime> start_at) {
  auto started_at = utc_now();
  Measurement m = measure_load(profile, stop, start_at);
  if (m.aborted) throw Error("interrupted by a signal; the service was stopped");
  MeasuredRun out;
  out.record = make_record(profile, m, ci, host, started_at);
  out.record.saturation = judge_saturation(profile, m);
  require_responses(m.load, profile.target.url, out.record.saturation);
  out.record.verdict = out.record.saturation.saturated ? Verdict::kWarn : Verdict::kPass;
  out.figures = run_figures(m.load.iterations, service_cpu(m.windows));
  out.host_summary = host_summary(m, out.figures.summary);
  out.in_flight_at_end = m.load.in_flight_at_end;
  for (const auto* it : m.load.kept()) {
    const auto& [from, to] = m.wall_ms.at(static_cast<size_t>(it->index));
    if (!out.measured_from_ms) out.measured_from_ms = from;
    out.measured_to_ms = to;
  }
  return out;
}

// A stored paired run is judged again against its own other side, as it was.
static BaselineSelection paired_selection(BaselineStore& store, const RunRecord& run,
                                          const RunOptions& options) {
  std::string name = "run " + std::to_string(run.id);
  auto partner = store.paired_partner(run);
  if (run.kind == "paired-baseline")
    throw Error(name + " is the baseline side of a paired run" +
                (partner ? "; compare its candidate, run " + std::to_string(partner->id) : ""));
  if (options.baseline_run)
    throw Error("--baseline-run: " + name +
                " is paired; it is judged against its own baseline side");
  if (!partner) throw Error(name + " is paired, and its baseline side is no longer in the store");
  BaselineSelection selection;
  selection.baseline = Baseline{{partner->id}, {partner->ci.commit}, {}};
  selection.baseline->sample.pooled = stored_run_figures(*partner);
  selection.baseline->sample.paired = true;
  return selection;
}

// Says what a paired run's busy host was, and why it does not make it inconclusive.
static void note_shared_load(const Saturation& saturation, std::vector<std::string>& notes) {
  if (saturation.shared.empty()) return;
  std::string text = "busy load machine (";
  for (size_t i = 0; i < saturation.shared.size(); ++i)
    text += (i ? "; " : "") + saturation.shared[i];
  notes.push_back(text +
                  "): not saturation in paired mode, since both sides ran through it in turns; "
                  "it blurs their ratios, it does not bias them");
}

GateResult rejudge_run(BaselineStore& store, int64_t run_id, const RunOptions& options) {
  auto run = store.run(run_id);
  if (!run) throw Error(store.path().string() + ": no run " + std::to_string(run_id));
  auto no_env = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  std::string source = "run " + std::to_string(run_id) + "'s stored profile";
  Profile profile = parse_profile(run->profile_json, source, no_env);
  profile.hash = run->profile_hash;  // the hash of the text it was written in
  BaselineQuery query{run->profile_name, run->profile_hash, run->ci.baseline_branch,
                      options.any_host ? "" : run->host.key(), run->id};
  BaselinePolicy policy{profile.baseline.window, profile.baseline.drift_window,
                        options.baseline_run};
  bool paired = !run->pair.empty();
  auto selection =
      paired ? paired_selection(store, *run, options) : select_baseline(store, query, policy);
  const auto& base = selection.baseline;
  const auto& drift = selection.drift_reference;
  auto judgement =
      judge(stored_run_figures(*run), base ? &base->sample : nullptr, profile.thresholds,
            run->saturation, {profile.baseline.confidence}, drift ? &drift->sample : nullptr);
  GateResult result = assemble(profile, load_of(*run), judgement, selection);
  result.profile_source = source;
  result.run_id = run->id;
  result.recorded = true;
  result.started_at = run->created_at;
  result.ci = run->ci;
  result.host = run->host;
  result.saturation = run->saturation;
  if (paired)
    result.notes.push_back("paired run: judged against its baseline side, run " +
                           std::to_string(*result.baseline_run_id) +
                           ", on the pair-by-pair ratios");
  note_shared_load(run->saturation, result.notes);
  result.notes.push_back("judged again from the store (stored verdict: " +
                         std::string(to_string(run->verdict)) + "); nothing was stored");
  return result;
}

// What a run knows before its load: enough for the error reports of a run
// that ends before a verdict.
static GateResult before_the_load(const Profile& profile, const RunOptions& options,
                                  const EnvLookup& env) {
  GateResult partial;
  partial.profile_name = profile.name;
  partial.profile_hash = profile.hash;
  partial.started_at = utc_now();
  partial.ci = read_ci_context(options.ci, env);
  return partial;
}

// `run --shard I/N`: this machine's share of the load, measured and written for
// `perfgate merge`, not judged: a share says nothing against the whole
// profile's baseline. Nothing is stored; the merged run is.
static ExitStatus run_shard(const RunOptions& options, const Profile& whole, const EnvLookup& env,
                            std::ostream& out, const std::atomic<bool>& stop) {
  ShardSpec spec = *options.shard;
  if (options.json_path.empty())
    throw Error("--shard " + spec.text() + ": needs --json PATH, the file perfgate merge reads");
  Profile profile = shard_profile(whole, spec);
  GateResult partial = before_the_load(profile, options, env);
  try {
    auto started = Clock::now();
    auto start_at = start_time(options);
    check_report_paths(options);
    auto run = measure_run(profile, partial.ci, read_host_fingerprint(), stop, start_at);
    auto judgement = judge(run.figures, nullptr, {}, run.record.saturation,
                           {profile.baseline.confidence}, nullptr);
    const auto& rec = run.record;
    GateResult r = assemble(profile, load_of(rec), judgement, {});
    r.verdict = Verdict::kPass;  // measured; perfgate merge gives the verdict
    r.exit_code = ExitStatus::kPass;
    r.started_at = rec.created_at;
    r.ci = rec.ci;
    r.host = rec.host;
    r.saturation = rec.saturation;
    r.host_summary = run.host_summary;
    r.duration_s = to_seconds(Clock::now() - started);
    r.notes.push_back("shard " + spec.text() + ": measured, not judged or stored; perfgate merge " +
                      "judges the shards together");
    r.in_flight_at_end = run.in_flight_at_end;
    r.shard = ShardFile{spec, run.measured_from_ms, run.measured_to_ms,
                        rec,  run.in_flight_at_end, options.json_path.string()};
    write_reports(options, r, &out);
    return r.exit_code;
  } catch (const Error& e) {
    write_error_reports(options, partial, e.what());
    throw;
  }
}

// Both sides of a paired run share one key in the store: unique per run, and
// stable through store export and import, unlike row ids.
static std::string pair_key(const GateResult& partial) {
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", random());
  return partial.started_at + "/" + std::to_string(::getpid()) + "/" + suffix;
}

// A paired run's saturation: either side's, each reason naming its side.
static Saturation paired_saturation(Saturation baseline, Saturation candidate) {
  Saturation both{baseline.saturated || candidate.saturated, {}, {}};
  auto add = [](std::vector<std::string>& to, const std::vector<std::string>& from,
                const std::string& side) {
    for (const auto& r : from) to.push_back(side + " side: " + r);
  };
  add(both.reasons, baseline.reasons, "baseline");
  add(both.reasons, candidate.reasons, "candidate");
  add(both.shared, baseline.shared, "baseline");
  add(both.shared, candidate.shared, "candidate");
  return both;
}

// Paired mode: the profile's target (the candidate) and `paired.baseline` (the
// build it replaces) measured in turns on this machine, judged on their
// window-by-window ratios rather than against stored runs; both sides stored
// under one pair key, neither ever a baseline of stored-baseline mode.
static ExitStatus run_paired(const RunOptions& options, const Profile& profile,
                             const EnvLookup& env, std::ostream& out,
                             const std::atomic<bool>& stop) {
  if (options.baseline_run)
    throw Error(
        "--baseline-run: a paired run is judged against its own baseline side "
        "(paired.baseline), not a stored run");
  if (!options.start_at.empty()) throw Error("--start-at: only for shards, not paired runs");
  GateResult partial = before_the_load(profile, options, env);
  try {
    auto started = Clock::now();
    check_report_paths(options);
    auto store = open_store(options);
    auto host = read_host_fingerprint();
    auto doctor_warnings = preflight(profile);
    Profile base_profile = paired_baseline_side(profile);
    auto m = measure_paired(profile, base_profile, stop);
    if (m.candidate.aborted) record_aborted(options, store, profile, m.candidate, partial, host);
    RunRecord cand = make_record(profile, m.candidate, partial.ci, host, partial.started_at);
    CiContext base_ci = partial.ci;
    base_ci.commit = profile.paired->commit;
    RunRecord base = make_record(base_profile, m.baseline, base_ci, host, partial.started_at);
    auto base_saturation = judge_saturation(base_profile, m.baseline, true);
    auto cand_saturation = judge_saturation(profile, m.candidate, true);
    require_responses(m.baseline.load, base_profile.target.url, base_saturation);
    require_responses(m.candidate.load, profile.target.url, cand_saturation);
    cand.saturation = base.saturation = paired_saturation(base_saturation, cand_saturation);
    cand.kind = "paired";
    base.kind = "paired-baseline";
    cand.pair = base.pair = pair_key(partial);

    RunFigures now = run_figures(cand.iterations, service_cpu(m.candidate.windows));
    BaselineSelection selection;
    selection.baseline = Baseline{{}, {}, {}};
    auto& sample = selection.baseline->sample;
    sample.pooled = run_figures(base.iterations, service_cpu(m.baseline.windows));
    sample.paired = true;
    auto judgement =
        judge(now, &sample, profile.thresholds, cand.saturation, {profile.baseline.confidence});
    GateResult r = assemble(profile, m.candidate.load, judgement, selection);
    r.started_at = partial.started_at;
    r.ci = partial.ci;
    r.host = host;
    r.saturation = cand.saturation;
    r.baseline_commit = base_ci.commit;
    cand.verdict = r.verdict;
    base.verdict = base.saturation.saturated ? Verdict::kWarn : Verdict::kPass;
    PairedSummary paired{redacted_url(base_profile.target.url),
                         base_ci.commit,
                         std::nullopt,
                         cand.pair,
                         r.iterations_kept,
                         to_seconds(profile.paired->leg_warmup)};
    if (options.record) {
      if (!store) store = BaselineStore::open(options.store_path);
      auto ids = store->record_all({base, cand});  // one transaction: never half a pair
      paired.baseline_run_id = ids[0];
      r.baseline_run_id = ids[0];
      r.baseline_run_ids = {ids[0]};
      r.run_id = ids[1];
      r.recorded = true;
    } else {
      r.notes.push_back("not recorded (--no-record)");
    }
    r.notes.insert(r.notes.begin(), "paired with " + paired.baseline_url + ": " +
                                        std::to_string(paired.pairs) +
                                        " pairs of windows, in turns; judged on their ratios");
    note_shared_load(cand.saturation, r.notes);
    r.paired = paired;
    r.host_summary = host_summary(m.candidate, now.summary);
    r.host_summary.doctor_warnings = doctor_warnings;
    r.in_flight_at_end = m.candidate.load.in_flight_at_end;
    r.duration_s = to_seconds(Clock::now() - started);
    write_reports(options, r, &out);
    return r.exit_code;
  } catch (const Error& e) {
    write_error_reports(options, partial, e.what());
    throw;
  }
}

ExitStatus run_gate(const RunOptions& options, const EnvLookup& env, std::ostream& out,
                    const std::atomic<bool>& stop) {
  Profile profile = load_profile(options.profile_path, env);
  if (options.shard) return run_shard(options, profile, env, out, stop);
  if (profile.paired) return run_paired(options, profile, env, out, stop);
  GateResult partial = before_the_load(profile, options, env);
  try {
    auto started = Clock::now();
    auto start_at = start_time(options);
    check_report_paths(options);
    auto store = open_store(options);
    auto host = read_host_fingerprint();
    auto doctor_warnings = preflight(profile);
    auto selection = choose_baseline(options, store, profile, partial.ci, host);
    Measurement m = measure_load(profile, stop, start_at);
    if (m.aborted) record_aborted(options, store, profile, m, partial, host);
    RunRecord rec = make_record(profile, m, partial.ci, host, partial.started_at);
    rec.saturation = judge_saturation(profile, m);
    require_responses(m.load, profile.target.url, rec.saturation);
    RunFigures now = run_figures(m.load.iterations, service_cpu(m.windows));
    GateResult result = judge_and_store(options, store, profile, selection, std::move(rec), now);
    result.host_summary = host_summary(m, now.summary);
    result.host_summary.doctor_warnings = doctor_warnings;
    result.in_flight_at_end = m.load.in_flight_at_end;
    result.duration_s = to_seconds(Clock::now() - started);
    write_reports(options, result, &out);
    return result.exit_code;
  } catch (const Error& e) {
    write_error_reports(options, partial, e.what());
    throw;
  }
}

ExitStatus merge_gate(const RunOptions& options, const std::vector<fs::path>& shard_paths,
                      const EnvLookup& env, std::ostream& out) {
  GateResult partial;
  partial.started_at = utc_now();
  partial.ci = read_ci_context(options.ci, env);
  try {
    check_report_paths(options);
    std::vector<ShardFile> files;
    for (const auto& path : shard_paths) files.push_back(read_shard_file(path));
    auto merged = merge_shards(std::move(files));
    RunRecord& rec = merged.run;
    partial.profile_name = rec.profile_name;
    partial.profile_hash = rec.profile_hash;
    auto no_env = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
    std::string source = merged.shards.front().source;
    if (merged.shards.size() > 1)
      source += " and " + std::to_string(merged.shards.size() - 1) + " more shards";
    Profile profile = parse_profile(rec.profile_json, source, no_env);
    profile.hash = rec.profile_hash;  // the hash of the text it was written in
    // The merge job's CI context, where it has one; the shards' where it has not.
    CiContext ci = partial.ci;
    if (ci.commit.empty()) ci.commit = rec.ci.commit;
    if (ci.pipeline_id.empty()) ci.pipeline_id = rec.ci.pipeline_id;
    rec.ci = ci;
    auto store = open_store(options);
    auto selection = choose_baseline(options, store, profile, ci, rec.host);
    auto now = stored_run_figures(rec);
    GateResult result = judge_and_store(options, store, profile, selection, rec, now);
    result.notes.insert(result.notes.end(), merged.notes.begin(), merged.notes.end());
    result.shards = merged.shards;
    result.in_flight_at_end = merged.in_flight_at_end;
    for (const auto& s : merged.shards)
      result.duration_s =
          std::max(result.duration_s, (s.measured_to_ms - s.measured_from_ms) / 1e3);
    write_reports(options, result, &out);
    return result.exit_code;
  } catch (const Error& e) {
    write_error_reports(options, partial, e.what());
    throw;
  }
}

}  // namespace perfgate
