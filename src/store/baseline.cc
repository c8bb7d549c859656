#include "perfgate/store/baseline.h"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "perfgate/core/change_points.h"
#include "perfgate/core/error.h"
#include "perfgate/host/host_sampler.h"
#include "perfgate/store/stored_run.h"

namespace perfgate {
namespace {

std::string profile_of(const BaselineQuery& query) {
  return "profile " + query.profile_name + " on branch " + query.branch;
}

Baseline pinned_baseline(BaselineStore& store, const BaselineQuery& query, int64_t id,
                         std::vector<std::string>& notes) {
  auto run = store.run(id);
  std::string flag = "--baseline-run " + std::to_string(id);
  if (!run) throw Error(flag + ": " + store.path().string() + " holds no such run");
  if (run->profile_name != query.profile_name)
    throw Error(flag + ": that run is of profile " + run->profile_name + ", not " +
                query.profile_name);
  if (run->profile_hash != query.profile_hash)
    throw Error(flag + ": that run used other load settings (profile hash " +
                run->profile_hash.substr(0, 12) + ", now " + query.profile_hash.substr(0, 12) +
                ")");
  notes.push_back("baseline pinned to run " + std::to_string(id));
  if (!run->eligible_as_baseline())
    notes.push_back("the pinned run would not be chosen as a baseline by itself (" +
                    std::string(run->saturation.saturated   ? "saturated"
                                : run->status != "complete" ? run->status
                                                            : to_string(run->verdict)) +
                    ")");
  return pool_runs({*run});
}

// Says why nothing matched when runs exist elsewhere, so that the first run on a
// new runner is not a mystery.
void explain_no_baseline(BaselineStore& store, const BaselineQuery& query,
                         std::vector<std::string>& notes) {
  if (query.host_key.empty()) return;
  BaselineQuery any_host = query;
  any_host.host_key.clear();
  if (store.eligible_runs(any_host, 1, BaselineStore::Depth::kHeader).empty()) return;
  notes.push_back("no baseline from this host (fingerprint " + query.host_key +
                  "): " + profile_of(query) +
                  " has runs from other hosts only; --any-host compares " + "with them");
}

// How far back the noise pool and the failed replicates look, in stored runs of
// the profile (any branch, any hash): enough for a young store's history, and a
// bound on what a gate loads.
constexpr int kHistoryRuns = 60;

bool same_series(const RunRecord& run, const BaselineQuery& query) {
  bool before = query.before_run <= 0 || run.id < query.before_run;
  bool host = query.host_key.empty() || run.host.key() == query.host_key;
  return before && host && run.profile_hash == query.profile_hash;
}

// A run that measured the code it ran, whatever its verdict: complete, a gate or
// calibration run, not saturated, not rejected by a person.
bool measured_its_code(const RunRecord& run) {
  bool kind = run.kind == "gate" || run.kind == "calibration";
  return kind && run.status == "complete" && !run.saturation.saturated &&
         run.review.state != "rejected";
}

// Earlier runs of this profile, hash and host that measured their code, newest
// first, without their iterations.
std::vector<RunRecord> measured_history(BaselineStore& store, const BaselineQuery& query) {
  std::vector<RunRecord> out;
  for (auto& listed : store.runs(query.profile_name, "", kHistoryRuns))
    if (same_series(listed, query) && measured_its_code(listed)) out.push_back(std::move(listed));
  return out;
}

// Runs of one commit ran the same code: their spread is the machine's alone. A
// run without a commit can only be grouped with its branch's, which may mix
// code changes into the spread (so the pool errs wide, never narrow).
std::string code_of(const RunRecord& run) {
  return run.ci.commit.empty() ? "branch " + run.ci.branch : "commit " + run.ci.commit;
}

// The UTC day a run was made on: runs of one job share it, and its luck.
std::string day_of(const RunRecord& run) {
  return run.created_at.substr(0, 10);
}

// The noise pool `baseline` is judged with: the measured history less the
// baseline's own runs, which in the pool too would count their variance twice,
// once there and once in the window's own spread.
std::map<std::string, RunNoise, std::less<>> pool_beside(std::vector<RunRecord> history,
                                                         const Baseline& baseline) {
  std::erase_if(history, [&](const RunRecord& run) {
    return std::find(baseline.run_ids.begin(), baseline.run_ids.end(), run.id) !=
           baseline.run_ids.end();
  });
  return pooled_noise(history);
}

// --baseline-run: that run alone, judged with the pool of the others.
BaselineSelection pinned_selection(BaselineStore& store, const BaselineQuery& query, int64_t id) {
  BaselineSelection s;
  s.baseline = pinned_baseline(store, query, id, s.notes);
  s.baseline->sample.run_noise = pool_beside(measured_history(store, query), *s.baseline);
  return s;
}

// A failed run of the baseline branch whose commit is also a window run's ran
// the window's code: its failure was the machine's (a placement, a neighbour),
// so it joins the window rather than leaving the window with only the lucky runs.
std::vector<RunRecord> failed_replicates(const std::vector<RunRecord>& history,
                                         const std::vector<RunRecord>& window,
                                         const BaselineQuery& query) {
  std::set<std::string> commits;
  std::set<int64_t> ids;
  for (const auto& run : window) {
    if (!run.ci.commit.empty()) commits.insert(run.ci.commit);
    ids.insert(run.id);  // an accepted failed run is in the window already
  }
  int64_t oldest = window.back().id;
  std::vector<RunRecord> out;
  for (const auto& run : history)
    if (run.kind == "gate" && run.verdict == Verdict::kFail && run.id > oldest &&
        !ids.contains(run.id) && run.ci.branch == query.branch && commits.contains(run.ci.commit))
      out.push_back(run);
  return out;
}

// The runs of the window's period on the baseline branch that are no baseline
// (they regressed, by their judgement: RunRecord::regressed), not in the
// window: they count toward its spread, not its level (issue 46). Leaving them
// out would keep only the runs that landed near the window, too narrow a spread.
std::vector<RunRecord> period_others(const std::vector<RunRecord>& history,
                                     const std::vector<RunRecord>& window,
                                     const BaselineQuery& query) {
  std::set<int64_t> ids;
  int64_t oldest = window.front().id;
  for (const auto& run : window) {
    ids.insert(run.id);
    oldest = std::min(oldest, run.id);
  }
  std::vector<RunRecord> out;
  for (const auto& run : history)
    if (run.kind == "gate" && run.id > oldest && !ids.contains(run.id) &&
        run.ci.branch == query.branch && !run.eligible_as_baseline())
      out.push_back(run);
  return out;
}

// Per metric, the figures of `runs`.
std::map<std::string, std::vector<double>, std::less<>> figures_of(
    const std::vector<RunRecord>& runs) {
  std::map<std::string, std::vector<double>, std::less<>> out;
  for (const auto& run : runs) {
    auto figures = run_figures_of(run);
    for (const auto& [key, value] : figures.summary)
      if (!figures.values.at(key).empty()) out[key].push_back(value);
  }
  return out;
}

// How long choosing took, at debug level: bench/store_scale.sh reads it, since a
// run's choice is made among everything else it does before the load.
class SelectionTimer {
 public:
  ~SelectionTimer() {
    std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - started_;
    spdlog::debug("baseline selected in {:.1f} ms", took.count());
  }

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace

std::map<std::string, RunNoise, std::less<>> pooled_noise(const std::vector<RunRecord>& history) {
  // (day, code) -> metric -> the figure of each of its runs: a group is one
  // job's runs of one code (a calibration, a commit's re-runs), and its day.
  std::map<std::pair<std::string, std::string>,
           std::map<std::string, std::vector<double>, std::less<>>>
      by_group;
  for (const auto& run : history) {
    auto figures = run_figures_of(run);
    for (const auto& [key, value] : figures.summary)
      if (!figures.values.at(key).empty())
        by_group[{day_of(run), code_of(run)}][key].push_back(value);
  }
  std::map<std::string, std::vector<std::vector<double>>, std::less<>> groups;
  std::map<std::string, std::vector<std::string>, std::less<>> days;
  for (auto& [group, metrics] : by_group)
    for (auto& [key, figures] : metrics) {
      groups[key].push_back(std::move(figures));
      days[key].push_back(group.first);
    }
  std::map<std::string, RunNoise, std::less<>> out;
  for (const auto& [key, list] : groups) {
    auto noise = pooled_run_noise(list, days.at(key));
    if (noise.within_df > 0) out[key] = noise;
  }
  return out;
}

std::map<std::string, RunNoise, std::less<>> store_noise_pool(BaselineStore& store,
                                                              const BaselineQuery& query) {
  return pooled_noise(measured_history(store, query));
}

CostBaseline cost_baseline(BaselineStore& store, const Baseline& baseline, const std::string& key) {
  CostBaseline out;
  out.unit = "runs";
  if (key.empty()) return out;
  for (int64_t id : baseline.run_ids) {
    auto run = store.run(id);
    if (!run || !run->cost.ran() || run->cost.key != key) continue;
    MetricSet unit;
    for (const auto& def : cost_metric_defs())
      if (auto v = run->cost.values(def.key); !v.empty()) unit[std::string(def.key)] = median(v);
    out.units.push_back(std::move(unit));
  }
  return out;
}

int stored_cost_requests(BaselineStore& store, const std::string& profile_name,
                         const std::string& instrument) {
  int requests = 0;
  store.each_run(profile_name, "", kHistoryRuns, [&](RunRecord&& run) {
    if (requests == 0 && run.cost.ran() && run.cost.instrument == instrument)
      requests = run.cost.requests;
  });
  return requests;
}

CountNoisePool stored_count_noise(BaselineStore& store, const std::string& profile_name,
                                  const std::string& key, int64_t before_run) {
  if (key.empty()) return {};
  std::vector<CostRun> runs;
  store.each_run(profile_name, "", kHistoryRuns, [&](RunRecord&& run) {
    if (static_cast<int>(runs.size()) >= kCountPoolRuns) return;
    if (before_run != 0 && run.id >= before_run) return;
    if (run.cost.key == key && run.cost.launches.size() >= 2) runs.push_back(std::move(run.cost));
  });
  return pooled_count_noise(runs);
}

Baseline pool_runs(const std::vector<RunRecord>& runs) {
  Baseline b;
  std::map<std::string, std::set<std::string>, std::less<>> days;  // metric -> its runs' days
  for (const auto& run : runs) {
    b.run_ids.push_back(run.id);
    b.commits.push_back(run.ci.commit);
    auto figures = run_figures_of(run);
    for (const auto& [key, values] : figures.values) {
      if (values.empty()) continue;
      auto& pooled = b.sample.pooled.values[key];
      pooled.insert(pooled.end(), values.begin(), values.end());
      b.sample.run_figures[key].push_back(figures.summary.at(key));
      days[key].insert(day_of(run));
    }
  }
  for (const auto& [key, set] : days) b.sample.run_days[key] = static_cast<int>(set.size());
  // A maximum over five runs would be higher than any one run's: the typical
  // run's maximum is the fair figure to hold one run against. So is the typical
  // run's quantile (each of its merged histogram), as this run's is one run's.
  for (const auto& [key, values] : b.sample.pooled.values) {
    const MetricDef& def = *find_metric(key);
    b.sample.pooled.summary[key] = def.aggregate == Aggregate::kMedian
                                       ? aggregate(def, values)
                                       : median(b.sample.run_figures.at(key));
  }
  return b;
}

namespace {

std::string placement_text(double shared_cpu_pct) {
  return std::to_string(static_cast<int>(std::lround(shared_cpu_pct))) + " % of samples";
}

// The runs of the judged run's placement class (or of none known), newest
// first, at most `limit` (each run's class is read with its stored figures).
// Says what was left out of the newest `window`, or, when nothing of its class
// is left, why the run cannot be compared (s.incomparable).
std::vector<RunRecord> same_placement(std::vector<RunRecord> runs, const BaselinePolicy& policy,
                                      size_t window, size_t limit, BaselineSelection& s) {
  std::vector<RunRecord> kept;
  size_t looked = 0, left_out = 0;
  std::string other;
  for (auto& run : runs) {
    if (kept.size() >= limit) break;
    auto pct = stored_shared_cpu_pct(run);
    bool differs = pct && placement_class(*pct) != policy.placement_class;
    if (differs && looked < window) {
      ++left_out;
      other = placement_class(*pct);
    }
    ++looked;
    if (!differs) kept.push_back(std::move(run));
  }
  std::string mine = "this run's load and service shared a CPU in " +
                     placement_text(policy.shared_cpu_pct) + " (" + policy.placement_class + ")";
  if (kept.empty()) {
    s.incomparable = "placement: " + mine + ", and every eligible baseline run was " + other +
                     ": runs of another placement class cost the service differently per "
                     "request, so this run is not judged against them (inconclusive); it is "
                     "stored as a baseline for " +
                     policy.placement_class + " runs";
  } else if (left_out > 0) {
    s.notes.push_back("placement: " + mine + "; " + std::to_string(left_out) + " of the " +
                      std::to_string(std::min(window, looked)) + " newest baseline runs were " +
                      other + " and are left out: judged against runs of its own class");
  }
  return kept;
}

std::string short_commit(const std::string& commit) {
  return commit.substr(0, 7);
}

std::string step_text(const RunChangePoint& cp) {
  std::string size = std::isnan(cp.size_pct) ? "from 0" : [&] {
    char text[32];
    std::snprintf(text, sizeof text, "%+.1f %%", cp.size_pct);
    return std::string(text);
  }();
  char p[16];
  std::snprintf(p, sizeof p, "%.3f", cp.p);
  return cp.metric + " " + size + ", p=" + p;
}

// The runs of `runs` (newest first) that are the baseline's level: `size` of
// them from `from` on.
struct Level {
  size_t from = 0;
  size_t size = 0;
};

// How many of `runs` (newest first) stand at or after the run that opened `cp`.
size_t runs_since(const std::vector<RunRecord>& runs, const RunChangePoint& cp) {
  auto at = std::find_if(runs.begin(), runs.end(),
                         [&](const RunRecord& run) { return run.id == cp.run_id; });
  return static_cast<size_t>(at - runs.begin()) + 1;
}

std::string change_point_text(const RunChangePoint& cp) {
  return "change point at run " + std::to_string(cp.run_id) +
         (cp.commit.empty() ? "" : " (commit " + short_commit(cp.commit) + ")") + ": " +
         step_text(cp);
}

// The level before the oldest regressing step `held` (`since` runs at or after
// it): nobody accepted a run of the new level (an accepted run ends the
// eligible runs), so it is a regression still, not the normal. Bounded below
// by the nearest older change point a level away (steps of two metrics a run
// or two apart are one event).
Level held_level(const std::vector<RunRecord>& runs, const std::vector<RunChangePoint>& points,
                 const RunChangePoint& held, size_t since, std::vector<std::string>& notes) {
  size_t bound = runs.size();
  for (const auto& cp : points)
    if (size_t older = runs_since(runs, cp); older >= since + kChangePointMinSegment)
      bound = std::min(bound, older);
  notes.push_back(change_point_text(held) + ", a regression nobody accepted: the baseline is the " +
                  "level before it, " + std::to_string(bound - since) +
                  " run(s), until `perfgate accept` makes a run since it the new normal");
  return {since, bound - since};
}

// The baseline's level among `runs` (newest first, their figures read): the runs
// before the oldest regressing change point of a gated metric (held_level);
// else the runs since the newest change point, when it lies among the newest
// `window` and leaves at least a minimum segment; else all of `runs`. Says
// which step it was.
Level current_level(std::vector<RunRecord>& runs, size_t window, std::vector<std::string>& notes) {
  Level all{0, runs.size()};
  if (runs.size() < 2 * kChangePointMinSegment) return all;
  std::reverse(runs.begin(), runs.end());  // the search wants them oldest first
  auto points = history_change_points(runs, gated_metrics(runs.back()));
  std::reverse(runs.begin(), runs.end());
  const RunChangePoint *held = nullptr, *newest = nullptr;
  size_t held_since = 0, segment = runs.size();
  for (const auto& cp : points) {
    size_t since = runs_since(runs, cp);
    if (cp.regressing && since > held_since) {
      held = &cp;
      held_since = since;
    }
    if (since < segment) {
      segment = since;
      newest = &cp;
    }
  }
  if (held) return held_level(runs, points, *held, held_since, notes);
  size_t needed = std::min(window, kChangePointMinSegment);
  if (!newest || segment >= std::min(window, runs.size()) || segment < needed) return all;
  notes.push_back(change_point_text(*newest) + "; the baseline is the " + std::to_string(segment) +
                  " run(s) since, not the level before it");
  return {0, segment};
}

}  // namespace

double change_point_min_step_pct(const ThresholdSet& limits, std::string_view metric) {
  auto it = limits.find(metric);
  if (it == limits.end()) return kChangePointDefaultStepPct;
  return it->second.warn_pct.value_or(it->second.fail_pct.value_or(kChangePointDefaultStepPct));
}

std::vector<std::string> gated_metrics(const RunRecord& run) {
  std::vector<std::string> out;
  for (const auto& [key, limits] : stored_thresholds(run))
    if (limits.any()) out.push_back(key);
  if (out.empty()) out = {"throughput_rps", "latency_p99_ms"};
  return out;
}

namespace {

// The branch a run's history lives on: its baseline branch, its own without one.
const std::string& history_branch(const RunRecord& run) {
  return run.ci.baseline_branch.empty() ? run.ci.branch : run.ci.baseline_branch;
}

}  // namespace

std::vector<RunRecord> main_history(const std::vector<RunRecord>& runs, const RunRecord& newest) {
  const std::string& branch = history_branch(newest);
  std::vector<RunRecord> out;
  for (const auto& run : runs)
    if (run.profile_name == newest.profile_name && run.profile_hash == newest.profile_hash &&
        run.host.key() == newest.host.key() && run.ci.branch == branch && run.kind == "gate" &&
        measured_its_code(run))
      out.push_back(run);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

std::vector<RunChangePoint> history_change_points(const std::vector<RunRecord>& history,
                                                  const std::vector<std::string>& metrics) {
  std::vector<std::map<std::string, double, std::less<>>> figures;
  for (const auto& run : history) figures.push_back(run_figures_of(run).summary);
  std::vector<RunChangePoint> out;
  if (history.empty()) return out;
  ThresholdSet limits = stored_thresholds(history.back());
  for (const auto& metric : metrics) {
    std::vector<double> values;
    std::vector<size_t> at;  // index in `history` of each value
    for (size_t i = 0; i < history.size(); ++i)
      if (auto it = figures[i].find(metric); it != figures[i].end() && std::isfinite(it->second)) {
        values.push_back(it->second);
        at.push_back(i);
      }
    double min_step = change_point_min_step_pct(limits, metric) / 100;
    const MetricDef* def = find_metric(metric);
    for (const auto& cp : find_change_points(values, min_step)) {
      const RunRecord& run = history[at[cp.index]];
      bool worse =
          def && (def->better == Better::kHigher ? cp.relative_size < 0 : !(cp.relative_size <= 0));
      out.push_back(
          {metric, run.id, run.ci.commit, at[cp.index], cp.relative_size * 100, cp.p, worse});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.index < b.index; });
  return out;
}

std::vector<RunRecord> searched_history(BaselineStore& store, const RunRecord& newest) {
  return main_history(store.runs(newest.profile_name, history_branch(newest), kChangePointRuns),
                      newest);
}

std::vector<RunChangePoint> confirmed_change_points(BaselineStore& store, const RunRecord& newest) {
  if (newest.ci.change_request || newest.ci.branch != history_branch(newest)) return {};
  auto history = searched_history(store, newest);
  if (history.size() < 2 * kChangePointMinSegment || history.back().id != newest.id) return {};
  auto metrics = gated_metrics(history.back());
  auto with = history_change_points(history, metrics);
  history.pop_back();
  auto without = history_change_points(history, metrics);
  std::erase_if(with, [&](const RunChangePoint& cp) {
    // A step already seen may move by a run or two as runs arrive: still the same.
    return std::any_of(without.begin(), without.end(), [&](const RunChangePoint& old) {
      size_t apart = old.index > cp.index ? old.index - cp.index : cp.index - old.index;
      return old.metric == cp.metric && apart < kChangePointMinSegment;
    });
  });
  return with;
}

BaselineSelection select_baseline(BaselineStore& store, const BaselineQuery& query,
                                  const BaselinePolicy& policy) {
  SelectionTimer timer;
  if (policy.pinned_run) return pinned_selection(store, query, *policy.pinned_run);
  BaselineSelection s;
  auto window = static_cast<size_t>(std::max(policy.window, 1));
  auto drift_back = static_cast<size_t>(std::max(policy.drift_window, 0));
  // Headers first: only the runs pooled below need their iterations read.
  bool by_placement = !policy.placement_class.empty();
  auto wanted = window + drift_back;
  // A class of runs may be a minority of the recent history: look further back.
  auto runs = store.eligible_runs(
      query, static_cast<int>(by_placement ? std::max<size_t>(wanted, kHistoryRuns) : wanted),
      BaselineStore::Depth::kHeader);
  if (runs.empty()) {
    explain_no_baseline(store, query, s.notes);
    return s;
  }
  if (by_placement) {
    runs = same_placement(std::move(runs), policy, window, wanted, s);
    if (runs.empty()) return s;
  }
  // The current level is searched for among the runs read for the drift
  // guard too: what `store prune --policy` keeps, so pruning changes no baseline.
  // Their rows carry their figures: no iterations are read.
  Level level = current_level(runs, window, s.notes);
  auto first = runs.begin() + static_cast<std::ptrdiff_t>(level.from);
  std::vector<RunRecord> recent(first,
                                first + static_cast<std::ptrdiff_t>(std::min(window, level.size)));
  auto history = measured_history(store, query);
  auto replicates = failed_replicates(history, recent, query);
  if (by_placement)  // the same code measured in the other class is no replicate of this one
    std::erase_if(replicates, [&](const RunRecord& run) {
      auto pct = stored_shared_cpu_pct(run);
      return pct && placement_class(*pct) != policy.placement_class;
    });
  if (!replicates.empty())
    s.notes.push_back(std::to_string(replicates.size()) +
                      " failed run(s) of a baseline commit kept in the baseline: the same code, "
                      "so the machine's noise, not a regression");
  recent.insert(recent.end(), replicates.begin(), replicates.end());
  std::sort(recent.begin(), recent.end(), [](const auto& a, const auto& b) { return a.id > b.id; });
  s.baseline = pool_runs(recent);
  auto others = period_others(history, recent, query);
  if (by_placement)
    std::erase_if(others, [&](const RunRecord& run) {
      auto pct = stored_shared_cpu_pct(run);
      return pct && placement_class(*pct) != policy.placement_class;
    });
  s.baseline->sample.spread_figures = figures_of(others);
  std::set<std::string> days;
  for (const auto& run : recent) days.insert(day_of(run));
  if (std::min(recent.size(), days.size()) < static_cast<size_t>(kPooledNoiseBelowRuns))
    s.baseline->sample.run_noise = pool_beside(history, *s.baseline);
  // The drift reference must not overlap the baseline: with a short history it is
  // the oldest window that does not, and none until there are two windows' worth.
  if (drift_back > 0 && runs.size() >= 2 * window) {
    size_t start = std::min(drift_back, runs.size() - window);
    std::vector<RunRecord> old(runs.begin() + static_cast<std::ptrdiff_t>(start),
                               runs.begin() + static_cast<std::ptrdiff_t>(start + window));
    s.drift_reference = pool_runs(old);
  }
  return s;
}

}  // namespace perfgate
