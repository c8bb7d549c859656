#include "sqlite_handle.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "perfgate/core/error.h"

namespace perfgate::sqlite {
namespace {

namespace fs = std::filesystem;

// busy_timeout already waits inside SQLite, but some lock conflicts (a WAL
// snapshot that went stale, BEGIN IMMEDIATE racing a checkpoint) return BUSY at
// once; those are retried here with a growing pause, bounded to ~60 s in all.
constexpr int kMaxAttempts = 400;
constexpr int kBusyTimeoutMs = 10'000;

bool is_busy(int rc) {
  return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

void backoff(int attempt) {
  auto pause = std::chrono::milliseconds(std::min(2 << std::min(attempt, 6), 150));
  std::this_thread::sleep_for(pause);
}

}  // namespace

void fail(Db db, std::string_view what) {
  throw Error(db.path.string() + ": " + std::string(what) + " (" + sqlite3_errmsg(db.handle) + ")");
}

Statement::Statement(Db db, std::string_view sql) : db_(db) {
  int rc = SQLITE_BUSY;
  for (int attempt = 0; is_busy(rc) && attempt < kMaxAttempts; ++attempt) {
    if (attempt > 0) backoff(attempt);
    rc = sqlite3_prepare_v2(db.handle, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) fail(db_, "store is corrupt");
  if (rc != SQLITE_OK) fail(db_, "store query failed");
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  // A busy step has done nothing yet, so it is safe to reset and try again.
  for (int attempt = 1; is_busy(rc) && attempt < kMaxAttempts; ++attempt) {
    backoff(attempt);
    sqlite3_reset(stmt_);
    rc = sqlite3_step(stmt_);
  }
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) fail(db_, "store is corrupt");
  fail(db_, "store query failed");
}

std::optional<double> Statement::real(int column) {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::text(int column) {
  auto* chars = sqlite3_column_text(stmt_, column);
  return chars ? std::string(reinterpret_cast<const char*>(chars)) : std::string();
}

std::string Statement::blob(int column) {
  auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  return std::string(bytes ? bytes : "", static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

void Statement::bind(int index, std::string_view value) {
  check(sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                          SQLITE_TRANSIENT));
}

void Statement::bind(int index, Blob value) {
  check(sqlite3_bind_blob(stmt_, index, value.bytes.data(), static_cast<int>(value.bytes.size()),
                          SQLITE_TRANSIENT));
}

void Statement::bind(int index, std::optional<double> value) {
  check(value ? sqlite3_bind_double(stmt_, index, *value) : sqlite3_bind_null(stmt_, index));
}

void exec(Db db, const std::string& sql) {
  int rc = SQLITE_BUSY;
  for (int attempt = 0; is_busy(rc) && attempt < kMaxAttempts; ++attempt) {
    if (attempt > 0) backoff(attempt);
    rc = sqlite3_exec(db.handle, sql.c_str(), nullptr, nullptr, nullptr);
  }
  if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) fail(db, "store is corrupt");
  if (rc != SQLITE_OK) fail(db, "store update failed");
}

int64_t query_int(Db db, std::string_view sql) {
  Statement stmt(db, sql);
  return stmt.step() ? stmt.int64(0) : 0;
}

Transaction::Transaction(Db db) : db_(db) {
  exec(db_, "BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!committed_) sqlite3_exec(db_.handle, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  // A busy COMMIT leaves the transaction open, so exec() may simply try again.
  exec(db_, "COMMIT");
  committed_ = true;
}

Handle connect(const fs::path& path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Handle db(raw);  // sqlite3_open_v2 allocates a handle even when it fails
  if (rc != SQLITE_OK) fail({db.get(), path}, "cannot open store");
  sqlite3_extended_result_codes(db.get(), 0);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  return db;
}

}  // namespace perfgate::sqlite
