#include "gate_pipeline.h"

#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "perfgate/gate/store_access.h"
#include "perfgate/host/delayed_ack.h"
#include "perfgate/host/doctor.h"
#include "perfgate/report/report_format.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/store_maintenance.h"

namespace perfgate {

namespace fs = std::filesystem;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The load's shape and kept totals, as the reports show them: a stored run's
// as well as one just measured.
static void describe_load(GateResult& r, const std::string& engine, int threads, int connections,
                          const std::vector<Iteration>& iterations) {
  LoadResult load;  // for its rules of which iterations are kept
  load.iterations = iterations;
  r.engine = engine;
  r.threads = threads;
  r.connections = connections;
  r.iterations_total = static_cast<int>(iterations.size());
  r.iterations_kept = static_cast<int>(load.kept().size());
  r.totals = load.kept_total();
  r.kept_seconds = to_seconds(load.kept_duration());
}

// ---- GateRun ---------------------------------------------------------------

GateRun::GateRun(const RunOptions& options, const Profile* profile, const EnvLookup& env)
    : options_(options) {
  if (profile) {
    partial_.profile_name = profile->name;
    partial_.profile_hash = profile->hash;
  }
  partial_.started_at = utc_now();
  partial_.ci = read_ci_context(options.ci, env);
  guard_.store(options.store_path).input(options.profile_path, "the profile");
  if (profile) guard_bodies(*profile);
}

// A body_file is an input too: --json onto it replaced the request's body.
void GateRun::guard_bodies(const Profile& profile) {
  auto folder = options_.profile_path.parent_path();
  if (!profile.target.body_file.empty())
    guard_.input(folder / profile.target.body_file, "the profile's body_file");
  for (const auto& entry : profile.requests)
    if (!entry.body_file.empty()) guard_.input(folder / entry.body_file, "the profile's body_file");
}

namespace {

// The report files a run writes, with the flag that names each.
std::array<std::pair<fs::path*, const char*>, 5> report_outputs(RunOptions& options) {
  return {{{&options.junit_path, "--junit"},
           {&options.json_path, "--json"},
           {&options.summary_path, "--summary"},
           {&options.gitlab_load_performance_path, "--gitlab-load-performance"},
           {&options.openmetrics_path, "--openmetrics"}}};
}

}  // namespace

// No two outputs may be one file either (--junit X --json X kept only the
// JSON; a step summary at the --junit file appended Markdown to the XML),
// except --summary at the step summary, which is written once.
void GateRun::check_outputs() {
  RunOptions options = options_;
  OutputGuard taken = guard_;
  const auto& step_summary = partial_.ci.summary_path;
  for (const auto& [path, flag] : report_outputs(options)) {
    refused_output_ = flag;
    taken.check(*path, flag);
    check_output_writable(*path, flag);
    bool is_step_summary =
        !path->empty() && !step_summary.empty() && same_output_file(*path, step_summary);
    if (!(is_step_summary && std::string_view(flag) == "--summary"))
      taken.input(*path, std::string("the ") + flag + " output");
  }
  refused_output_ = "GITHUB_STEP_SUMMARY";
  taken.check(step_summary, "GITHUB_STEP_SUMMARY");
  check_append_writable(partial_.ci.summary_path, "GITHUB_STEP_SUMMARY");
  refused_output_.clear();
  if (options_.record && !options_.shard) check_store_writable(options_.store_path);
}

void GateRun::loaded(const LoadResult& load) {
  describe_load(partial_, load.engine, load.threads, load.connections, load.iterations);
}

ExitStatus GateRun::guarded(const std::function<ExitStatus()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    // Reports of a run that could not be judged, so that CI shows an error and
    // not a missing file. The error itself goes on to the CLI.
    GateResult r = partial_;
    r.verdict = Verdict::kError;
    r.exit_code = ExitStatus::kError;
    r.error = e.what();
    // An output refused before the load is left out: the error already names
    // it, and writing it would only fail again, as a second line.
    RunOptions options = options_;
    for (const auto& [path, flag] : report_outputs(options))
      if (refused_output_ == flag) path->clear();
    if (refused_output_ == "GITHUB_STEP_SUMMARY") r.ci.summary_path.clear();
    try {
      write_reports(options, guard_, r, nullptr);
    } catch (const std::exception& report_error) {
      spdlog::warn("{}", report_error.what());
    }
    throw;
  }
}

void GateRun::write(const GateResult& result, std::ostream& out) const {
  write_reports(options_, guard_, result, &out);
}

namespace {

// stdout is one of the run's reports: cut short by a full device, it takes
// the run out of the store as a lost --junit does (issue 50, item 12).
void flush_stdout(std::ostream& out) {
  errno = 0;
  out.flush();
  if (out) return;
  int why = errno;
  throw Error(std::string("cannot write to stdout: ") +
              (why ? std::strerror(why) : "the output was cut short") +
              "; what was printed is incomplete");
}

}  // namespace

// A run stored, then its --junit lost to a full disk, was still the next
// runs' baseline while CI showed only the error (issue 41, item 13). The runs
// this result stored are taken out again: whole, or not at all.
void GateRun::write(const GateResult& result, std::ostream& out,
                    std::optional<BaselineStore>& store) const {
  try {
    write(result, out);
    flush_stdout(out);
  } catch (const Error& e) {
    if (!result.recorded || !result.run_id || !store) throw;
    std::vector<int64_t> stored{*result.run_id};
    if (result.paired && result.paired->baseline_run_id)
      stored.push_back(*result.paired->baseline_run_id);
    std::string ids;
    for (auto id : stored) ids += (ids.empty() ? "" : " ") + std::to_string(id);
    try {
      delete_runs(*store, stored);
    } catch (const Error& again) {
      throw Error(std::string(e.what()) + "; and the run stored as " + ids +
                  " could not be taken out of the store (" + again.what() +
                  "): perfgate store delete " + ids + " removes it");
    }
    throw Error(std::string(e.what()) +
                "; the run was taken out of the store again: a run whose reports were lost "
                "is no one's baseline");
  }
}

