#include "measurement.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <thread>

#include "perfgate/core/units.h"
#include "perfgate/gate/progress.h"
#include "perfgate/host/placement.h"
#include "perfgate/host/proc_reader.h"
#include "perfgate/host/saturation.h"
#include "perfgate/host/service_discovery.h"
#include "perfgate/host/service_process.h"
#include "perfgate/load/load_engine.h"

namespace perfgate {
namespace {

// `level`: a paired run starts both services anew for every pair or block, and
// says so once, at its first launch.
std::unique_ptr<ServiceProcess> start_service(
    const Profile& profile, const std::atomic<bool>& stop, const Placement& placement,
    spdlog::level::level_enum level = spdlog::level::info) {
  if (!profile.service || profile.service->command.empty()) return nullptr;  // only watched
  // Its program's name, not its path: a log pasted elsewhere shows no machine's
  // folders (and no argument, which may hold a secret).
  spdlog::log(level, "starting service: {}",
              std::filesystem::path(profile.service->command.front()).filename().string());
  auto service = std::make_unique<ServiceProcess>(
      *profile.service, placement.service,
      LaunchOptions{false, nullptr, "", [](const std::string& m) { spdlog::warn("{}", m); }});
  // A signal here ends the run before any load.
  service->wait_ready(stop, profile.target.tls_verify);
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

// The service: the one perfgate started, else the one the profile names or
// the process behind the target's listener on this host.
ServiceSearch attributed_service(const Profile& profile, const ServiceProcess* started) {
  return find_service(profile, started ? std::optional(started->pid()) : std::nullopt);
}

// Said once the target answered: an unreachable target stays a one-line error.
void log_service(const Profile& profile, const ServiceSearch& found, spdlog::level::level_enum at) {
  if (found.service)
    spdlog::log(at, "service: {}", found.service->describe());
  else if (!found.note.empty())
    spdlog::log(at, "service: {}", found.note);
  else if (profile.service && profile.service->command.empty())
    spdlog::warn(
        "service: none of the profile's service keys names a running service; its CPU "
        "counts as foreign");
}

// A live line on a terminal, timestamped lines in a CI log; none with --quiet.
std::optional<Progress> make_progress(int windows, Nanos planned) {
  if (spdlog::get_level() > spdlog::level::info) return std::nullopt;
  return std::make_optional<Progress>(
      std::cerr, progress_style(isatty(STDERR_FILENO), process_environment()), windows, planned);
}

// Said with why, once the target answered (an unreachable target stays a
// one-line error): the placement is part of what was measured.
void log_placement(const Placement& placement, spdlog::level::level_enum at) {
  spdlog::log(at, "placement: {} ({})", placement.describe(), placement.how);
}

// A service perfgate found rather than started is pinned only when the profile
// names the cores itself; its threads get their own CPUs back at the end.
std::unique_ptr<PinnedTrees> pin_watched(const Placement& placement, const ServiceSearch& found,
                                         const ServiceProcess* started) {
  if (started || !placement.pin_watched || !found.service || placement.service.empty())
    return nullptr;
  auto pinned =
      std::make_unique<PinnedTrees>(ProcReader("/"), found.service->roots, placement.service);
  spdlog::info("placement: {} threads of the watched service pinned to CPUs {} for the run",
               pinned->threads(), format_cpu_list(placement.service));
  return pinned;
}

// What this process can still be given: the machine's available memory and
// free swap, or less under an address-space limit (ulimit -v).
uint64_t memory_at_hand() {
  uint64_t bytes = std::numeric_limits<uint64_t>::max();
  if (auto mem = ProcReader("/").memory())
    bytes = (mem->available_kib + mem->swap_free_kib) * uint64_t{1024};
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    bytes = std::min<uint64_t>(bytes, limit.rlim_cur);
  return bytes;
}

// Refused before any service starts: a plan whose windows alone need more than
// the machine has would end in "out of memory" after the load began, or in the
// OOM killer (1024 threads x 10,000 windows asked for 626 GiB).
void check_memory_floor(const LoadPlan& plan, int loads_at_once) {
  auto floor = load_memory_floor(plan);
  auto need = static_cast<double>(floor.total()) * loads_at_once;
  auto have = static_cast<double>(memory_at_hand());
  if (need <= have) return;
  auto bytes = [](double b) { return format_binary(b) + "iB"; };  // "64.00KiB"
  throw Error("the load needs at least " + bytes(need) + " of memory before its first request (" +
              std::to_string(floor.windows) + " windows of " +
              bytes(static_cast<double>(floor.per_window_bytes)) +
              " each: (load.threads + 1) x (repeat.count + 1)), and this machine has " +
              bytes(have) + " to give: fewer load.threads or a smaller repeat.count");
}

// One side's leg of a duet: both legs wait for each other before their load
// starts, so that their warm-ups and windows coincide; the other side's service
// is the sampler's companion, part of the measurement rather than foreign CPU.
struct DuetLeg {
  std::barrier<>* start = nullptr;
  std::optional<ServiceWatch> companion;
  bool arrived = false;  // at `start`: a leg that failed before must drop out of it
};

// The probe before any load; where nothing listens and perfgate starts no
// service, the line says how to have one (a newcomer met only "Couldn't connect").
void probe_reachable(const Profile& profile) {
  try {
    probe_target(profile.target, profile.load.timeout);
  } catch (const NothingListening& e) {
    if (profile.service && !profile.service->command.empty()) throw;
    throw NothingListening(std::string(e.what()) +
                           ": start the service first, or add service.command to the profile "
                           "so that perfgate starts it (docs/profile.md, \"service\")");
  }
}

// One engine run of `plan` with the host sampled around it.
Measurement run_load(const Profile& profile, const LoadPlan& plan, const std::atomic<bool>& stop,
                     const ServiceSearch& service, std::optional<WallTime> start_at,
                     Progress* progress, const Placement& placement, DuetLeg* duet = nullptr) {
  auto engine = make_load_engine(profile.load.engine, plan);  // auto looks at the whole mix
  probe_reachable(profile);
  log_service(profile, service, progress ? spdlog::level::info : spdlog::level::debug);
  log_placement(placement, progress ? spdlog::level::info : spdlog::level::debug);
  wait_for_start(start_at, stop);
  spdlog::log(progress ? spdlog::level::info : spdlog::level::debug,
              "load: {} engine, {} threads x {} connections, warmup {}, {} x {}", engine->name(),
              plan.threads, plan.connections, format_duration(plan.warmup), plan.iterations,
              format_duration(plan.duration));
  Measurement m;
  m.origin = SteadyClock::now();
  m.service = service.service;
  m.unattributed_listener = service.unattributed_listener;
  HostSampler sampler(
      ProcReader("/"), profile.saturation.interval,
      service.service ? std::optional(ServiceWatch::of(*service.service)) : std::nullopt,
      duet ? duet->companion : std::nullopt);
  if (duet) {
    duet->arrived = true;
    duet->start->arrive_and_wait();
    m.origin = SteadyClock::now();
  }
  sampler.start();
  // The windows are on the engine's schedule from its t0; the sampler reads
  // the host and the service at their very edges.
  std::vector<TimeWindow> windows;
  SteadyClock::time_point t0 = SteadyClock::now();
  LoadPlan timed = plan;
  timed.on_start = [&](SteadyClock::time_point start) {
    t0 = start;
    sampler.align(start, plan.warmup, plan.duration, plan.iterations);
  };
  ThreadCpusScope load_cpus(placement.load);  // the engine's threads inherit them
  m.load = engine->run(timed, stop, [&](const Iteration& it) {
    auto begin = t0 + plan.warmup + plan.duration * it.index;
    auto wall_end = unix_ms(std::chrono::system_clock::now());
    windows.push_back({begin, begin + it.duration});
    m.wall_ms.emplace_back(wall_end - static_cast<int64_t>(to_millis(it.duration)), wall_end);
    if (progress) progress->on_iteration(it);
  });
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

}  // namespace

// A burst of steal or a neighbour in one window of five slows that window alone,
// and the p99 pools every window: that window would decide the verdict.
std::string drop_disturbed_windows(Measurement& m, const SaturationSpec& spec) {
  std::vector<std::pair<Iteration*, std::string>> disturbed;
  size_t kept = 0;
  for (auto& it : m.load.iterations) {
    if (it.discarded) continue;
    ++kept;
    auto i = static_cast<size_t>(it.index);
    if (i >= m.windows.size()) continue;
    if (auto why = window_disturbance(m.windows[i], spec))
      disturbed.emplace_back(&it, "iteration " + std::to_string(it.index + 1) + ": " + *why);
  }
  if (disturbed.empty() || disturbed.size() * 2 >= kept) return "";
  std::string text = std::to_string(disturbed.size()) + " of " + std::to_string(kept) +
                     " windows dropped as disturbed, not judged (";
  for (size_t i = 0; i < disturbed.size(); ++i) {
    disturbed[i].first->discarded = true;
    text += (i ? "; " : "") + disturbed[i].second;
  }
  return text + ")";
}

std::vector<std::optional<double>> service_cpu(const std::vector<WindowSummary>& windows) {
  std::vector<std::optional<double>> out;
  for (const auto& w : windows) out.push_back(w.service_cpu_s);
  return out;
}

namespace {

SaturationContext saturation_context(const Profile& profile, bool paired_side) {
  SaturationContext context;
  context.service_remote = !is_loopback_url(profile.target.url);
  context.paired = paired_side;
  return context;
}

}  // namespace

Saturation judge_saturation(const Profile& profile, const Measurement& m, bool paired_side) {
  auto context = saturation_context(profile, paired_side);
  auto saturation = evaluate_saturation(kept_windows(m), profile.saturation, context);
  check_rate_achieved(m.load, saturation);
  if (!m.unattributed_listener.empty())
    for (auto* list : {&saturation.reasons, &saturation.shared})
      for (auto& reason : *list)
        if (reason.starts_with("foreign CPU"))
          reason += "; " + unattributed_advice(m.unattributed_listener);
  for (const auto& reason : saturation.reasons) spdlog::warn("load machine saturated: {}", reason);
  for (const auto& finding : saturation.shared) spdlog::info("load machine busy: {}", finding);
  return saturation;
}

// Each figure is a window's own over its whole length, as the saturation rules
// judge it, not one sample's: a sample of a few milliseconds at a window's edge
// (the sampler stops just after the window) holds a tick or two, which reads as
// hundreds of % of a core. Paired runs have such an edge at every leg.
HostSummary host_summary(const std::vector<const Measurement*>& sides, const MetricSet& metrics) {
  HostSummary h;
  h.memory_available_min_pct = 100;
  double shared_weight = 0;
  for (const auto* m : sides) {
    for (const auto& w : kept_windows(*m)) {
      if (w.samples == 0) continue;
      h.samples += w.samples;
      if (w.shared_cpu_pct) {
        h.shared_cpu_pct = h.shared_cpu_pct.value_or(0) + *w.shared_cpu_pct * w.samples;
        shared_weight += w.samples;
      }
      h.host_cpu_mean_pct += w.host_cpu_mean_pct * w.samples;
      h.host_cpu_max_pct = std::max(h.host_cpu_max_pct, w.host_cpu_mean_pct);
      h.steal_max_pct = std::max(h.steal_max_pct, w.steal_mean_pct);
      h.generator_thread_max_pct = std::max(h.generator_thread_max_pct, w.generator_thread_pct);
      h.foreign_cpu_max_pct = std::max(h.foreign_cpu_max_pct, w.foreign_cpu_mean_pct);
      h.memory_available_min_pct = std::min(h.memory_available_min_pct, w.memory_available_min_pct);
      if (w.foreign_cpu_pressure_pct)
        h.cpu_pressure_max_pct =
            std::max(h.cpu_pressure_max_pct.value_or(0), *w.foreign_cpu_pressure_pct);
    }
  }
  if (h.samples) h.host_cpu_mean_pct /= h.samples;
  if (h.shared_cpu_pct) *h.shared_cpu_pct /= shared_weight;
  if (!sides.empty()) h.service = sides.front()->service;
  if (auto it = metrics.find("service_cpu_us_per_request"); it != metrics.end())
    h.service_cpu_us_per_request = it->second;
  return h;
}

HostSummary host_summary(const Measurement& m, const MetricSet& metrics) {
  return host_summary(std::vector<const Measurement*>{&m}, metrics);
}

namespace {

// What the host did in a window, for an error that calls the machine quiet.
std::string window_figures(const Measurement& m, int index) {
  auto i = static_cast<size_t>(index);
  if (i >= m.windows.size() || m.windows[i].samples == 0) return " (no host sample covers it)";
  const auto& w = m.windows[i];
  char text[160];
  std::snprintf(text, sizeof text,
                " (that window: host CPU %.0f%%, foreign CPU %.0f%%, steal %.0f%%",
                w.host_cpu_mean_pct, w.foreign_cpu_mean_pct, w.steal_mean_pct);
  std::string out = text;
  if (w.foreign_cpu_pressure_pct) {
    std::snprintf(text, sizeof text, ", CPU pressure from other tasks %.0f%%",
                  *w.foreign_cpu_pressure_pct);
    out += text;
  }
  return out + ")";
}

}  // namespace

// A window without a single response means the target went away mid-run: no
// figure of that run describes the service. Unless the load machine was
// saturated, in the run or in that window, and nothing failed either: then a
// starved load thread (or service) may have stalled through the window, and the
// run is inconclusive, not an error.
void require_responses(const Profile& profile, const Measurement& m, Saturation& saturation) {
  const std::string url = shown_url(profile.target);
  for (const auto* it : m.load.kept()) {
    if (it->stats.responses > 0) continue;
    uint64_t errors = it->stats.errors.total();
    const ErrorCounts& e = it->stats.errors;
    // A server that answered with something that is not HTTP did answer: say what it sent.
    std::string what = e.invalid > 0 ? "no valid response from " + url + " in iteration " +
                                           std::to_string(it->index + 1) + ": " + e.invalid_text()
                                     : "no response from " + url + " in iteration " +
                                           std::to_string(it->index + 1) + " (" +
                                           std::to_string(errors) + " socket errors)";
    if (errors > 0) throw Error(what);
    // A run saturated in a minority of its windows is judged; the one that
    // stalled may be among them, and then the busy host explains it.
    auto i = static_cast<size_t>(it->index);
    auto busy = i < m.windows.size() ? window_saturation(m.windows[i], profile.saturation,
                                                         saturation_context(profile, false))
                                     : std::nullopt;
    if (!saturation.saturated && !busy)
      throw Error(what + ": the target hung, or the load machine stalled through the window" +
                  window_figures(m, it->index));
    saturation.saturated = true;
    saturation.reasons.push_back(what +
                                 (busy ? ", on a load machine saturated in that window: " + *busy
                                       : ", on a saturated load machine"));
    spdlog::warn("load machine saturated: {}", saturation.reasons.back());
  }
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
  rec.host_samples_json =
      host_samples_json(m.windows, m.samples, m.origin, 2000, m.service ? &*m.service : nullptr);
  return rec;
}

// No figure of a run whose service died describes the service: no verdict.
[[noreturn]] static void throw_service_death(const std::string& what, const LoadResult& load) {
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
  auto plan = plan_from_profile(profile);
  check_memory_floor(plan, 1);
  auto placement = resolve_placement(profile);
  {
    auto service = start_service(profile, stop, placement);
    LoadGuard guard(stop, service.get());
    auto found = attributed_service(profile, service.get());
    auto pinned = pin_watched(placement, found, service.get());
    auto progress = make_progress(plan.iterations, plan.warmup + plan.duration * plan.iterations);
    m = run_load(profile, plan, guard.stop(), found, start_at, progress ? &*progress : nullptr,
                 placement);
    if (progress) progress->finish();
    death = guard.finish();
  }  // the service stops here, before judging and reporting
  if (death) throw_service_death(*death, m.load);
  return m;
}

namespace {

// One side of a paired run while it is measured.
struct PairedSide {
  const char* name;  // "baseline" or "candidate", for the log
  const Profile& profile;
  ServiceSearch service;
  Measurement& out;
};

// A leg's single window becomes iteration `index` of its side. Its samples join
// the side's: the other side's legs lie between, so no window holds a foreign sample.
void append_leg(Measurement& side, Measurement leg, int index, bool discarded) {
  if (leg.load.iterations.empty()) return;  // stopped before its window
  if (side.load.iterations.empty()) {
    side.origin = leg.origin;
    side.service = leg.service;
    side.unattributed_listener = leg.unattributed_listener;
    side.load.engine = leg.load.engine;
    side.load.threads = leg.load.threads;
    side.load.connections = leg.load.connections;
  }
  Iteration& it = leg.load.iterations.front();
  it.index = index;
  it.discarded = discarded;
  side.load.iterations.push_back(std::move(it));
  side.load.warmup.merge(leg.load.warmup);
  WindowSummary window = leg.windows.front();
  window.iteration = index;
  side.windows.push_back(window);
  side.wall_ms.push_back(leg.wall_ms.front());
  side.samples.insert(side.samples.end(), leg.samples.begin(), leg.samples.end());
  if (leg.load.in_flight_at_end)
    side.load.in_flight_at_end =
        side.load.in_flight_at_end.value_or(0) + *leg.load.in_flight_at_end;
}

}  // namespace

namespace {

// What both schedules share while a batch of pairs is measured.
struct PairBatch {
  const Profile& candidate;
  const PairedSpec& paired;
  const std::atomic<bool>& stop;
  const Placement& placement;
  Progress* progress;
  int pairs;
  int launch_first = 0;  // the first pair of the services' current launch
  std::string intro;     // what the run is, said once both sides answered
};

// A side's first window of a launch warms the fresh service up for the whole
// load.warmup; later ones, for the leg warm-up after the other side's load.
LoadPlan leg_plan(const PairBatch& batch, const PairedSide& side, int pair) {
  LoadPlan plan = plan_from_profile(side.profile);
  plan.iterations = 1;
  plan.discard = 0;
  plan.warmup = pair == batch.launch_first ? batch.candidate.load.warmup : batch.paired.leg_warmup;
  return plan;
}

void show_leg(const PairBatch& batch, const PairedSide& side, int shown_index) {
  if (!batch.progress || side.out.load.iterations.empty()) return;
  Iteration shown = side.out.load.iterations.back();
  shown.index = shown_index;
  batch.progress->on_iteration(shown);
}

// Pair i as two windows one after the other, the order alternating A B, B A
// over the run's pairs, earlier batches counted.
void measure_alternate_pair(const PairBatch& batch, std::array<PairedSide, 2>& sides, int i) {
  bool a_first = (i + batch.paired.order_offset) % 2 == 0;
  for (int k = 0; k < 2 && !batch.stop; ++k) {
    PairedSide& side = sides[static_cast<size_t>(a_first ? k : 1 - k)];
    spdlog::debug("pair {}/{}: {} window", i + 1, batch.pairs, side.name);
    auto leg = run_load(side.profile, leg_plan(batch, side, i), batch.stop, side.service,
                        std::nullopt, nullptr, batch.placement);
    append_leg(side.out, std::move(leg), i, i < batch.candidate.repeat.discard);
    show_leg(batch, side, 2 * i + k);
  }
}

std::optional<ServiceWatch> watch_of(const ServiceSearch& found) {
  return found.service ? std::optional(ServiceWatch::of(*found.service)) : std::nullopt;
}

// Pair i as two windows at the same moments: each side's own engine on its own
// thread, both released together once ready, on the same load CPUs (each leg
// thread pins itself, and its engine's threads inherit that).
void measure_duet_pair(const PairBatch& batch, std::array<PairedSide, 2>& sides, int i) {
  std::barrier<> start(2);
  std::array<DuetLeg, 2> legs;
  std::array<Measurement, 2> measured;
  std::array<std::exception_ptr, 2> failed;
  std::array<LoadPlan, 2> plans = {leg_plan(batch, sides[0], i), leg_plan(batch, sides[1], i)};
  {
    std::array<std::jthread, 2> threads;
    for (size_t k = 0; k < 2; ++k) {
      legs[k].start = &start;
      legs[k].companion = watch_of(sides[1 - k].service);
      threads[k] = std::jthread([&, k] {
        try {
          measured[k] = run_load(sides[k].profile, plans[k], batch.stop, sides[k].service,
                                 std::nullopt, nullptr, batch.placement, &legs[k]);
        } catch (...) {
          failed[k] = std::current_exception();
          if (!legs[k].arrived) start.arrive_and_drop();  // the other leg runs alone
        }
      });
    }
  }  // both legs joined
  for (const auto& error : failed)
    if (error) std::rethrow_exception(error);
  if (!measured[0].wall_ms.empty() && !measured[1].wall_ms.empty())
    spdlog::debug("pair {}/{}: duet windows, baseline {}-{}, candidate {}-{} (Unix ms)", i + 1,
                  batch.pairs, measured[0].wall_ms.front().first,
                  measured[0].wall_ms.front().second, measured[1].wall_ms.front().first,
                  measured[1].wall_ms.front().second);
  for (size_t k = 0; k < 2; ++k) {
    append_leg(sides[k].out, std::move(measured[k]), i, i < batch.candidate.repeat.discard);
    show_leg(batch, sides[k], 2 * i + static_cast<int>(k));
  }
}

// One launch of both services (when the profiles start them) and the pairs
// [batch.launch_first, batch.launch_first + n) measured against it. A service
// that died ends the run; both stop before the next launch starts.
void measure_launch(PairBatch& batch, const Profile& baseline, int n, PairedMeasurement& out) {
  const Profile& candidate = batch.candidate;
  const bool first = batch.launch_first == 0;
  std::optional<std::string> death;
  {
    auto launch_level = first ? spdlog::level::info : spdlog::level::debug;
    auto baseline_service = start_service(baseline, batch.stop, batch.placement, launch_level);
    auto candidate_service = start_service(candidate, batch.stop, batch.placement, launch_level);
    LoadGuard baseline_guard(batch.stop, baseline_service.get());
    LoadGuard guard(baseline_guard.stop(), candidate_service.get());
    std::array<PairedSide, 2> sides = {
        PairedSide{"baseline", baseline, attributed_service(baseline, baseline_service.get()),
                   out.baseline},
        PairedSide{"candidate", candidate, attributed_service(candidate, candidate_service.get()),
                   out.candidate}};
    // Both reachable before anything is said: an unreachable side is one error line.
    probe_reachable(baseline);
    probe_reachable(candidate);
    auto level = first ? spdlog::level::info : spdlog::level::debug;
    for (const auto& side : sides) log_service(side.profile, side.service, level);
    if (first) log_placement(batch.placement, spdlog::level::info);
    if (first) spdlog::info("{}", batch.intro);
    auto pinned_base = pin_watched(batch.placement, sides[0].service, baseline_service.get());
    auto pinned_cand = pin_watched(batch.placement, sides[1].service, candidate_service.get());
    // The guard's stop also ends the pairs when a service dies.
    const std::atomic<bool>& stop = guard.stop();
    PairBatch guarded{batch.candidate, batch.paired,       stop, batch.placement, batch.progress,
                      batch.pairs,     batch.launch_first, ""};
    for (int i = batch.launch_first; i < batch.launch_first + n && !stop; ++i) {
      if (batch.paired.schedule == "duet")
        measure_duet_pair(guarded, sides, i);
      else
        measure_alternate_pair(guarded, sides, i);
    }
    death = guard.finish();
    if (!death) death = baseline_guard.finish();
    out.baseline.aborted = out.candidate.aborted = stop;
  }  // both services stop here
  if (death) throw_service_death(*death, out.candidate.load);
}

}  // namespace

PairedMeasurement measure_paired(const Profile& candidate, const Profile& baseline,
                                 const std::atomic<bool>& stop) {
  const PairedSpec& paired = candidate.paired.value();
  const bool duet = paired.schedule == "duet";
  PairedMeasurement out;
  // One placement for both sides: the candidate's profile decides it for the pair.
  auto placement = resolve_placement(candidate);
  int pairs = candidate.repeat.count;
  int block = std::max(1, paired.block);
  int launches = (pairs + block - 1) / block;
  auto leg_length = candidate.load.duration + paired.leg_warmup;
  // A duet's two windows take the time of one; every launch warms up anew.
  int sides_in_turn = duet ? 1 : 2;
  auto progress = make_progress(
      2 * pairs, sides_in_turn * (launches * candidate.load.warmup + pairs * leg_length));
  PairBatch batch{candidate, paired, stop, placement, progress ? &*progress : nullptr,
                  pairs,     0,      ""};
  batch.intro = fmt::format(
      "paired: {} pairs of {} windows, baseline at {}, {}, {}", pairs,
      format_duration(candidate.load.duration), redacted_url(paired.origin),
      duet ? "both sides at once (duet)" : "order A B, B A, ...",
      block == 1 ? "both services started anew for every pair"
                 : "both services started anew every " + std::to_string(block) + " pairs");
  for (int first = 0; first < pairs && !stop; first += block) {
    batch.launch_first = first;
    try {
      measure_launch(batch, baseline, std::min(block, pairs - first), out);
    } catch (const Error&) {
      // A signal while a later launch starts ends the run like one during the
      // load: what was measured is kept, as an aborted run.
      if (!stop || first == 0) throw;
      out.candidate.aborted = true;
    }
    if (out.candidate.aborted) break;
  }
  if (progress) progress->finish();
  out.baseline.aborted = out.candidate.aborted = out.candidate.aborted || stop;
  return out;
}

}  // namespace perfgate
