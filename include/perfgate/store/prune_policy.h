#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "perfgate/store/baseline_store.h"

namespace perfgate {

/// `store prune --policy`: what a store must keep so that every later run is
/// judged exactly as it would be against the whole history.
struct PrunePolicy {
  /// Newest runs kept per profile and branch whatever they are (history of
  /// feature branches, failed and saturated runs included).
  int64_t keep_last = 20;
  /// The store's file at most this big: past it, the oldest runs that judging
  /// does not need go too (keep_last's first), then the file is vacuumed.
  std::optional<int64_t> max_bytes;
};

struct PruneResult {
  int64_t deleted = 0;
  int64_t kept = 0;
  int64_t bytes = 0;  // the file's size afterwards (with max_bytes; else 0)
  /// With max_bytes: the runs judging needs alone are bigger than that.
  bool over_size = false;
};

/// "50MB", "1.5GiB", "800kB", "4096": decimal (kB, MB, GB) and binary (KiB,
/// MiB, GiB) units, B or none for bytes; nullopt when malformed or not positive.
std::optional<int64_t> parse_byte_size(std::string_view text);

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
/// With max_bytes, the oldest runs outside the first four kinds go until the used
/// pages fit, and the file is vacuumed and its WAL folded in: its size on disk is
/// what a CI cache carries.
PruneResult prune_by_policy(BaselineStore& store, const PrunePolicy& policy);

}  // namespace perfgate
