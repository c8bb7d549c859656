#include "perfgate/gate.h"

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
#include <thread>

#include "perfgate/baseline.h"
#include "perfgate/baseline_store.h"
#include "perfgate/console_report.h"
#include "perfgate/doctor.h"
#include "perfgate/gitlab_report.h"
#include "perfgate/host_fingerprint.h"
#include "perfgate/host_sampler.h"
#include "perfgate/json_report.h"
#include "perfgate/junit_report.h"
#include "perfgate/load_engine.h"
#include "perfgate/markdown_report.h"
#include "perfgate/openmetrics_report.h"
#include "perfgate/progress.h"
#include "perfgate/saturation.h"
#include "perfgate/service_process.h"

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

std::unique_ptr<ServiceProcess> start_service(const Profile& profile) {
  if (!profile.service) return nullptr;
  spdlog::info("starting service: {}", profile.service->command.front());
  auto service = std::make_unique<ServiceProcess>(*profile.service);
  service->wait_ready();
  return service;
}

// Watches, while the load runs, for what must end it early: a stop signal, or
// the death of the service perfgate started (every figure after it would be
// about connection errors, not the service).
class LoadGuard {
 public:
  LoadGuard(const std::atomic<bool>& signal, ServiceProcess* service)
      : signal_(signal), service_(service), thread_([this] { watch(); }) {}
  ~LoadGuard() { finish(); }
  LoadGuard(const LoadGuard&) = delete;
  LoadGuard& operator=(const LoadGuard&) = delete;

