#include "sequential_run.h"

#include <algorithm>
#include <cstdio>

namespace perfgate {

SequentialPlan sequential_plan(const Profile& profile) {
  // Only paired runs extend: a stored run is judged on whole runs (the
  // run-level test, or none in a young store), which more windows of its one
  // launch cannot narrow (docs/statistics.md, "Sequential runs").
  if (!profile.paired) {
    SequentialPlan once{profile.repeat.count, profile.repeat.count, 2};
    once.confidence = profile.baseline.confidence;
    return once;
  }
  SequentialPlan plan{profile.repeat.count, profile.repeat.max_count, 2};
  plan.confidence = profile.baseline.confidence;
  plan.futility = true;
  // The signed-rank test's joint law over the looks is distribution-free, so
  // its boundary is computed for it.
  plan.spending = kPairedSpending;
  plan.discard = profile.repeat.discard;
  plan.block = std::max(profile.paired->block, 1);
  // Batches of whole launches (issue 39, finding 11): 2 pairs, or one block.
  plan.batch = plan.block > 1 ? plan.block * ((2 + plan.block - 1) / plan.block) : 2;
  return plan;
}

std::optional<std::string> unextended_note(const Profile& profile) {
  if (profile.paired || profile.repeat.max_count <= profile.repeat.count) return std::nullopt;
  return "repeat.max_count " + std::to_string(profile.repeat.max_count) +
         (profile.repeat.budget > Nanos(0) ? " and repeat.budget extend" : " extends") +
         " paired runs only: a stored run is judged on whole runs, which more iterations of "
         "one launch cannot narrow; this one took its count (" +
         std::to_string(profile.repeat.count) + "), judged once";
}

std::function<double(double)> look_level(const SequentialPlan& plan, int taken) {
  if (!plan.extends()) return {};
  return [plan, taken](double level) { return plan.look_confidence(level, taken); };
}

DecisionSettings look_settings(const SequentialPlan& plan, int taken) {
  DecisionSettings settings{plan.confidence, look_level(plan, taken)};
  settings.estimate_level = plan.estimate_confidence(taken);
  return settings;
}

Profile judging_profile(const Profile& profile, const SequentialPlan& plan) {
  Profile judging = profile;
  judging.baseline.confidence = plan.look_confidence(profile.baseline.confidence);
  return judging;
}

Profile batch_profile(Profile profile, int n) {
  profile.repeat.count = n;
  profile.repeat.discard = 0;
  profile.repeat.max_count = 0;
  return profile;
}

SequentialPlan budgeted(SequentialPlan plan, Nanos budget, Nanos elapsed, int taken) {
  if (budget <= Nanos(0) || taken <= 0 || !plan.extends()) return plan;
  double per = std::chrono::duration<double>(elapsed).count() / taken;
  double left = std::chrono::duration<double>(budget - elapsed).count();
  int more = per > 0 && left > 0 ? static_cast<int>(left / per) : 0;
  more -= more % std::max(plan.batch, 1);
  int most = std::max(taken, std::min(plan.max_count, taken + more));
  if (most < plan.max_count) {
    plan.max_count = most;
    plan.budget_cut = true;
  }
  return plan;
}

void append_measurement(Measurement& to, const Measurement& more) {
  int first = static_cast<int>(to.load.iterations.size());
  for (size_t i = 0; i < more.load.iterations.size(); ++i) {
    Iteration it = more.load.iterations[i];
    it.index = first + static_cast<int>(i);
    to.load.iterations.push_back(std::move(it));
    if (i < more.windows.size()) {
      WindowSummary window = more.windows[i];
      window.iteration = first + static_cast<int>(i);
      to.windows.push_back(window);
    }
    if (i < more.wall_ms.size()) to.wall_ms.push_back(more.wall_ms[i]);
  }
  to.samples.insert(to.samples.end(), more.samples.begin(), more.samples.end());
  if (more.load.in_flight_at_end) to.load.in_flight_at_end = more.load.in_flight_at_end;
  to.aborted = to.aborted || more.aborted;
}

SequentialSummary sequential_summary(const SequentialPlan& plan, int taken, const std::string& unit,
                                     const std::string& stopped, bool futility) {
  SequentialSummary s;
  s.unit = unit;
  s.planned = plan.count;
  s.max_count = plan.max_count;
  s.taken = taken;
  s.looks = plan.looks();
  s.look_confidence = plan.look_confidence(plan.confidence, taken);
  s.stopped = stopped;
  s.boundary = to_string(plan.spending);
  s.stop_look = plan.look_of(taken) + 1;
  s.estimate_confidence = plan.estimate_confidence(taken).value_or(0);
  for (int k = 0; k < plan.looks(); ++k) {
    int at = std::min(plan.max_count, plan.count + k * plan.batch);
    s.look_levels.push_back(plan.look_confidence(plan.confidence, at));
    s.estimate_levels.push_back(plan.estimate_confidence(at).value_or(0));
  }
  s.futility = futility;
  return s;
}

std::string sequential_note(const SequentialSummary& s) {
  char level[32];
  std::snprintf(level, sizeof level, "%.4g", s.look_confidence);
  std::string how = s.boundary == "bonferroni"
                        ? std::string("each of up to ") + std::to_string(s.looks) +
                              " looks judged at " + level + "% confidence"
                        : s.boundary + " alpha-spending boundary over up to " +
                              std::to_string(s.looks) + " looks; stopped at look " +
                              std::to_string(s.stop_look) + ", judged at " + level + "% confidence";
  return "sequential: " + s.stopped + " (repeat.count " + std::to_string(s.planned) +
         ", max_count " + std::to_string(s.max_count) + "; " + how +
         ", so that stopping early cannot raise the false-fail rate)";
}

}  // namespace perfgate
