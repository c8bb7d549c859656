#include "cost_phase.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "perfgate/core/error.h"
#include "perfgate/core/units.h"
#include "perfgate/host/callgrind_session.h"
#include "perfgate/host/cost_key.h"
#include "perfgate/host/runtime.h"
#include "perfgate/host/service_process.h"
#include "perfgate/load/request_sequence.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A launch's own folder for vgdb's FIFOs and the dumps, removed with them.
class CostFolder {
 public:
  CostFolder() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    std::string name = (ec ? fs::path("/tmp") : base) / "perfgate-cost-XXXXXX";
    if (!mkdtemp(name.data())) throw Error("cost phase: cannot make a folder like " + name);
    path_ = name;
  }
  ~CostFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  CostFolder(const CostFolder&) = delete;
  CostFolder& operator=(const CostFolder&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

CallgrindOptions callgrind_options(const Profile& profile) {
  return {profile.cost.cache_sim, true};
}

// What Valgrind said when the service did not come up under it: its last
// line of its own, without the "==PID== " prefix, the banner before the first
// blank line, the vgdb hint and callgrind's summary at exit ("Events" on).
std::string valgrind_said(const fs::path& folder) {
  std::string last;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().filename().string().rfind("valgrind.", 0) != 0) continue;
    std::ifstream in(entry.path());
    bool banner = true;
    for (std::string line; std::getline(in, line);) {
      if (auto end = line.find("== "); line.rfind("==", 0) == 0 && end != std::string::npos)
        line = line.substr(end + 3);
      else if (line.rfind("==", 0) == 0)
        line.clear();
      if (line.empty()) banner = false;
      if (banner || line.empty() || line.rfind("For interactive control", 0) == 0) continue;
      if (line.rfind("Events", 0) == 0) break;
      last = line;
    }
  }
  return last.empty() ? "" : " (valgrind: " + last.substr(0, 300) + ")";
}

// The service's own name in a message about its wrapped command, and the
// timeout the phase waited: cost.ready_timeout, not the timed phase's.
std::string unwrapped(std::string message, const std::string& name) {
  const std::string wrapped = "service \"valgrind\"";
  if (auto at = message.find(wrapped); at != std::string::npos)
    message.replace(at, wrapped.size(), "service \"" + name + "\" under valgrind");
  const std::string timeout = "service.ready_timeout";
  if (auto at = message.find(timeout); at != std::string::npos)
    message.replace(at, timeout.size(), "cost.ready_timeout");
  else if (message.find(" not ready: ") != std::string::npos)
    message +=
        "; cost.ready_timeout waits longer (a service starts many times slower under "
        "Valgrind)";
  return message;
}

