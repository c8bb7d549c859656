#include "perfgate/store/stored_run.h"

namespace perfgate {

Profile stored_profile(const RunRecord& run, const std::string& source) {
  auto no_env = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  Profile profile = parse_profile(run.profile_json, source, no_env);
  profile.hash = run.profile_hash;
  return profile;
}

ThresholdSet stored_thresholds(const RunRecord& run) {
  try {
    return stored_profile(run, "stored profile").thresholds;
  } catch (const std::exception&) {
    return {};
  }
}

std::optional<size_t> baseline_index(const std::vector<RunRecord>& runs) {
  if (runs.empty()) return std::nullopt;
  const RunRecord& latest = runs.back();
  // A paired run's baseline is its own other side, measured in the same minutes
  // (the report said "baseline: none" for every paired run).
  if (!latest.pair.empty()) {
    for (size_t i = runs.size() - 1; i-- > 0;)
      if (runs[i].pair == latest.pair && runs[i].kind == "paired-baseline") return i;
    return std::nullopt;
  }
  for (size_t i = runs.size() - 1; i-- > 0;) {
    const RunRecord& r = runs[i];
    bool same_series = r.profile_hash == latest.profile_hash && r.host.key() == latest.host.key();
    bool on_branch = latest.ci.baseline_branch.empty() || r.ci.branch == latest.ci.baseline_branch;
    if (same_series && on_branch && r.eligible_as_baseline()) return i;
  }
  return std::nullopt;
}

}  // namespace perfgate
