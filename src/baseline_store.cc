#include "perfgate/baseline_store.h"

#include <sqlite3.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <concepts>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <system_error>

#include "perfgate/error.h"
#include "sqlite_handle.h"

namespace perfgate {
namespace fs = std::filesystem;
namespace {

using sqlite::Blob;
using sqlite::Columns;
using sqlite::connect;
using sqlite::Db;
using sqlite::exec;
using sqlite::fail;
using sqlite::Handle;
using sqlite::query_int;
using sqlite::Statement;
using sqlite::Transaction;

// PRAGMA application_id of every perfgate store ("PfGt"): tells our files from any
// other SQLite database, which must never be touched.
constexpr int32_t kApplicationId = 0x50664774;

// ---- schema ----------------------------------------------------------------

void create_schema_v1(Db db) {
  exec(db, R"sql(
    CREATE TABLE runs (
      id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, profile_name TEXT NOT NULL,
      profile_hash TEXT NOT NULL, profile_json TEXT NOT NULL, commit_sha TEXT NOT NULL,
      branch TEXT NOT NULL, baseline_branch TEXT NOT NULL, pipeline_id TEXT NOT NULL,
      ci_provider TEXT NOT NULL, host_key TEXT NOT NULL, host_json TEXT NOT NULL,
      engine TEXT NOT NULL, threads INT NOT NULL, connections INT NOT NULL,
      verdict TEXT NOT NULL, saturated INT NOT NULL, saturation_json TEXT NOT NULL,
      status TEXT NOT NULL, eligible INT NOT NULL);
    CREATE INDEX runs_baseline ON runs
      (profile_name, profile_hash, branch, host_key, eligible, id);
    CREATE TABLE iterations (
      run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INT NOT NULL,
      discarded INT NOT NULL, duration_ns INT NOT NULL, responses INT NOT NULL,
      bytes_read INT NOT NULL, err_connect INT NOT NULL, err_read INT NOT NULL,
      err_write INT NOT NULL, err_timeout INT NOT NULL, err_other INT NOT NULL,
      status_other INT NOT NULL, status_1xx INT NOT NULL, status_2xx INT NOT NULL,
      status_3xx INT NOT NULL, status_4xx INT NOT NULL, status_5xx INT NOT NULL,
      latency BLOB NOT NULL, PRIMARY KEY (run_id, idx));
  )sql");
  exec(db, "PRAGMA application_id = " + std::to_string(kApplicationId));
}

// v2: host samples of a run (one JSON document) and the service's CPU seconds
// per iteration (NULL when no service was measured).
void migrate_v1_to_v2(Db db) {
  exec(db, R"sql(
    CREATE TABLE run_samples (
      run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, json TEXT NOT NULL);
    ALTER TABLE iterations ADD COLUMN service_cpu_s REAL;
  )sql");
}

using Migration = void (*)(Db);

// migrations()[n] takes a store from schema n to n + 1. A new schema appends a
// step here and bumps BaselineStore::kSchemaVersion; old steps never change.
std::span<const Migration> migrations() {
  static constexpr std::array<Migration, 2> kSteps = {create_schema_v1, migrate_v1_to_v2};
  static_assert(kSteps.size() == BaselineStore::kSchemaVersion);
  return kSteps;
}

[[noreturn]] void throw_newer(const fs::path& path, int64_t version) {
  throw Error(path.string() + ": store has schema version " + std::to_string(version) +
              ", newer than this perfgate understands (" +
              std::to_string(BaselineStore::kSchemaVersion) + "); upgrade perfgate");
}

void migrate(Db db) {
  if (query_int(db, "PRAGMA user_version") == BaselineStore::kSchemaVersion) return;
  Transaction tx(db);
  // Read again under the write lock: another perfgate may have just migrated.
  int64_t version = query_int(db, "PRAGMA user_version");
  if (version > BaselineStore::kSchemaVersion) throw_newer(db.path, version);
  for (; version < BaselineStore::kSchemaVersion; ++version)
    migrations()[static_cast<size_t>(version)](db);
  exec(db, "PRAGMA user_version = " + std::to_string(BaselineStore::kSchemaVersion));
  tx.commit();
}

// ---- opening -----------------------------------------------------------------

[[noreturn]] void throw_foreign(const fs::path& path, const std::string& why) {
  throw Error(path.string() + ": not a perfgate store (" + why + "); choose another --store");
}

// SQLite takes any file shorter than one page for an empty database and would
// write over it, so the magic string is checked here first.
void check_sqlite_magic(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot read store (" + std::strerror(errno) + ")");
  std::array<char, 16> magic{};
  in.read(magic.data(), magic.size());
  if (in.gcount() != 16 || std::memcmp(magic.data(), "SQLite format 3", 16) != 0)
    throw_foreign(path, "not an SQLite database");
}

// Reads the header of an existing file through a read-only connection, so that
// a file which is not ours is rejected before anything could write to it.
void check_is_perfgate_store(const fs::path& path) {
  check_sqlite_magic(path);
  Handle handle = connect(path, SQLITE_OPEN_READONLY);
  Db db{handle.get(), path};
  int64_t app_id = 0, version = 0, objects = 0;
  try {
    app_id = query_int(db, "PRAGMA application_id");
    version = query_int(db, "PRAGMA user_version");
    objects = query_int(db, "SELECT count(*) FROM sqlite_schema");
  } catch (const Error&) {
    int rc = sqlite3_errcode(db.handle);
    if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT) throw_foreign(path, sqlite3_errmsg(db.handle));
    throw;  // locked, unreadable: a real store may be behind it
  }
  // An SQLite file with no tables and nothing set is as good as a new one.
  bool blank = app_id == 0 && version == 0 && objects == 0;
  if (app_id != kApplicationId && !blank) {
    char id[16];
    std::snprintf(id, sizeof id, "0x%08x", static_cast<uint32_t>(app_id));
    throw_foreign(path, std::string("another program's SQLite database, application_id ") + id);
  }
  if (version > BaselineStore::kSchemaVersion) throw_newer(path, version);
}

bool has_content(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return !ec && size > 0;
}

void create_parent(const fs::path& path) {
  auto parent = path.parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec)
    throw Error(path.string() + ": cannot create folder " + parent.string() + " (" + ec.message() +
                ")");
}