void log_failures(const SequenceOutcome& out, const char* what) {
  if (out.failed > 0)
    spdlog::warn(
        "cost phase: {} of {} {} responses were not successes (first: {}); their cost "
        "is counted as it is",
        out.failed, out.answered, what, out.first_failure);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// How many requests each launch of a phase warms up with and counts: pinned
// by the profile, or chosen on the first launch from its warm-up's pace
// (`requests: "auto"`) and kept for every launch after it, both sides'.
struct RequestChoice {
  int requests = 0;  // 0: not chosen yet
  int warmup = 0;
  int series = 0;  // the count earlier runs of the profile took (auto_requests())
  explicit RequestChoice(const CostSpec& spec, int series_requests = 0)
      : requests(spec.requests_auto ? 0 : spec.requests),
        warmup(spec.requests_auto ? 0 : spec.warmup_requests),
        series(series_requests) {}
};

// The warm-up, with instrumentation on: on an automatic count's first launch,
// its first part's pace under the instrument sets the count and the rest of it.
void warm_up(RequestSequence& requests, const CostSpec& cost, RequestChoice& choice,
             const std::atomic<bool>& stop) {
  if (choice.requests > 0) {
    if (choice.warmup > 0) log_failures(requests.send(choice.warmup, stop), "warm-up");
    return;
  }
  // The first requests pay for Valgrind translating the code they reach (the
  // demo service's first 20: 7x the pace of those after): untimed.
  int probe = std::min(cost.warmup_requests, kPaceProbe);
  int untimed = probe / 3, timed = probe - untimed;
  if (untimed > 0) log_failures(requests.send(untimed, stop), "warm-up");
  auto started = Clock::now();
  if (timed > 0) log_failures(requests.send(timed, stop), "warm-up");
  double pace = timed > 0 ? seconds_since(started) / timed : 0;
  double target = std::chrono::duration<double>(cost.count_time).count();
  choice.requests = auto_requests(pace, target, cost.requests, choice.series);
  choice.warmup = auto_warmup(choice.requests, cost.warmup_requests);
  spdlog::info(
      "cost phase: {} requests a launch after {} to warm up (requests \"auto\": {:.1f} ms a "
      "request in the warm-up, cost.count_time {}{})",
      choice.requests, choice.warmup, pace * 1000, format_duration(cost.count_time),
      choice.requests == choice.series ? "; earlier runs' count kept" : "");
  if (choice.warmup > probe) log_failures(requests.send(choice.warmup - probe, stop), "warm-up");
}

// One launch: started under callgrind, warmed up, zeroed, N requests counted.
MetricSet count_launch(const Profile& profile, RequestChoice& choice,
                       const std::atomic<bool>& stop) {
  const CostSpec& cost = profile.cost;
  CostFolder folder;
  CallgrindSession session(folder.path(), callgrind_options(profile));
  ServiceSpec spec = *profile.service;
  spec.command = session.wrap(spec.command);
  spec.ready_timeout = cost.ready_timeout;
  ServiceProcess service(spec, {},
                         LaunchOptions{true, nullptr, folder.path().string(),
                                       [](const std::string& m) { spdlog::warn("{}", m); }});
  try {
    service.wait_ready(stop, profile.target.tls_verify);
  } catch (const Error& e) {
    throw Error("cost phase: " + unwrapped(e.what(), profile.service->command.front()) +
                valgrind_said(folder.path()));
  }
  session.monitor("instrumentation on", cost.timeout);
  RequestSequence requests(profile, cost.connections, cost.timeout);
  warm_up(requests, cost, choice, stop);
  session.monitor("zero", cost.timeout);
  auto mark = session.mark();
  auto counted = requests.send(choice.requests, stop);
  auto dumps = session.dump_since(
      mark, [&service] { return service.processes(); }, cost.timeout);
  log_failures(counted, "counted");
  if (dumps.ended > 0)
    spdlog::info(
        "cost phase: {} processes counted, {} of them children that exited during the count "
        "(each dumped before it forked: none counts twice)",
        dumps.processes, dumps.ended);
  service.stop();
  return per_request_costs(dumps.totals, counted.answered);
}

// One launch with the PMU: no Valgrind, the counter opened before the exec
// and read around the counted requests.
MetricSet count_launch_pmu(const Profile& profile, const CounterFactory& counters,
                           RequestChoice& choice, const std::atomic<bool>& stop) {
  const CostSpec& cost = profile.cost;
  auto counter = counters();
  LaunchOptions launch{true, [&counter](pid_t pid) { counter->open(pid); }, "",
                       [](const std::string& m) { spdlog::warn("{}", m); }};
  ServiceProcess service(*profile.service, {}, launch);
  service.wait_ready(stop, profile.target.tls_verify);
  RequestSequence requests(profile, cost.connections, cost.timeout);
  warm_up(requests, cost, choice, stop);
  double before = counter->read();
  auto counted = requests.send(choice.requests, stop);
  double after = counter->read();
  log_failures(counted, "counted");
  service.stop();
  if (counted.answered <= 0) throw Error("cost phase: no request was counted");
  return {{"instructions_per_request", (after - before) / counted.answered}};
}

// A stop during the phase ends the run with nothing stored: neither a
// first launch's failure that "auto" would skip nor a count of fewer launches
// than asked is a result (issue 50, item 11: such a run was stored, exit 2).
void end_if_stopped(const std::atomic<bool>& stop) {
  if (stop)
    throw Error(
        "interrupted by SIGINT or SIGTERM during the cost phase; the service was stopped, "
        "nothing stored");
}

MetricSet count_one(const Profile& profile, const CostInstrument& instrument,
                    const CounterFactory& counters, RequestChoice& choice,
                    const std::atomic<bool>& stop) {
  try {
    return instrument.name == "perf" ? count_launch_pmu(profile, counters, choice, stop)
                                     : count_launch(profile, choice, stop);
  } catch (const Error&) {
    end_if_stopped(stop);  // whatever the stop broke, the stop is what is said
    throw;
  }
}

// Under "auto" a service that cannot come up under the instrument (an ASan
// build the wrapper script execs, a runtime Valgrind does not support) leaves
// the phase without an instrument, as a missing valgrind does: the timed
// verdict stands. A named instrument or `cost.required` keeps it an error.
bool first_launch_may_skip(const Profile& profile) {
  return profile.cost.instrument == "auto" && !profile.cost.required;
}

CostRun skipped_run(const Error& e) {
  CostRun run;
  run.skipped = std::string(e.what()) + "; the timed verdict stands";
  spdlog::warn("{}", run.skipped);
  return run;
}

// The profile as the phase starts its service: a known runtime made steady
// (cost.steady_runtime), and what it runs on and what was set, for the log
// and the cost key (a runtime upgraded on the runner is no code change).
struct PhaseProfile {
  Profile profile;
  std::string runtime;  // "Python 3.11.2; python with PYTHONHASHSEED=0"; "" for none known
};

PhaseProfile phase_profile(const Profile& profile) {
  PhaseProfile out{profile, ""};
  if (!profile.service || profile.service->command.empty()) return out;
  auto runtime = detect_runtime(profile.service->command, profile.service->cwd);
  if (!runtime) return out;
  if (!runtime->shim.empty())
    spdlog::warn(
        "cost phase: {} is a script ({}), a version manager's shim perhaps: under Valgrind every "
        "program it runs starts traced too (pyenv's python3: 18 s a start instead of 1 s); "
        "name the interpreter itself (`pyenv which python3`, /usr/bin/python3)",
        runtime->program.string(), runtime->shim);
  out.runtime = runtime->version.empty() ? runtime->name : runtime->version;
  if (!profile.cost.steady_runtime) {
    out.runtime += "; as started (cost.steady_runtime: false)";
    return out;
  }
  auto steady = steady_settings(*runtime, profile.service->command, profile.service->env);
  out.profile.service->command = steady.command;
  for (const auto& variable : steady.env) out.profile.service->env.push_back(variable);
  if (!steady.said.empty()) out.runtime += "; " + steady.said;
  return out;
}

// One side's run as it starts: its instrument and the options that change
// counts (its key's, set by keyed() once the request count is known).
struct SideRun {
  CostRun run;
  std::string options;
};

SideRun started_run(const PhaseProfile& phase, const CostInstrument& instrument,
                    const std::string& side = "") {
  const Profile& profile = phase.profile;
  CostRun run;
  run.instrument = instrument.name;
  run.connections = profile.cost.connections;
  std::string options = "user-space instructions, inherited";
  if (instrument.name == "callgrind")
    options = CallgrindSession(".", callgrind_options(profile)).counting_options();
  if (!phase.runtime.empty()) {
    options += "; runtime " + phase.runtime;
    spdlog::info(
        "cost phase: {}runtime {}{}", side, phase.runtime,
        profile.cost.steady_runtime ? " (cost.steady_runtime: false starts it as is)" : "");
  }
  return {run, options};
}

// The request count and the key that comes with it: counts compare only
// between runs that sent as many requests after as long a warm-up.
CostRun keyed(SideRun side, const CostInstrument& instrument, const CostSpec& cost,
              const RequestChoice& choice) {
  CostSpec counted = cost;
  counted.requests = choice.requests;
  counted.warmup_requests = choice.warmup;
  side.run.requests = choice.requests;
  side.run.key = cost_key(instrument.name, instrument.version, side.options, counted);
  return side.run;
}

std::string kernel_release() {
  utsname u{};
  return uname(&u) == 0 ? std::string("linux-") + u.release : "linux";
}

void log_launch(const std::string& side, int launch, const MetricSet& counts) {
  spdlog::info("cost phase: {}launch {}: {:.1f} instructions per request", side, launch + 1,
               counts.at("instructions_per_request"));
}

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

}  // namespace

