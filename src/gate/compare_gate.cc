#include <cstdio>
#include <string>

#include "gate_pipeline.h"
#include "perfgate/store/stored_run.h"
#include "sequential_run.h"

// `perfgate compare`: the run's pipeline with the measurement taken from the
// store and nothing stored; the profile and limits are the run's own.
namespace perfgate {
namespace {

// A stored-mode run's iterations past repeat.discard that are not judged were
// dropped as disturbed when it ran (drop_disturbed_windows): say so again.
std::optional<std::string> dropped_windows_note(const Profile& profile, const RunRecord& run) {
  if (run.kind != "gate") return std::nullopt;  // a paired run's screening drops pairs
  std::string which;
  int measured = 0, dropped = 0;
  for (const auto& it : run.iterations) {
    if (it.index < profile.repeat.discard) continue;
    ++measured;
    if (!it.discarded) continue;
    which += (dropped++ ? ", " : "") + std::to_string(it.index + 1);
  }
  if (dropped == 0) return std::nullopt;
  return std::to_string(dropped) + " of " + std::to_string(measured) +
         " windows were dropped as disturbed when it ran, not judged (iteration" +
         (dropped > 1 ? "s " : " ") + which + ")";
}

}  // namespace

GateResult rejudge_run(BaselineStore& store, int64_t run_id, const RunOptions& options) {
  auto run = store.run(run_id);
  if (!run) throw Error(store.path().string() + ": no run " + std::to_string(run_id));
  std::string source = "run " + std::to_string(run_id) + "'s stored profile";
  Profile profile = stored_profile(*run, source);
  BaselineQuery query{run->profile_name, run->profile_hash, run->ci.baseline_branch,
                      options.any_host ? "" : run->host.key(), run->id};
  BaselinePolicy policy{profile.baseline.window, profile.baseline.drift_window,
                        options.baseline_run};
  bool paired = !run->pair.empty();
  // A paired run with paired.block above 1 was judged one value per launch.
  int block = paired && profile.paired ? profile.paired->block : 1;
  auto shared = paired || options.any_placement ? std::nullopt : stored_shared_cpu_pct(*run);
  if (shared) {
    policy.placement_class = placement_class(*shared);
    policy.shared_cpu_pct = *shared;
  }
  auto selection = paired ? paired_selection(store, *run, options, block)
                          : select_baseline(store, query, policy);
  // The counts against the baseline runs' of the same key, with the launch
  // noise the run saw: only runs older than it.
  if (!paired && selection.baseline && run->cost.ran()) {
    selection.cost = cost_baseline(store, *selection.baseline, run->cost.key);
    selection.cost.pool = stored_count_noise(store, run->profile_name, run->cost.key, run->id);
  }
  // A sequential run's every look had a share of alpha: it is judged again as
  // its last look was, not at the profile's whole confidence. A paired run's
  // boundary level is the look's after the pairs it measured (pairs measured
  // again for disturbance count too: a later look, at Pocock's nearly equal
  // levels the same or a little stricter).
  auto plan = sequential_plan(profile);
  int taken = static_cast<int>(run->iterations.size());
  GateResult result = paired ? judged(profile, *run, stored_run_figures(*run, block), selection,
                                      look_level(plan, taken), plan.estimate_confidence(taken))
                             : judged(judging_profile(profile, plan), *run,
                                      stored_run_figures(*run, block), selection);
  inconclusive_placement(selection, result);
  result.profile_source = source;
  result.run_id = run->id;
  result.recorded = true;
  if (paired)
    result.notes.push_back("paired run: judged against its baseline side, run " +
                           std::to_string(*result.baseline_run_id) +
                           ", on the pair-by-pair ratios");
  note_shared_load(run->saturation, result.notes);
  if (auto dropped = dropped_windows_note(profile, *run)) result.notes.push_back(*dropped);
  if (plan.extends()) {
    char level[32], estimate[32];
    std::snprintf(level, sizeof level, "%.4g", result.confidence);
    std::snprintf(estimate, sizeof estimate, "%.4g", plan.estimate_confidence(taken).value_or(0));
    result.notes.push_back(std::string("sequential run (repeat.max_count): judged at ") + level +
                           "% confidence, the fail limit on the estimate's " + estimate +
                           "% bound, as its last look was");
  }
  result.notes.push_back("judged again from the store (stored verdict: " +
                         std::string(to_string(run->verdict)) + "); nothing was stored");
  return result;
}

}  // namespace perfgate