  const std::atomic<bool>& stop() const { return stop_; }
  /// Stops watching; says how the service ended when it died during the load.
  std::optional<std::string> finish() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    if (!died_) return std::nullopt;
    return "service \"" + service_command_ + "\" " + service_->exit_description() +
           " during the load";
  }

 private:
  void watch() {
    if (service_) service_command_ = service_->command();
    while (!done_) {
      if (signal_) stop_ = true;
      if (service_ && !service_->running()) {
        died_ = true;
        stop_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  const std::atomic<bool>& signal_;
  ServiceProcess* service_;
  std::string service_command_;
  std::atomic<bool> stop_{false}, done_{false};
  bool died_ = false;  // written by the watcher, read after the join
  std::thread thread_;
};

// The load and what the host did meanwhile: one window per iteration, in
// iteration order, measured on the same steady clock as the samples.
struct Measurement {
  LoadResult load;
  std::vector<HostSample> samples;
  std::vector<WindowSummary> windows;  // index = iteration index, discarded ones included
  std::vector<std::pair<int64_t, int64_t>> wall_ms;  // per iteration: Unix ms from, to
  SteadyClock::time_point origin;
  bool aborted = false;  // SIGINT/SIGTERM stopped the load early
};

int64_t unix_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// --start-at: shards on several machines begin their warm-up together, so that
// their measurement windows overlap. A late start still runs (merge checks the
// overlap); a start more than an hour away is surely a mistake.
void wait_for_start(std::optional<WallTime> start_at, const std::atomic<bool>& stop) {
  if (!start_at) return;
  using namespace std::chrono;
  auto ahead = duration_cast<milliseconds>(*start_at - system_clock::now());
  if (ahead > hours(1)) throw Error("--start-at: " + format_duration(ahead) + " away; at most 1h");
  if (ahead < milliseconds(-1000)) {
    spdlog::warn("--start-at passed {} ago; starting now", format_duration(-ahead));
    return;
  }
  spdlog::info("waiting {} for --start-at", format_duration(std::max(ahead, milliseconds(0))));
  while (!stop && system_clock::now() < *start_at)
    std::this_thread::sleep_for(
        std::min<system_clock::duration>(milliseconds(20), *start_at - system_clock::now()));
}

// The service's root PID: the one perfgate started, else the profile's pid_file
// or process name for a service running beside perfgate.
std::optional<pid_t> service_pid(const Profile& profile, const ServiceProcess* started,
                                 const ProcReader& proc) {
  if (started) return started->pid();
  if (!profile.service) return std::nullopt;
  if (!profile.service->pid_file.empty()) {
    std::ifstream in(profile.service->pid_file);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    spdlog::warn("service.pid_file {}: no PID in it; the service's CPU is not attributed",
                 profile.service->pid_file);
  }
  if (!profile.service->process_name.empty())
    return proc.find_process(profile.service->process_name);
  return std::nullopt;
}

Measurement run_load(const Profile& profile, const std::atomic<bool>& stop,
                     std::optional<pid_t> service, std::optional<WallTime> start_at) {
  auto plan = plan_from_profile(profile);
  auto engine = make_load_engine(profile.load.engine, plan);  // auto looks at the whole mix
  probe_target(profile.target, profile.load.timeout);
  wait_for_start(start_at, stop);
  spdlog::info("load: {} engine, {} threads x {} connections, warmup {}, {} x {}", engine->name(),
               plan.threads, plan.connections, format_duration(plan.warmup), plan.iterations,
               format_duration(plan.duration));
  Measurement m;
  m.origin = SteadyClock::now();
  HostSampler sampler(ProcReader("/"), profile.saturation.interval, service);
  sampler.start();
  // The engine reports each iteration right after its window closes: that moment,
  // less the window's length, is the window on the sampler's clock.
  std::vector<TimeWindow> windows;
  // A live line on a terminal, timestamped lines in a CI log; none with --quiet.
  std::optional<Progress> progress;
  if (spdlog::get_level() <= spdlog::level::info)
    progress.emplace(std::cerr, progress_style(isatty(STDERR_FILENO), process_environment()),
                     plan.iterations, plan.warmup + plan.duration * plan.iterations);
  m.load = engine->run(plan, stop, [&](const Iteration& it) {
    auto end = SteadyClock::now();
    auto wall_end = unix_ms(std::chrono::system_clock::now());
    windows.push_back({end - it.duration, end});
    m.wall_ms.emplace_back(wall_end - static_cast<int64_t>(to_millis(it.duration)), wall_end);
    if (progress) progress->on_iteration(it);
  });
  if (progress) progress->finish();
  sampler.stop();
  m.aborted = stop;
  m.samples = sampler.samples();
  for (size_t i = 0; i < windows.size(); ++i)
    m.windows.push_back(summarize_window(m.samples, windows[i], static_cast<int>(i)));
  return m;
}

std::vector<WindowSummary> kept_windows(const Measurement& m) {
  std::vector<WindowSummary> kept;
  for (const auto* it : m.load.kept())
    if (static_cast<size_t>(it->index) < m.windows.size()) kept.push_back(m.windows[it->index]);
  return kept;
}

std::vector<std::optional<double>> service_cpu(const std::vector<WindowSummary>& windows) {
  std::vector<std::optional<double>> out;
  for (const auto& w : windows) out.push_back(w.service_cpu_s);
  return out;
}

// The open model's rule: when most kept iterations fell short of the asked rate,
// the run measured a different load than the profile asked for.
void check_rate_achieved(const LoadResult& load, Saturation& saturation) {
  auto kept = load.kept();
  if (kept.empty() || kept.front()->target_rate <= 0) return;
  std::vector<double> achieved;
  uint64_t never_sent = 0;
  size_t short_of = 0;
  for (const auto* it : kept) {
    achieved.push_back(it->throughput_rps());
    never_sent += it->stats.never_sent;
    if (it->below_target_rate()) ++short_of;
  }
  if (short_of * 2 < kept.size()) return;
  char text[160];
  std::snprintf(text, sizeof text,
                "open model: %.0f req/s achieved of the %.0f asked (median), %llu requests "
                "never sent, in %zu of %zu iterations",
                median(achieved), kept.front()->target_rate,
                static_cast<unsigned long long>(never_sent), short_of, kept.size());
  saturation.saturated = true;
  saturation.reasons.push_back(text);
}

Saturation judge_saturation(const Profile& profile, const Measurement& m) {
  SaturationContext context;
  context.service_remote = !is_loopback_url(profile.target.url);
  auto saturation = evaluate_saturation(kept_windows(m), profile.saturation, context);
  check_rate_achieved(m.load, saturation);
  for (const auto& reason : saturation.reasons) spdlog::warn("load machine saturated: {}", reason);
  return saturation;
}

HostSummary host_summary(const Measurement& m, const MetricSet& metrics) {
  HostSummary h;
  h.memory_available_min_pct = 100;
  for (const auto& w : kept_windows(m)) {
    h.samples += w.samples;
    h.host_cpu_mean_pct += w.host_cpu_mean_pct * w.samples;
    h.host_cpu_max_pct = std::max(h.host_cpu_max_pct, w.host_cpu_max_pct);
    h.steal_max_pct = std::max(h.steal_max_pct, w.steal_max_pct);
    h.generator_thread_max_pct = std::max(h.generator_thread_max_pct, w.generator_thread_max_pct);
    h.foreign_cpu_max_pct = std::max(h.foreign_cpu_max_pct, w.foreign_cpu_max_pct);
    h.memory_available_min_pct = std::min(h.memory_available_min_pct, w.memory_available_min_pct);
    if (w.cpu_pressure_max_pct)
      h.cpu_pressure_max_pct =
          std::max(h.cpu_pressure_max_pct.value_or(0), *w.cpu_pressure_max_pct);
  }
  if (h.samples) h.host_cpu_mean_pct /= h.samples;
  if (auto it = metrics.find("service_cpu_us_per_request"); it != metrics.end())
    h.service_cpu_us_per_request = it->second;
  return h;
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

// A window without a single response means the target went away mid-run: no
// figure of that run describes the service. Unless the load machine was
// saturated and nothing failed either: then a starved load thread (or service)
// may have stalled through the window, and the run is inconclusive, not an error.
void require_responses(const LoadResult& load, const std::string& url, Saturation& saturation) {
  for (const auto* it : load.kept()) {
    if (it->stats.responses > 0) continue;
    uint64_t errors = it->stats.errors.total();
    std::string what = "no response from " + redacted_url(url) + " in iteration " +
                       std::to_string(it->index + 1) + " (" + std::to_string(errors) +
                       " socket errors)";
    if (errors > 0) throw Error(what);
    if (!saturation.saturated)
      throw Error(what + ": the target hung, or the load machine stalled through the window");
    saturation.reasons.push_back(what + ", on a saturated load machine");
    spdlog::warn("load machine saturated: {}", saturation.reasons.back());
  }
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
  if (const auto& b = selection.baseline) {
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

// The run as the store keeps it, before it is judged.
RunRecord make_record(const Profile& profile, const Measurement& m, const CiContext& ci,
                      const HostFingerprint& host, const std::string& started_at) {
  RunRecord rec;
  rec.created_at = started_at;
  rec.profile_name = profile.name;
  rec.profile_hash = profile.hash;
  rec.profile_json = profile.redacted_json;
  rec.ci = ci;
  rec.host = host;
  rec.engine = m.load.engine;
  rec.threads = m.load.threads;
  rec.connections = m.load.connections;
  rec.iterations = m.load.iterations;
  rec.host_samples_json = host_samples_json(m.windows, m.samples, m.origin);
  return rec;
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

// No figure of a run whose service died describes the service: no verdict.
[[noreturn]] void throw_service_death(const std::string& what, const LoadResult& load) {
  auto total = load.kept_total();
  throw Error(what + ", after " + std::to_string(load.iterations.size()) + " iterations (" +
              std::to_string(total.errors.total()) + " socket errors, " +
              std::to_string(total.responses) + " responses kept); nothing stored");
}

// The load with the service (when the profile starts one) around it. A service
// that died during the load ends the run here; a signal is the caller's to handle.
Measurement measure_load(const Profile& profile, const std::atomic<bool>& stop,
                         std::optional<WallTime> start_at) {
  Measurement m;
  std::optional<std::string> death;
  {
    auto service = start_service(profile);
    LoadGuard guard(stop, service.get());
    m = run_load(profile, guard.stop(), service_pid(profile, service.get(), ProcReader("/")),
                 start_at);
    death = guard.finish();
  }  // the service stops here, before judging and reporting
  if (death) throw_service_death(*death, m.load);
  return m;
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
  auto selection = select_baseline(store, query, policy);
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

ExitStatus run_gate(const RunOptions& options, const EnvLookup& env, std::ostream& out,
                    const std::atomic<bool>& stop) {
  Profile profile = load_profile(options.profile_path, env);
  if (options.shard) return run_shard(options, profile, env, out, stop);
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