// Valgrind keeps a file per process in $TMPDIR (the service's, as
// service.env or perfgate's environment gives it) and gives up at start
// without it: found before the load, not after it (issue 50, item 14).
std::string valgrind_tmpdir_problem(const ServiceSpec& service) {
  std::string dir;
  for (const auto& [name, value] : service.env)
    if (name == "TMPDIR") dir = value;
  if (dir.empty())
    if (const char* own = std::getenv("TMPDIR")) dir = own;
  if (dir.empty()) return "";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return "TMPDIR (" + dir + ") is not a folder, and Valgrind keeps its files there";
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "TMPDIR (" + dir + ") takes no new file (" + std::strerror(errno) +
           "), and Valgrind keeps its files there";
  return "";
}

CostInstrument find_instrument(const Profile& profile, const CounterFactory& counters) {
  CostInstrument out;
  const CostSpec& cost = profile.cost;
  if (!cost.enabled()) return out;
  if (!profile.service || profile.service->command.empty()) {
    out.unavailable =
        "the cost phase counts a service that perfgate starts (service.command); this one is "
        "only watched";
    return out;
  }
  // Its client speaks plain HTTP only (request_sequence.h): an https target
  // is said before the load, not after it.
  for (const auto& t :
       profile.requests.empty() ? std::vector<TargetSpec>{profile.target} : profile.requests)
    if (t.url.rfind("http://", 0) != 0 && t.url.rfind("HTTP://", 0) != 0) {
      out.unavailable = "the cost phase sends plain http:// requests only, and " +
                        redacted_url(t.url) + " is not one";
      return out;
    }
  std::string no_pmu;
  if (cost.instrument == "perf" || cost.instrument == "auto") {
    no_pmu = counters()->unavailable();
    if (no_pmu.empty()) return {"perf", kernel_release(), ""};
    if (cost.instrument == "perf") return {"", "", no_pmu};
  }
  out.unavailable = valgrind_tmpdir_problem(*profile.service);
  if (out.unavailable.empty())
    out.unavailable =
        callgrind_unavailable(profile.service->command, profile.service->cwd, out.version);
  if (out.unavailable.empty()) out.name = "callgrind";
  if (!no_pmu.empty() && !out.unavailable.empty())
    out.unavailable = no_pmu + "; " + out.unavailable;
  return out;
}

