#pragma once

#include <cstdint>

#include "perfgate/store/baseline_store.h"

namespace perfgate {

/// `store prune --policy`: what a store must keep so that every later run is
/// judged exactly as it would be against the whole history.
struct PrunePolicy {
  /// Newest runs kept per profile and branch whatever they are (history of
  /// feature branches, failed and saturated runs included).
  int64_t keep_last = 20;
};

struct PruneResult {
  int64_t deleted = 0;
  int64_t kept = 0;
};

/// Keeps, and deletes every other run in one transaction:
/// - per profile (name and hash), baseline branch and host, and per profile and
///   branch on any host (for --any-host), the newest `window + drift_window`
///   baseline-eligible runs, the numbers taken from the profile as the newest of
///   its runs stored it: exactly what baseline selection and the drift guard read;
/// - every accepted run (the audit trail of a new normal);
/// - the newest `keep_last` runs of each profile and branch;
/// - the other side of every kept paired run;
/// - the newest run of the store, so that no id is ever given twice.
/// Profiles and host fingerprints no run refers to any more go with them.
PruneResult prune_by_policy(BaselineStore& store, const PrunePolicy& policy);

}  // namespace perfgate
