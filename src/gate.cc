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
  SteadyClock::time_point origin;
  bool aborted = false;  // SIGINT/SIGTERM stopped the load early
};

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
                     std::optional<pid_t> service) {
  auto plan = plan_from_profile(profile);
  auto engine = make_load_engine(profile.load.engine, plan);  // auto looks at the whole mix
  probe_target(profile.target, profile.load.timeout);
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
    windows.push_back({end - it.duration, end});
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
// figure of that run describes the service.
void require_responses(const LoadResult& load, const std::string& url) {
  for (const auto* it : load.kept()) {
    if (it->stats.responses > 0) continue;
    throw Error("no response from " + redacted_url(url) + " in iteration " +
                std::to_string(it->index + 1) + " (" + std::to_string(it->stats.errors.total()) +
                " socket errors)");
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

RunRecord make_record(const Profile& profile, const GateResult& r, const LoadResult& load) {
  RunRecord rec;
  rec.created_at = r.started_at;
  rec.profile_name = profile.name;
  rec.profile_hash = profile.hash;
  rec.profile_json = profile.redacted_json;
  rec.ci = r.ci;
  rec.host = r.host;
  rec.engine = load.engine;
  rec.threads = load.threads;
  rec.connections = load.connections;
  rec.verdict = r.verdict;
  rec.saturation = r.saturation;
  rec.iterations = load.iterations;
  return rec;
}

void record_run(const RunOptions& options, std::optional<BaselineStore>& store,
                const Profile& profile, const Measurement& m, GateResult& r) {
  if (!options.record) {
    r.notes.push_back("not recorded (--no-record)");
    return;
  }
  if (!store) store = BaselineStore::open(options.store_path);
  auto rec = make_record(profile, r, m.load);
  rec.host_samples_json = host_samples_json(m.windows, m.samples, m.origin);
  r.run_id = store->record(rec);
  r.recorded = true;
  if (!r.baseline_run_id)
    r.notes.push_back(rec.eligible_as_baseline()
                          ? "no baseline yet: this run becomes the baseline"
                          : "no baseline yet, and this run is not eligible to become one");
}

// No figure of a run whose service died describes the service: no verdict.
[[noreturn]] void throw_service_death(const std::string& what, const LoadResult& load) {
  auto total = load.kept_total();
  throw Error(what + ", after " + std::to_string(load.iterations.size()) + " iterations (" +
              std::to_string(total.errors.total()) + " socket errors, " +
              std::to_string(total.responses) + " responses kept); nothing stored");
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
  GateResult r = partial;
  r.host = host;
  r.verdict = Verdict::kError;
  if (!store) store = BaselineStore::open(options.store_path);
  RunRecord rec = make_record(profile, r, m.load);
  rec.status = "aborted";
  rec.host_samples_json = host_samples_json(m.windows, m.samples, m.origin);
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
                        const std::atomic<bool>& stop) {
  GateResult r;
  r.started_at = utc_now();
  r.ci = ci;
  r.host = host;
  Measurement m;
  std::optional<std::string> death;
  {
    auto service = start_service(profile);
    LoadGuard guard(stop, service.get());
    m = run_load(profile, guard.stop(), service_pid(profile, service.get(), ProcReader("/")));
    death = guard.finish();
  }
  if (death) throw_service_death(*death, m.load);
  if (m.aborted) throw Error("interrupted by a signal; the service was stopped");
  require_responses(m.load, profile.target.url);
  r.saturation = judge_saturation(profile, m);
  r.verdict = r.saturation.saturated ? Verdict::kWarn : Verdict::kPass;
  MeasuredRun out{make_record(profile, r, m.load),
                  run_figures(m.load.iterations, service_cpu(m.windows))};
  out.record.host_samples_json = host_samples_json(m.windows, m.samples, m.origin);
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
  LoadResult load{run->engine, run->threads, run->connections, {}, run->iterations};
  GateResult result = assemble(profile, load, judgement, selection);
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

ExitStatus run_gate(const RunOptions& options, const EnvLookup& env, std::ostream& out,
                    const std::atomic<bool>& stop) {
  Profile profile = load_profile(options.profile_path, env);
  GateResult partial;
  partial.profile_name = profile.name;
  partial.profile_hash = profile.hash;
  partial.started_at = utc_now();
  partial.ci = read_ci_context(options.ci, env);
  try {
    auto started = Clock::now();
    check_report_paths(options);
    auto store = open_store(options);
    auto host = read_host_fingerprint();
    auto doctor_warnings = preflight(profile);
    auto selection = choose_baseline(options, store, profile, partial.ci, host);
    Measurement m;
    std::optional<std::string> death;
    {
      auto service = start_service(profile);
      LoadGuard guard(stop, service.get());
      m = run_load(profile, guard.stop(), service_pid(profile, service.get(), ProcReader("/")));
      death = guard.finish();
    }  // the service stops here, before judging and reporting
    if (death) throw_service_death(*death, m.load);
    if (m.aborted) record_aborted(options, store, profile, m, partial, host);
    require_responses(m.load, profile.target.url);
    RunFigures now = run_figures(m.load.iterations, service_cpu(m.windows));
    Saturation saturation = judge_saturation(profile, m);
    const auto& base = selection.baseline;
    const auto& drift = selection.drift_reference;
    auto judgement = judge(now, base ? &base->sample : nullptr, profile.thresholds, saturation,
                           {profile.baseline.confidence}, drift ? &drift->sample : nullptr);
    GateResult result = assemble(profile, m.load, judgement, selection);
    result.started_at = partial.started_at;
    result.ci = partial.ci;
    result.host = host;
    result.saturation = saturation;
    result.host_summary = host_summary(m, now.summary);
    result.host_summary.doctor_warnings = doctor_warnings;
    result.duration_s = to_seconds(Clock::now() - started);
    record_run(options, store, profile, m, result);
    write_reports(options, result, &out);
    return result.exit_code;
  } catch (const Error& e) {
    write_error_reports(options, partial, e.what());
    throw;
  }
}

}  // namespace perfgate