CostInstrument required_instrument(const Profile& profile, const CounterFactory& counters) {
  auto instrument = find_instrument(profile, counters);
  if (profile.cost.enabled() && profile.cost.required && instrument.name.empty())
    throw Error("cost phase required (cost.required), and it cannot count here: " +
                instrument.unavailable + "; nothing was measured");
  return instrument;
}

int planned_cost_family(const Profile& profile) {
  if (!profile.cost.enabled()) return 0;
  int family = 0;
  for (const auto& def : cost_metric_defs()) {
    if (def.key == "estimated_cycles_per_request" && !profile.cost.cache_sim) continue;
    auto it = profile.thresholds.find(def.key);
    if (it != profile.thresholds.end() && (it->second.warn_pct || it->second.fail_pct)) ++family;
  }
  return family;
}

CostRun measure_cost(const Profile& profile, const CostInstrument& instrument,
                     const std::atomic<bool>& stop, const CounterFactory& counters,
                     int series_requests) {
  CostRun run;
  if (!profile.cost.enabled()) return run;
  if (instrument.name.empty()) {
    if (profile.cost.required) throw Error("cost phase required: " + instrument.unavailable);
    run.skipped = instrument.unavailable;
    return run;
  }
  auto phase = phase_profile(profile);
  auto side = started_run(phase, instrument);
  RequestChoice choice(profile.cost, series_requests);
  auto started = Clock::now();
  for (int i = 0; i < profile.cost.launches && !stop; ++i) {
    try {
      side.run.launches.push_back(count_one(phase.profile, instrument, counters, choice, stop));
    } catch (const Error& e) {
      end_if_stopped(stop);  // a stop is no reason to skip
      if (i > 0 || !first_launch_may_skip(profile)) throw;
      return skipped_run(e);
    }
    log_launch("", i, side.run.launches.back());
  }
  end_if_stopped(stop);
  run = keyed(side, instrument, profile.cost, choice);
  run.seconds = seconds_since(started);
  return run;
}