bool is_read_only(sqlite3* db) {
  return sqlite3_db_readonly(db, "main") == 1;
}

// Without write access nothing can be created or upgraded, but a current store
// is still fine for reading (history, compare).
void require_current_schema(Db db) {
  auto version = query_int(db, "PRAGMA user_version");
  if (version == BaselineStore::kSchemaVersion) return;
  throw Error(db.path.string() + ": store is read-only and has schema version " +
              std::to_string(version) + ", not " + std::to_string(BaselineStore::kSchemaVersion) +
              "; open it once with write access to create or upgrade it");
}

void prepare(Db db) {
  exec(db, "PRAGMA foreign_keys = ON");
  if (is_read_only(db.handle)) {
    require_current_schema(db);
  } else {
    // WAL lets `perfgate history` read while a run is being written.
    exec(db, "PRAGMA journal_mode = WAL");
    migrate(db);
  }
}

// ---- rows ------------------------------------------------------------------

constexpr std::string_view kRunColumns =
    "id, created_at, profile_name, profile_hash, profile_json, commit_sha, branch, "
    "baseline_branch, pipeline_id, ci_provider, host_json, engine, threads, connections, "
    "verdict, saturated, saturation_json, status";

constexpr std::string_view kIterationColumns =
    "idx, discarded, duration_ns, responses, bytes_read, err_connect, err_read, err_write, "
    "err_timeout, err_other, status_other, status_1xx, status_2xx, status_3xx, status_4xx, "
    "status_5xx, latency, service_cpu_s";

std::string utc_now() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string saturation_json(const Saturation& saturation) {
  return nlohmann::json{{"reasons", saturation.reasons}}.dump();
}

int64_t insert_run(Db db, const RunRecord& run) {
  Statement stmt(db,
                 "INSERT INTO runs (created_at, profile_name, profile_hash, profile_json, "
                 "commit_sha, branch, baseline_branch, pipeline_id, ci_provider, host_key, "
                 "host_json, engine, threads, connections, verdict, saturated, saturation_json, "
                 "status, eligible) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  stmt.bind_all(run.created_at.empty() ? utc_now() : run.created_at, run.profile_name,
                run.profile_hash, run.profile_json, run.ci.commit, run.ci.branch,
                run.ci.baseline_branch, run.ci.pipeline_id, run.ci.provider, run.host.key(),
                nlohmann::json(run.host.fields).dump(), run.engine, run.threads, run.connections,
                to_string(run.verdict), run.saturation.saturated, saturation_json(run.saturation),
                run.status, run.eligible_as_baseline());
  stmt.run();
  return sqlite3_last_insert_rowid(db.handle);
}

