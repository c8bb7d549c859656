#include "sqlite_handle.h"

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>

#include "perfgate/core/error.h"
#include "perfgate/core/stop_signal.h"

namespace perfgate::sqlite {
namespace {

namespace fs = std::filesystem;

// The busy handler waits inside SQLite, but some lock conflicts (a WAL snapshot
// that went stale, BEGIN IMMEDIATE racing a checkpoint) return BUSY at once;
// those are retried here with a growing pause. Both waits draw on one budget
// for the whole process: every retry starting a fresh wait of its own added up
// to about an hour. A stop signal ends both.
constexpr int kBusyPauseMs = 10;
constexpr int kBusyQuietMs = 200;  // a lock held this briefly is not worth a log line

std::atomic<int64_t> lock_wait_budget_ms{kDefaultLockWait.count()};
std::atomic<int64_t> lock_waited_ms{0};
std::atomic<bool> lock_wait_logged{false};

bool is_busy(int rc) {
  return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

bool budget_left() {
  return lock_waited_ms.load() < lock_wait_budget_ms.load();
}

// Sleeps `ms` of the budget, saying once, when the wait becomes noticeable, why.
void pause_for_lock(sqlite3* db, int64_t ms) {
  if (lock_waited_ms.load() + ms > kBusyQuietMs && !lock_wait_logged.exchange(true))
    spdlog::info("waiting for the store lock on {} (another process is using it, up to {}s)",
                 sqlite3_db_filename(db, "main"),
                 std::max<int64_t>(1, (lock_wait_budget_ms.load() + 999) / 1000));
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  lock_waited_ms += ms;
}

// SQLite's busy_timeout, plus what it cannot do: say why the run pauses, keep
// to the one budget, and give up at once on SIGINT/SIGTERM.
int on_busy(void* db, int /*calls*/) {
  if (stop_requested() || !budget_left()) return 0;
  pause_for_lock(static_cast<sqlite3*>(db), kBusyPauseMs);
  return 1;
}

// The first attempt always runs: a signal or a spent budget stops waiting, not working.
bool keep_trying(int rc, int attempt) {
  return is_busy(rc) && (attempt == 0 || (!stop_requested() && budget_left()));
}

// A lock still held when a signal came or the budget ran out: the store was
// left as it was.
void fail_if_locked(Db db, int rc) {
  if (!is_busy(rc)) return;
  if (stop_requested())
    fail(db, "interrupted while waiting for the store lock; the store is unchanged");
  auto waited_s = std::to_string((lock_waited_ms.load() + 500) / 1000);
  throw StoreLocked(db.path.string() + ": the store is locked by another process (" +
                    reason(db.handle) + "); gave up after waiting " + waited_s +
                    "s in all for its lock (see --lock-wait); the store is unchanged");
}

void backoff(sqlite3* db, int attempt) {
  pause_for_lock(db, std::min(2 << std::min(attempt, 6), 150));
}

}  // namespace

void set_lock_wait(std::chrono::milliseconds budget) {
  lock_wait_budget_ms = budget.count();
}

void fail(Db db, std::string_view what) {
  std::string why = reason(db.handle);
  // On a read-only mount SQLite cannot make its journal and says "unable to
  // open database file: No such file or directory" (issue 50, item 15).
  int primary = sqlite3_errcode(db.handle) & 0xff;
  struct statvfs mount {};
  auto folder = db.path.has_parent_path() ? db.path.parent_path() : std::filesystem::path(".");
  if ((primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_IOERR) &&
      ::statvfs(folder.c_str(), &mount) == 0 && (mount.f_flag & ST_RDONLY))
    why = "its file system is mounted read-only: " + why;
  throw Error(db.path.string() + ": " + std::string(what) + " (" + why + ")");
}

std::string reason(sqlite3* handle) {
  std::string why = sqlite3_errmsg(handle);
  // "disk I/O error" alone hides what the system said: a full disk, `ulimit -f`.
  int primary = sqlite3_errcode(handle) & 0xff;
  int system = sqlite3_system_errno(handle);
  if (system != 0 &&
      (primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CANTOPEN))
    return why + ": " + std::string(std::strerror(system));
  // A write past `ulimit -f` leaves SQLite no errno to give (issue 50, item 15).
  rlimit size{};
  if ((primary == SQLITE_IOERR || primary == SQLITE_FULL) && getrlimit(RLIMIT_FSIZE, &size) == 0 &&
      size.rlim_cur != RLIM_INFINITY)
    why += "; this process may write files of " + std::to_string(size.rlim_cur / 1024) +
           " KiB at most (ulimit -f)";
  return why;
}

Statement::Statement(Db db, std::string_view sql) : db_(db) {
  int rc = SQLITE_BUSY;
  for (int attempt = 0; keep_trying(rc, attempt); ++attempt) {
    if (attempt > 0) backoff(db.handle, attempt);
    rc = sqlite3_prepare_v2(db.handle, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  fail_if_locked(db_, rc);
  if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) fail(db_, "store is corrupt");
  if (rc != SQLITE_OK) fail(db_, "store query failed");
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  // A busy step has done nothing yet, so it is safe to reset and try again.
  for (int attempt = 1; keep_trying(rc, attempt); ++attempt) {
    backoff(sqlite3_db_handle(stmt_), attempt);
    sqlite3_reset(stmt_);
    rc = sqlite3_step(stmt_);
  }
  fail_if_locked(db_, rc);
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
  for (int attempt = 0; keep_trying(rc, attempt); ++attempt) {
    if (attempt > 0) backoff(db.handle, attempt);
    rc = sqlite3_exec(db.handle, sql.c_str(), nullptr, nullptr, nullptr);
  }
  fail_if_locked(db, rc);
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

// `name` as SQLite takes it (a path or a "file:" URI); `path` for messages.
static Handle open_named(const std::string& name, const fs::path& path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(name.c_str(), &raw, flags, nullptr);
  Handle db(raw);  // sqlite3_open_v2 allocates a handle even when it fails
  if (rc != SQLITE_OK) fail({db.get(), path}, "cannot open store");
  sqlite3_extended_result_codes(db.get(), 0);
  sqlite3_busy_handler(db.get(), on_busy, db.get());
  return db;
}

Handle connect(const fs::path& path, int flags) {
  return open_named(path.string(), path, flags);
}

// "file:" URI of an absolute path: every byte outside [A-Za-z0-9/._~-] as %HH,
// so that '?', '#' and '%' in a folder name stay part of the path.
static std::string file_uri(const fs::path& path) {
  std::string uri = "file:";
  for (unsigned char c : fs::absolute(path).string()) {
    if (std::isalnum(c) ||
        std::string_view("/._~-").find(static_cast<char>(c)) != std::string_view::npos) {
      uri.push_back(static_cast<char>(c));
    } else {
      char escape[4];
      std::snprintf(escape, sizeof escape, "%%%02X", c);
      uri += escape;
    }
  }
  return uri;
}

Handle connect_untouched(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path.string() + "-wal", ec)) return connect(path, SQLITE_OPEN_READONLY);
  return open_named(file_uri(path) + "?immutable=1", path, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
}

}  // namespace perfgate::sqlite
