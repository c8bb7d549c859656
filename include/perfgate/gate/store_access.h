#pragma once

// How the gate and the commands find and open the baseline store.

#include <filesystem>

#include "perfgate/store/baseline_store.h"

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

}  // namespace perfgate
