#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/units.h"
#include "perfgate/store/baseline_store.h"

namespace perfgate {

/// Everything wrong with a store: SQLite's integrity check and foreign keys, then
/// perfgate's own invariants (histograms readable and matching their response
/// counts, iteration indexes 0..n-1, the eligible flag matching status, verdict
/// and saturation, no run without iterations unless aborted). Empty when clean.
std::vector<std::string> check_store(BaselineStore& store);

/// Writes the runs (all, or of one profile), oldest first, one JSON line each
/// (see to_json_line); returns how many.
int64_t export_runs(BaselineStore& store, std::ostream& out, const std::string& profile_name = "");

struct ImportCounts {
  int64_t added = 0;
  int64_t skipped = 0;  // exact duplicates of a stored run, or of an earlier line
};

/// Adds the runs of a JSON-lines export under new ids, all in one transaction;
/// a malformed line throws Error naming `source` and the line, and adds nothing.
/// Reads and writes one run at a time, so memory stays bounded whatever the size
/// of the file; `progress`, when given, hears the counts every 1000 lines.
ImportCounts import_runs(BaselineStore& store, std::istream& in, const std::string& source,
                         const std::function<void(const ImportCounts&)>& progress = {});

/// Which runs `store prune` deletes. With both set, a run goes only when it is
/// beyond the newest `keep` of its profile and branch and also older than `older_than`.
struct PruneRule {
  std::optional<int64_t> keep;  // newest runs to keep per profile + branch
  std::optional<Nanos> older_than;
};

/// What `store prune` has deleted, for history: "" when it never deleted a run,
/// else e.g. "1200 runs pruned (policy), last at 2026-12-01T12:00:00Z".
std::string pruned_summary(BaselineStore& store);
/// Remembers a prune that deleted `deleted` runs by `rule` (inside its transaction).
void note_prune(BaselineStore& store, const std::string& rule, int64_t deleted);

/// The schema version of the store at `path`, read without writing to it.
int stored_schema_version(const std::filesystem::path& path);

/// Before a run's load: the store at `path`, when it has content, is a perfgate
/// store whose pages SQLite can read (PRAGMA quick_check, one pass over the
/// file). A damaged page was found only after the whole load. Throws Error.
void check_store_sound(const std::filesystem::path& path);

/// Deletes the runs of these ids (iterations and samples with them) in one
/// transaction, without reading them: a damaged run can be removed. An id that
/// names no run deletes nothing at all. Returns how many.
int64_t delete_runs(BaselineStore& store, const std::vector<int64_t>& ids);

/// Deletes the runs the rule selects (iterations and samples with them) in one
/// transaction; returns how many.
int64_t prune_runs(BaselineStore& store, const PruneRule& rule);

}  // namespace perfgate