int cost_looks(const Profile& profile) {
  return profile.paired && profile.cost.enabled() &&
                 profile.cost.max_launches > profile.cost.launches
             ? 2
             : 1;
}

PairedCost measure_paired_cost(const Profile& candidate, const Profile& baseline,
                               const CostInstrument& instrument, const std::atomic<bool>& stop,
                               const CounterFactory& counters, const WantedLaunches& wanted,
                               int series_requests) {
  PairedCost out;
  if (instrument.name.empty()) {
    out.candidate = measure_cost(candidate, instrument, stop, counters);
    out.baseline = out.candidate;
    return out;
  }
  auto started = Clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  auto base_phase = phase_profile(baseline), cand_phase = phase_profile(candidate);
  auto base_side = started_run(base_phase, instrument, "baseline ");
  auto cand_side = started_run(cand_phase, instrument, "candidate ");
  // One count for both sides: the baseline's first launch chooses it.
  RequestChoice choice(candidate.cost, series_requests);
  // In turns, and each pair of launches in the other order from the last.
  auto count_pair = [&](int i) {
    for (int k = 0; k < 2; ++k) {
      bool base = (k == 0) == (i % 2 == 0);
      CostRun& side = base ? base_side.run : cand_side.run;
      side.launches.push_back(count_one(base ? base_phase.profile : cand_phase.profile, instrument,
                                        counters, choice, stop));
      log_launch(base ? "baseline " : "candidate ", i, side.launches.back());
    }
    out.baseline = keyed(base_side, instrument, candidate.cost, choice);
    out.candidate = keyed(cand_side, instrument, candidate.cost, choice);
    out.candidate.seconds = out.baseline.seconds = seconds();
  };
  const CostSpec& spec = candidate.cost;
  for (int i = 0; i < spec.launches && !stop; ++i) {
    try {
      count_pair(i);
    } catch (const Error& e) {
      end_if_stopped(stop);  // a stop is no reason to skip
      if (i > 0 || !first_launch_may_skip(candidate)) throw;
      out.candidate = skipped_run(e);
      out.baseline = out.candidate;
      return out;
    }
  }
  end_if_stopped(stop);
  int want = wanted ? wanted(out) : 0;
  if (want <= spec.launches) return out;
  int target = std::min(want, spec.max_launches);
  int i = spec.launches;
  double budget = std::chrono::duration<double>(spec.budget).count();
  for (; i < target && !stop; ++i) {
    // The pace so far, launches and their starts under the instrument included.
    double pace = seconds() / i;
    if (seconds() + pace > budget) break;
    if (i == spec.launches)
      spdlog::info("cost phase: counts undecided after {} launches a side; up to {} more", i,
                   target - i);
    count_pair(i);
  }
  end_if_stopped(stop);
  out.extension = "cost phase: counts undecided after " + std::to_string(spec.launches) +
                  " launches a side; " +
                  (i > spec.launches ? std::to_string(i - spec.launches) + " more a side counted"
                                     : std::string("none added"));
  if (i < target && !stop)
    out.extension += ", the next pair would end past cost.budget " + format_duration(spec.budget) +
                     " (" + fixed(seconds(), 0) + " s spent, about " + fixed(seconds() / i, 0) +
                     " s a pair of launches)";
  else if (i == spec.max_launches && want > spec.max_launches)
    out.extension += " (cost.max_launches " + std::to_string(spec.max_launches) + ")";
  return out;
}

std::string cost_note(const CostRun& cost, const std::string& side) {
  if (!cost.skipped.empty()) return "cost phase skipped: " + cost.skipped;
  if (!cost.ran()) return "";
  auto v = cost.values("instructions_per_request");
  std::string text = "cost phase (" + cost.instrument + "): " + side + "instructions_per_request " +
                     fixed(median(v), 1) + " over " + std::to_string(v.size()) +
                     " launches (spread " + fixed(cost.spread_pct("instructions_per_request"), 3) +
                     "%), " + std::to_string(cost.requests) + " requests x " +
                     std::to_string(cost.connections) + " connection" +
                     (cost.connections == 1 ? "" : "s") + " each, " + fixed(cost.seconds, 1) + " s";
  return text;
}

}  // namespace perfgate
