#include "perfgate/store/baseline.h"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <chrono>

#include "perfgate/core/error.h"
#include "perfgate/host/host_sampler.h"

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

RunFigures stored_run_figures(const RunRecord& run) {
  std::vector<std::optional<double>> cpu(run.service_cpu_s.begin(), run.service_cpu_s.end());
  if (cpu.empty()) cpu = service_cpu_by_iteration(run.host_samples_json, run.iterations.size());
  return run_figures(run.iterations, cpu);
}

Baseline pool_runs(const std::vector<RunRecord>& runs) {
  Baseline b;
  for (const auto& run : runs) {
    b.run_ids.push_back(run.id);
    b.commits.push_back(run.ci.commit);
    auto figures = stored_run_figures(run);
    for (const auto& [key, values] : figures.values) {
      if (values.empty()) continue;
      auto& pooled = b.sample.pooled.values[key];
      pooled.insert(pooled.end(), values.begin(), values.end());
      b.sample.run_figures[key].push_back(figures.summary.at(key));
    }
  }
  // A maximum over five runs would be higher than any one run's: the typical
  // run's maximum is the fair figure to hold one run against.
  for (const auto& [key, values] : b.sample.pooled.values) {
    const MetricDef& def = *find_metric(key);
    b.sample.pooled.summary[key] = def.aggregate == Aggregate::kMax
                                       ? median(b.sample.run_figures.at(key))
                                       : aggregate(def, values);
  }
  return b;
}

BaselineSelection select_baseline(BaselineStore& store, const BaselineQuery& query,
                                  const BaselinePolicy& policy) {
  SelectionTimer timer;
  BaselineSelection s;
  if (policy.pinned_run) {
    s.baseline = pinned_baseline(store, query, *policy.pinned_run, s.notes);
    return s;
  }
  auto window = static_cast<size_t>(std::max(policy.window, 1));
  auto drift_back = static_cast<size_t>(std::max(policy.drift_window, 0));
  // Headers first: only the runs pooled below need their iterations read.
  auto runs = store.eligible_runs(query, static_cast<int>(window + drift_back),
                                  BaselineStore::Depth::kHeader);
  if (runs.empty()) {
    explain_no_baseline(store, query, s.notes);
    return s;
  }
  std::vector<RunRecord> recent(runs.begin(), runs.begin() + std::min(window, runs.size()));
  store.load_details(recent);
  s.baseline = pool_runs(recent);
  // The drift reference must not overlap the baseline: with a short history it is
  // the oldest window that does not, and none until there are two windows' worth.
  if (drift_back > 0 && runs.size() >= 2 * window) {
    size_t start = std::min(drift_back, runs.size() - window);
    std::vector<RunRecord> old(runs.begin() + static_cast<std::ptrdiff_t>(start),
                               runs.begin() + static_cast<std::ptrdiff_t>(start + window));
    store.load_details(old);
    s.drift_reference = pool_runs(old);
  }
  return s;
}

}  // namespace perfgate
