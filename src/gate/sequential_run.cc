#include "sequential_run.h"

#include <cstdio>

namespace perfgate {

SequentialPlan sequential_plan(const Profile& profile) {
  return {profile.repeat.count, profile.repeat.max_count, 2};
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

SequentialSummary sequential_summary(const SequentialPlan& plan, double confidence_pct, int taken,
                                     const std::string& unit, const std::string& stopped) {
  return {unit,   plan.count,   plan.max_count,
          taken,  plan.looks(), plan.look_confidence(confidence_pct),
          stopped};
}

std::string sequential_note(const SequentialSummary& s) {
  char level[32];
  std::snprintf(level, sizeof level, "%g", s.look_confidence);
  return "sequential: " + s.stopped + " (repeat.count " + std::to_string(s.planned) +
         ", max_count " + std::to_string(s.max_count) + "; each of up to " +
         std::to_string(s.looks) + " looks judged at " + level +
         "% confidence, so that stopping early cannot raise the false-fail rate)";
}

}  // namespace perfgate