// ---- the stages --------------------------------------------------------------

namespace {

std::optional<double> check_value(const Judgement& j, std::string_view metric) {
  for (const auto& c : j.checks)
    if (c.metric == metric) return c.value;
  return std::nullopt;
}

// A service held 40 ms a request by Nagle and delayed ACKs measures the wait:
// said once, under the figures, so that nobody gates on it unawares.
std::optional<std::string> request_shape_note(const Judgement& j) {
  auto p50 = check_value(j, "latency_p50_ms"), p90 = check_value(j, "latency_p90_ms");
  if (!p50 || !p90) return std::nullopt;
  return delayed_ack_note({*p50, *p90, check_value(j, "service_cpu_us_per_request")});
}

}  // namespace

GateResult assemble(const Profile& profile, const RunRecord& run, const Judgement& judgement,
                    const BaselineSelection& selection) {
  GateResult r;
  r.profile_name = profile.name;
  r.profile_hash = profile.hash;
  r.profile_source = profile.source.string();
  r.target_url = shown_url(profile.target);
  r.verdict = judgement.verdict;
  r.exit_code = exit_status_of(judgement.verdict);
  r.checks = judgement.checks;
  r.notes = selection.notes;
  r.notes.insert(r.notes.end(), judgement.notes.begin(), judgement.notes.end());
  if (auto note = request_shape_note(judgement)) r.notes.push_back(*note);
  r.confidence = judgement.confidence_pct;
  if (const auto& b = selection.baseline; b && !b->run_ids.empty()) {
    r.baseline_run_id = b->run_ids.front();
    r.baseline_commit = b->commits.front();
    r.baseline_run_ids = b->run_ids;
  }
  if (selection.drift_reference) r.drift_run_ids = selection.drift_reference->run_ids;
  describe_load(r, run.engine, run.threads, run.connections, run.iterations);
  r.started_at = run.created_at;
  r.ci = run.ci;
  r.host = run.host;
  r.saturation = run.saturation;
  r.cost = run.cost;
  return r;
}

MeasuredRun measured(const Profile& profile, const Measurement& m, const CiContext& ci,
                     const HostFingerprint& host, const std::string& started_at) {
  MeasuredRun out;
  out.record = make_record(profile, m, ci, host, started_at);
  out.record.saturation = judge_saturation(profile, m);
  require_responses(profile, m, out.record.saturation);
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

// An interrupted run leaves a trace, so that history shows it and nobody wonders,
// but it is stored as aborted and never becomes a baseline. Then the gate ends
// with an error: an interrupted run has no verdict.
void record_aborted(GateRun& gate, std::optional<BaselineStore>& store, const Profile& profile,
                    const Measurement& m, const HostFingerprint& host) {
  const auto& options = gate.options();
  std::string what = "aborted: interrupted by SIGINT or SIGTERM after " +
                     std::to_string(m.load.iterations.size()) +
                     " iterations; the service was "
                     "stopped";
  if (!options.record) throw Error(what + "; nothing stored (--no-record)");
  if (!store) store = BaselineStore::open(options.store_path);
  RunRecord rec = make_record(profile, m, gate.partial().ci, host, gate.partial().started_at);
  rec.verdict = Verdict::kError;
  rec.status = "aborted";
  auto id = store->record(rec);
  gate.partial().run_id = id;  // the reports say what the error line says
  gate.partial().recorded = true;
  throw Error(what + "; stored as run " + std::to_string(id) + ", never a baseline");
}

std::optional<BaselineStore> open_store(const RunOptions& options) {
  if (!fs::exists(options.store_path)) {
    // Created after the load; a folder typo is said before it.
    if (options.record) BaselineStore::check_folder(options.store_path);
    return std::nullopt;
  }
  if (!options.record)
    return BaselineStore::open(options.store_path, BaselineStore::Mode::kReadOnly);
  auto store = BaselineStore::open(options.store_path);
  // Before the load: a store another process keeps locked is said now, not
  // after a load whose result could not be stored.
  check_store_lock(store);
  return store;
}

void note_new_levels(BaselineStore& store, const RunRecord& rec, std::vector<std::string>& notes) {
  for (const auto& cp : confirmed_change_points(store, rec)) {
    notes.push_back("new level: " + cp.metric + " " + report::format_step(cp.size_pct) +
                    " since run " + std::to_string(cp.run_id) +
                    (cp.commit.empty() ? "" : " (commit " + report::short_id(cp.commit, 7) + ")") +
                    ", p=" + report::fixed(cp.p, 3) +
                    (cp.regressing
                         ? "; a regression: later runs are still judged against the runs before "
                           "it, until a run of it is accepted (perfgate accept)"
                         : "; later runs are judged against the runs since it"));
  }
}

// The doctor's CPU check is left out, since the sampler watches the CPU during
// the load itself.
std::vector<std::string> preflight(const Profile& profile) {
  std::vector<std::string> warnings;
  for (const auto& c : doctor_checks(gather_doctor_facts(Nanos(0)), profile.load.connections)) {
    if (c.status != CheckStatus::kWarn) continue;
    warnings.push_back(c.name + " " + c.value + ": " + c.advice);
    spdlog::debug("doctor: {}", warnings.back());
  }
  return warnings;
}

}  // namespace perfgate