void insert_iteration(Statement& stmt, int64_t run_id, const Iteration& it,
                      std::optional<double> service_cpu_s) {
  const auto& s = it.stats;
  const auto& by_class = s.statuses.by_class;
  auto latency = s.latency.serialize();
  stmt.bind_all(run_id, it.index, it.discarded, it.duration.count(), s.responses, s.bytes_read,
                s.errors.connect, s.errors.read, s.errors.write, s.errors.timeout, s.errors.other,
                by_class[0], by_class[1], by_class[2], by_class[3], by_class[4], by_class[5],
                Blob{latency}, service_cpu_s);
  stmt.run();
  stmt.reset();
}

// service_cpu_s holds one figure per iteration when the service was measured.
void insert_iterations(Db db, int64_t run_id, const RunRecord& run) {
  Statement stmt(db, "INSERT INTO iterations (run_id, " + std::string(kIterationColumns) +
                         ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (size_t i = 0; i < run.iterations.size(); ++i) {
    std::optional<double> cpu;
    if (i < run.service_cpu_s.size()) cpu = run.service_cpu_s[i];
    insert_iteration(stmt, run_id, run.iterations[i], cpu);
  }
}

void insert_samples(Db db, int64_t run_id, const std::string& json) {
  if (json.empty()) return;
  Statement stmt(db, "INSERT INTO run_samples (run_id, json) VALUES (?, ?)");
  stmt.bind_all(run_id, json).run();
}

std::string load_samples(Db db, int64_t run_id) {
  Statement stmt(db, "SELECT json FROM run_samples WHERE run_id = ?");
  stmt.bind_all(run_id);
  return stmt.step() ? stmt.text(0) : std::string();
}

Verdict verdict_named(Db db, const std::string& name) {
  for (auto v : {Verdict::kPass, Verdict::kWarn, Verdict::kFail, Verdict::kError})
    if (to_string(v) == name) return v;
  throw Error(db.path.string() + ": store holds an unknown verdict \"" + name + "\"");
}

// The JSON columns are written only by record(); a parse failure means damage.
void read_json_columns(Db db, const std::string& host, const std::string& saturation,
                       RunRecord& run) {
  try {
    run.host.fields = nlohmann::json::parse(host).get<std::map<std::string, std::string>>();
    run.saturation.reasons =
        nlohmann::json::parse(saturation).value("reasons", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    throw Error(db.path.string() + ": store is corrupt (run " + std::to_string(run.id) + ": " +
                e.what() + ")");
  }
}

// Column by column in kRunColumns order.
RunRecord read_run(Db db, Statement& row) {
  Columns col(row);
  RunRecord run;
  run.id = col.int64();
  run.created_at = col.text();
  run.profile_name = col.text();
  run.profile_hash = col.text();
  run.profile_json = col.text();
  run.ci.commit = col.text();
  run.ci.branch = col.text();
  run.ci.baseline_branch = col.text();
  run.ci.pipeline_id = col.text();
  run.ci.provider = col.text();
  auto host_json = col.text();
  run.engine = col.text();
  run.threads = static_cast<int>(col.int64());
  run.connections = static_cast<int>(col.int64());
  run.verdict = verdict_named(db, col.text());
  run.saturation.saturated = col.int64() != 0;
  auto saturation_json = col.text();
  run.status = col.text();
  read_json_columns(db, host_json, saturation_json, run);
  return run;
}

// Column by column in kIterationColumns order; service_cpu_s comes last.
Iteration read_iteration(Columns& col) {
  Iteration it;
  it.index = static_cast<int>(col.int64());
  it.discarded = col.int64() != 0;
  it.duration = Nanos(col.int64());
  auto& s = it.stats;
  s.responses = col.u64();
  s.bytes_read = col.u64();
  s.errors = ErrorCounts{col.u64(), col.u64(), col.u64(), col.u64(), col.u64()};
  for (auto& count : s.statuses.by_class) count = col.u64();  // other, 1xx ... 5xx
  s.latency = LatencyHistogram::deserialize(col.blob());
  return it;
}

// The service's CPU figures are kept only when every iteration has one, so
// that service_cpu_s[i] always belongs to iterations[i].
void load_iterations(Db db, RunRecord& run) {
  Statement stmt(db, "SELECT " + std::string(kIterationColumns) +
                         " FROM iterations WHERE run_id = ? ORDER BY idx");
  stmt.bind_all(run.id);
  bool every_cpu = true;
  try {
    while (stmt.step()) {
      Columns col(stmt);
      run.iterations.push_back(read_iteration(col));
      auto cpu = col.real();
      every_cpu = every_cpu && cpu;
      if (cpu) run.service_cpu_s.push_back(*cpu);
    }
  } catch (const Error& e) {
    throw Error(db.path.string() + ": run " + std::to_string(run.id) + ": " + e.what());
  }
  if (!every_cpu) run.service_cpu_s.clear();
}

std::optional<RunRecord> first_run_with_iterations(Db db, Statement& stmt) {
  if (!stmt.step()) return std::nullopt;
  RunRecord run = read_run(db, stmt);
  load_iterations(db, run);
  run.host_samples_json = load_samples(db, run.id);
  return run;
}

}  // namespace

// ---- BaselineStore ---------------------------------------------------------

void BaselineStore::Closer::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);
}

