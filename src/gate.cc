#include "perfgate/gate.h"

#include <spdlog/spdlog.h>

#include <ctime>
#include <fstream>
#include <memory>
#include <optional>

#include "perfgate/baseline_store.h"
#include "perfgate/console_report.h"
#include "perfgate/host_fingerprint.h"
#include "perfgate/json_report.h"
#include "perfgate/junit_report.h"
#include "perfgate/load_engine.h"
#include "perfgate/markdown_report.h"
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

void log_iteration(const Iteration& it, int total) {
  spdlog::info("iteration {}/{}: {:.1f} req/s, p99 {:.3f} ms, {} errors{}", it.index + 1, total,
               it.throughput_rps(), static_cast<double>(it.stats.latency.percentile_ns(99)) / 1e6,
               it.stats.errors.total() + it.stats.statuses.failed(),
               it.discarded ? " (discarded)" : "");
}

LoadResult run_load(const Profile& profile, const std::atomic<bool>& stop) {
  auto engine = make_load_engine(profile.load.engine, profile.target);
  probe_target(profile.target, profile.load.timeout);
  auto plan = plan_from_profile(profile);
  spdlog::info("load: {} engine, {} threads x {} connections, warmup {}, {} x {}", engine->name(),
               plan.threads, plan.connections, format_duration(plan.warmup), plan.iterations,
               format_duration(plan.duration));
  auto result =
      engine->run(plan, stop, [&](const Iteration& it) { log_iteration(it, plan.iterations); });
  if (stop) throw Error("run interrupted");
  return result;
}

// A window without a single response means the target went away mid-run: no
// figure of that run describes the service.
void require_responses(const LoadResult& load, const std::string& url) {
  for (const auto* it : load.kept()) {
    if (it->stats.responses > 0) continue;
    throw Error("no response from " + url + " in iteration " + std::to_string(it->index + 1) +
                " (" + std::to_string(it->stats.errors.total()) + " socket errors)");
  }
}

BaselineQuery baseline_query(const Profile& profile, const CiContext& ci,
                             const HostFingerprint& host) {
  return {profile.name, profile.hash, ci.baseline_branch, host.key()};
}

GateResult assemble(const Profile& profile, const LoadResult& load, const Judgement& judgement,
                    const std::optional<RunRecord>& baseline) {
  GateResult r;
  r.profile_name = profile.name;
  r.profile_hash = profile.hash;
  r.profile_source = profile.source.string();
  r.target_url = profile.target.url;
  r.verdict = judgement.verdict;
  r.exit_code = exit_status_of(judgement.verdict);
  r.checks = judgement.checks;
  r.notes = judgement.notes;
  if (baseline) {
    r.baseline_run_id = baseline->id;
    r.baseline_commit = baseline->ci.commit;
  }
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
                const Profile& profile, const LoadResult& load, GateResult& r) {
  if (!options.record) {
    r.notes.push_back("not recorded (--no-record)");
    return;
  }
  if (!store) store = BaselineStore::open(options.store_path);
  auto rec = make_record(profile, r, load);
  r.run_id = store->record(rec);
  r.recorded = true;
  if (!r.baseline_run_id)
    r.notes.push_back(rec.eligible_as_baseline()
                          ? "no baseline yet: this run becomes the baseline"
                          : "no baseline yet, and this run is not eligible to become one");
}

void write_file(const fs::path& path, const std::string& text, bool append = false) {
  if (path.empty()) return;
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream file(path, append ? std::ios::app : std::ios::trunc);
  file << text;
  if (!file) throw Error("cannot write " + path.string());
}

void write_reports(const RunOptions& options, const GateResult& r, std::ostream* out) {
  if (out) *out << console_report(r);
  write_file(options.junit_path, junit_report(r));
  if (!options.json_path.empty()) write_file(options.json_path, json_report(r).dump(2) + "\n");
  if (!options.summary_path.empty()) write_file(options.summary_path, markdown_report(r));
  // GitHub shows the step summary on the job page; it expects appends.
  else if (!r.ci.summary_path.empty())
    write_file(r.ci.summary_path, markdown_report(r), true);
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
    auto store = open_store(options);
    auto host = read_host_fingerprint();
    LoadResult load;
    {
      auto service = start_service(profile);
      load = run_load(profile, stop);
    }  // the service stops here, before judging and reporting
    require_responses(load, profile.target.url);
    auto query = baseline_query(profile, partial.ci, host);
    auto baseline = store ? store->latest_baseline(query) : std::nullopt;
    MetricSet base_metrics = baseline ? summarize(baseline->iterations) : MetricSet{};
    Saturation saturation;  // the host sampler (issue 4) fills this
    auto judgement = judge(summarize(load.iterations), baseline ? &base_metrics : nullptr,
                           profile.thresholds, saturation);
    GateResult result = assemble(profile, load, judgement, baseline);
    result.started_at = partial.started_at;
    result.ci = partial.ci;
    result.host = host;
    result.saturation = saturation;
    result.duration_s = to_seconds(Clock::now() - started);
    record_run(options, store, profile, load, result);
    write_reports(options, result, &out);
    return result.exit_code;
  } catch (const Error& e) {
    write_error_reports(options, partial, e.what());
    throw;
  }
}

}  // namespace perfgate
