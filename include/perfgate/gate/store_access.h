#pragma once

// How the gate and the commands find and open the baseline store.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "perfgate/store/baseline_store.h"
#include "perfgate/store/store_lock.h"

namespace perfgate {

/// Opens a store that must exist: reading and maintenance never create one, so
/// a mistyped --store is an error, not an empty store. Throws Error.
BaselineStore open_existing_store(const std::filesystem::path& path, BaselineStore::Mode mode);

/// The store at `path` exists and is a file (not a folder, FIFO or device),
/// checked without opening it. Throws Error naming --store.
void check_store_file(const std::filesystem::path& path);

/// Before a run's load: the store at `path` can take the run (a file, or none
/// yet; writable; in a folder where SQLite can create its journal files). Says
/// what is wrong in the user's words rather than SQLite's, after the load.
void check_store_writable(const std::filesystem::path& path);

/// Stores the runs with `record` (one transaction). When another process holds
/// the store's lock past the wait allowed, the measured runs are not lost:
/// they are appended to STORE.unrecorded.jsonl beside the store, and
/// StoreLocked says where and how to add them (`perfgate store import`).
std::vector<int64_t> record_or_keep(BaselineStore& store, const std::vector<RunRecord>& runs,
                                    const std::function<std::vector<int64_t>()>& record);

}  // namespace perfgate