BaselineStore::BaselineStore(fs::path path, sqlite3* db) : path_(std::move(path)), db_(db) {}
BaselineStore::BaselineStore(BaselineStore&&) noexcept = default;
BaselineStore& BaselineStore::operator=(BaselineStore&&) noexcept = default;
BaselineStore::~BaselineStore() = default;

BaselineStore BaselineStore::open(const fs::path& path, Mode mode) {
  bool writable = mode == Mode::kReadWrite;
  if (writable) create_parent(path);
  if (has_content(path)) check_is_perfgate_store(path);
  Handle db =
      connect(path, writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY);
  prepare({db.get(), path});
  return BaselineStore(path, db.release());
}

int64_t BaselineStore::record(const RunRecord& run) {
  return record_all({run}).front();
}

std::vector<int64_t> BaselineStore::record_all(const std::vector<RunRecord>& runs) {
  Db db{db_.get(), path_};
  if (is_read_only(db.handle)) throw Error(path_.string() + ": store is read-only");
  Transaction tx(db);
  std::vector<int64_t> ids;
  for (const auto& run : runs) {
    ids.push_back(insert_run(db, run));
    insert_iterations(db, ids.back(), run);
    insert_samples(db, ids.back(), run.host_samples_json);
  }
  tx.commit();
  return ids;
}

std::optional<RunRecord> BaselineStore::latest_baseline(const BaselineQuery& query) {
  Db db{db_.get(), path_};
  // Two spellings rather than "(? = '' OR host_key = ?)", which would hide the
  // host_key column from the index.
  std::string sql = "SELECT " + std::string(kRunColumns) +
                    " FROM runs WHERE profile_name = ? AND profile_hash = ? AND branch = ?" +
                    (query.host_key.empty() ? "" : " AND host_key = ?") +
                    " AND eligible = 1 ORDER BY id DESC LIMIT 1";
  Statement stmt(db, sql);
  if (query.host_key.empty())
    stmt.bind_all(query.profile_name, query.profile_hash, query.branch);
  else
    stmt.bind_all(query.profile_name, query.profile_hash, query.branch, query.host_key);
  return first_run_with_iterations(db, stmt);
}

std::optional<RunRecord> BaselineStore::run(int64_t id) {
  Db db{db_.get(), path_};
  Statement stmt(db, "SELECT " + std::string(kRunColumns) + " FROM runs WHERE id = ?");
  stmt.bind_all(id);
  return first_run_with_iterations(db, stmt);
}

std::vector<RunRecord> BaselineStore::runs(const std::string& profile_name, int limit) {
  Db db{db_.get(), path_};
  Statement stmt(db, "SELECT " + std::string(kRunColumns) +
                         " FROM runs WHERE ? = '' OR profile_name = ? ORDER BY id DESC LIMIT ?");
  stmt.bind_all(profile_name, profile_name, limit > 0 ? limit : -1);
  std::vector<RunRecord> out;
  while (stmt.step()) out.push_back(read_run(db, stmt));
  return out;
}

int64_t BaselineStore::run_count() {
  return query_int({db_.get(), path_}, "SELECT count(*) FROM runs");
}

int BaselineStore::schema_version() {
  return static_cast<int>(query_int({db_.get(), path_}, "PRAGMA user_version"));
}

}  // namespace perfgate
