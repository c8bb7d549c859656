// Small RAII wrappers over the SQLite C API for the store modules (internal).
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "perfgate/store/store_lock.h"

namespace perfgate::sqlite {

/// A connection with the path the user gave, so that every message says where.
struct Db {
  sqlite3* handle;
  const std::filesystem::path& path;
};

/// Throws Error "PATH: WHAT (sqlite message)".
[[noreturn]] void fail(Db db, std::string_view what);

/// SQLite's message for the handle's last error, with the system's own words
/// where an I/O error had an errno ("disk I/O error: File too large").
std::string reason(sqlite3* handle);

/// How long this process waits for other processes' locks, in all; past it, a
/// statement still locked out throws StoreLocked.
void set_lock_wait(std::chrono::milliseconds budget);

/// Bytes that bind() stores as a BLOB rather than TEXT.
struct Blob {
  std::string_view bytes;
};

/// One prepared statement, finalized on scope exit. Binding is positional, in the
/// order of the SQL's parameters.
class Statement {
 public:
  Statement(Db db, std::string_view sql);
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  template <typename... Values>
  Statement& bind_all(const Values&... values) {
    int index = 0;
    (bind(++index, values), ...);
    return *this;
  }
  /// True when a row is ready, false when done.
  bool step();
  /// Steps a statement that returns no rows.
  void run() { step(); }
  /// Ready to bind and run again.
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int64_t int64(int column) { return sqlite3_column_int64(stmt_, column); }
  std::optional<double> real(int column);
  std::string text(int column);
  std::string blob(int column);

 private:
  void bind(int index, std::integral auto value) {
    check(sqlite3_bind_int64(stmt_, index, static_cast<int64_t>(value)));
  }
  void bind(int index, std::string_view value);
  void bind(int index, Blob value);
  void bind(int index, std::optional<double> value);
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, "store query failed");
  }

  Db db_;
  sqlite3_stmt* stmt_ = nullptr;
};

/// Reads a row's columns in SELECT order, so that each reader follows its
/// column list instead of repeating indexes.
class Columns {
 public:
  explicit Columns(Statement& row) : row_(row) {}
  int64_t int64() { return row_.int64(next_++); }
  uint64_t u64() { return static_cast<uint64_t>(int64()); }
  std::optional<double> real() { return row_.real(next_++); }
  std::string text() { return row_.text(next_++); }
  std::string blob() { return row_.blob(next_++); }

 private:
  Statement& row_;
  int next_ = 0;
};

/// Runs SQL without rows; retries while another process holds the lock.
void exec(Db db, const std::string& sql);
/// The first column of the first row, 0 when there is none.
int64_t query_int(Db db, std::string_view sql);

/// BEGIN IMMEDIATE takes the write lock up front, so two perfgate processes
/// queue instead of failing half-way; rolled back unless committed.
class Transaction {
 public:
  explicit Transaction(Db db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Db db_;
  bool committed_ = false;
};

struct Closer {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Handle = std::unique_ptr<sqlite3, Closer>;

/// Opens `path` with sqlite3_open_v2 flags and a busy timeout; throws Error.
Handle connect(const std::filesystem::path& path, int flags);
/// A read-only look that leaves nothing beside the file: a read-only SQLite
/// connection to a WAL database creates -wal and -shm files it cannot remove,
/// which a refused store must not get. With no -wal file there is nothing
/// uncheckpointed, and the file is read as it is (immutable); with one, some
/// other connection is using the store and the usual connection is taken.
/// For short checks only: an immutable read does not see later writes.
Handle connect_untouched(const std::filesystem::path& path);

}  // namespace perfgate::sqlite
