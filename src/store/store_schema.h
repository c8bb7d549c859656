// The store's schema, its migrations and the checks made before a file is
// opened for writing (internal to the store modules).
#pragma once

#include <filesystem>

#include "sqlite_handle.h"

namespace perfgate::store_schema {

/// Rejects, without writing a byte, a file that is not a perfgate store or has a
/// schema newer than this perfgate understands.
void check_is_perfgate_store(const std::filesystem::path& path);
/// For a store opened read-only: refuses one whose schema is not current,
/// before a connection that would leave journal files beside it.
void check_current_schema(const std::filesystem::path& path);
/// Readies a fresh connection: foreign keys, WAL, and the schema created or
/// migrated to the current version (a read-only store must already be current).
void prepare(sqlite::Db db);
bool is_read_only(sqlite3* db);
/// PRAGMA user_version of a file that passed check_is_perfgate_store().
int64_t read_version(const std::filesystem::path& path);

}  // namespace perfgate::store_schema
