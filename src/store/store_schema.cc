#include "store_schema.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <unistd.h>

#include "packed_text.h"
#include "perfgate/core/error.h"
#include "perfgate/store/baseline_store.h"
#include "run_details.h"

namespace perfgate::store_schema {
namespace fs = std::filesystem;
namespace {

using sqlite::Blob;
using sqlite::connect;
using sqlite::connect_untouched;
using sqlite::Db;
using sqlite::exec;
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

// v3: what the verdict needs from history: the kind of run (calibration
// runs are never baselines) and its review (`perfgate accept` / `reject`).
void migrate_v2_to_v3(Db db) {
  exec(db, R"sql(
    ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'gate';
    ALTER TABLE runs ADD COLUMN review TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN review_reason TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN review_by TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN review_at TEXT NOT NULL DEFAULT '';
  )sql");
}

// v4: paired runs: both sides of a paired run share a key.
void migrate_v3_to_v4(Db db) {
  exec(db, R"sql(
    ALTER TABLE runs ADD COLUMN pair TEXT NOT NULL DEFAULT '';
    CREATE INDEX runs_pair ON runs (pair) WHERE pair != '';
  )sql");
}

// Moves one JSON column of every run into the shared, compressed texts.
void move_to_texts(Db db, const std::string& column, const std::string& ref) {
  Statement read(db, "SELECT id, " + column + " FROM runs WHERE " + ref + " IS NULL");
  Statement add(db, "INSERT OR IGNORE INTO texts (body) VALUES (?)");
  Statement point(db, "UPDATE runs SET " + column + " = '', " + ref +
                          " = (SELECT id FROM texts WHERE body = ?) WHERE id = ?");
  while (read.step()) {
    auto packed = packed_text::pack(read.text(1));
    add.bind_all(Blob{packed}).run();
    add.reset();
    point.bind_all(Blob{packed}, read.int64(0)).run();
    point.reset();
  }
}

// v5: compact runs. Profiles and host fingerprints, the same for run after run,
// are kept once each, compressed, in `texts`; host samples are compressed in
// place, histograms too when that makes them smaller. The old columns stay (SQLite cannot drop them
// cheaply) but hold ''. Every text comes back byte for byte, so a migrated run judges and exports
// as before. runs_profile serves history and the report, newest first; prunes
// remembers what `store prune` deleted, so that history can say so.
void migrate_v4_to_v5(Db db) {
  exec(db, R"sql(
    CREATE TABLE texts (id INTEGER PRIMARY KEY, body BLOB NOT NULL UNIQUE);
    ALTER TABLE runs ADD COLUMN profile_ref INT REFERENCES texts(id);
    ALTER TABLE runs ADD COLUMN host_ref INT REFERENCES texts(id);
    ALTER TABLE run_samples ADD COLUMN packed BLOB;
    CREATE INDEX runs_profile ON runs (profile_name, id);
    CREATE TABLE prunes (id INTEGER PRIMARY KEY, at TEXT NOT NULL, rule TEXT NOT NULL,
      deleted INT NOT NULL);
  )sql");
  move_to_texts(db, "profile_json", "profile_ref");
  move_to_texts(db, "host_json", "host_ref");
  Statement read(db, "SELECT run_id, json FROM run_samples WHERE packed IS NULL");
  Statement write(db, "UPDATE run_samples SET json = '', packed = ? WHERE run_id = ?");
  while (read.step()) {
    auto packed = packed_text::pack(read.text(1));
    write.bind_all(Blob{packed}, read.int64(0)).run();
    write.reset();
  }
  Statement histograms(db, "SELECT rowid, latency FROM iterations");
  Statement repack(db, "UPDATE iterations SET latency = ? WHERE rowid = ?");
  while (histograms.step()) {
    auto bytes = histograms.blob(1);
    if (!bytes.empty() && bytes[0] == 'z') continue;  // packed already
    auto packed = packed_text::pack_if_smaller(bytes);
    if (packed.size() == bytes.size()) continue;
    repack.bind_all(Blob{packed}, histograms.int64(0)).run();
    repack.reset();
  }
}

// v6: the cost phase's counts of a run (cost_record.h), one JSON object.
void migrate_v5_to_v6(Db db) {
  exec(db, "ALTER TABLE runs ADD COLUMN cost_json TEXT NOT NULL DEFAULT ''");
}

// v7: a run that warned (a change inside the warn band, or undecided) is no
// baseline unless accepted, as a failed one (RunRecord::eligible_as_baseline):
// the flag eligible_runs() selects on follows the rule for runs stored before.
void migrate_v6_to_v7(Db db) {
  exec(db, "UPDATE runs SET eligible = 0 WHERE verdict = 'warn' AND review != 'accepted'");
}

// v8: whether a run's judgement surely saw a regression (RunRecord::regressed):
// a warned run that was only undecided, or warned inside the noise, is a
// baseline again (issue 46: otherwise a young store's window never grew past its
// first run). What older runs' judgements saw is not stored, so their warns and
// fails count as regressions, and their eligible flags stay as they were.
void migrate_v7_to_v8(Db db) {
  exec(db, R"sql(
    ALTER TABLE runs ADD COLUMN regressed INT NOT NULL DEFAULT 0;
    UPDATE runs SET regressed = 1 WHERE verdict IN ('warn', 'fail');
  )sql");
}

// Host samples packed again with their preset dictionary, as record() packs
// them now: the room they give back is about what the figures take.
void repack_samples(Db db) {
  std::vector<int64_t> ids;
  for (Statement read(db, "SELECT run_id FROM run_samples WHERE substr(packed, 1, 1) = x'7a'");
       read.step();)
    ids.push_back(read.int64(0));
  Statement read(db, "SELECT packed FROM run_samples WHERE run_id = ?");
  Statement write(db, "UPDATE run_samples SET packed = ? WHERE run_id = ?");
  for (int64_t id : ids) {
    read.bind_all(id);
    if (!read.step()) continue;
    try {
      auto text = packed_text::unpack(read.blob(0), "host samples");
      auto packed = packed_text::pack(text, packed_text::Dictionary::kHostSamples);
      write.bind_all(Blob{packed}, id).run();
      write.reset();
    } catch (const Error&) {
      // damaged: kept as it is, for `store check` to name
    }
    read.reset();
  }
}

// v9: the figures a run is judged and charted by (run_figures.h), computed once
// from its details and kept in its row: history, compare, baseline selection,
// change points and the report read them instead of parsing every run's
// histograms and host samples on every call (issue 52). A run whose details do
// not read keeps NULL, and is read as before (its damage reported where it is
// read, and `store check` and `store delete` still open the store).
void migrate_v8_to_v9(Db db) {
  exec(db, R"sql(
    ALTER TABLE runs ADD COLUMN figures BLOB;
    ALTER TABLE runs ADD COLUMN shared_cpu_pct REAL;
  )sql");
  std::vector<int64_t> ids;  // first: rows are not updated under a running SELECT
  for (Statement read(db, "SELECT id FROM runs"); read.step();) ids.push_back(read.int64(0));
  run_details::FigureWriter figures(db);
  for (int64_t id : ids) {
    try {
      figures.write(id);
    } catch (const Error&) {
      // damaged: left for `store check` to name
    }
  }
  repack_samples(db);
}

using Migration = void (*)(Db);

// migrations()[n] takes a store from schema n to n + 1. A new schema appends a
// step here and bumps BaselineStore::kSchemaVersion; old steps never change.
std::span<const Migration> migrations() {
  static constexpr std::array<Migration, 9> kSteps = {
      create_schema_v1, migrate_v1_to_v2, migrate_v2_to_v3, migrate_v3_to_v4, migrate_v4_to_v5,
      migrate_v5_to_v6, migrate_v6_to_v7, migrate_v7_to_v8, migrate_v8_to_v9};
  static_assert(kSteps.size() == BaselineStore::kSchemaVersion);
  return kSteps;
}

[[noreturn]] void throw_newer(const fs::path& path, int64_t version) {
  throw Error(path.string() + ": store has schema version " + std::to_string(version) +
              ", newer than this perfgate understands (" +
              std::to_string(BaselineStore::kSchemaVersion) + "); upgrade perfgate");
}

// A version past ours is a newer perfgate's; one below 0 is nobody's (it
// indexed migrations() with size_t(-1)).
void check_version(const fs::path& path, int64_t version) {
  if (version > BaselineStore::kSchemaVersion) throw_newer(path, version);
  if (version < 0)
    throw Error(path.string() + ": store has schema version " + std::to_string(version) +
                ", which no perfgate writes (PRAGMA user_version was changed by hand); restore "
                "it from a backup or an export");
}

// The first schema with stored figures: its step, as the step to compact runs
// (5) before it, rewrites every run's row and host samples.
constexpr int64_t kFiguresSchema = 9;

void migrate(Db db) {
  if (query_int(db, "PRAGMA user_version") == BaselineStore::kSchemaVersion) return;
  Transaction tx(db);
  // Read again under the write lock: another perfgate may have just migrated.
  int64_t version = query_int(db, "PRAGMA user_version");
  check_version(db.path, version);
  bool compacted = version > 0 && version < kFiguresSchema;
  for (; version < BaselineStore::kSchemaVersion; ++version)
    migrations()[static_cast<size_t>(version)](db);
  exec(db, "PRAGMA user_version = " + std::to_string(BaselineStore::kSchemaVersion));
  tx.commit();
  // The pages the old texts and samples took are free now, the rows rewritten
  // scattered: give them back, so the file a CI cache carries shrinks (VACUUM
  // cannot run inside the transaction). A 10,000-run store of schema 8 went from
  // 22.0 to 24.5 MB without it, to 21.4 MB with it.
  if (compacted) exec(db, "VACUUM");
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

// Without write access nothing can be created or upgraded, but a current store
// is still fine for reading (history, compare).
// A writable file opened by a reading command is not "read-only" (issue 41,
// item 20): the command only reads, and says which command upgrades.
void require_current_schema(Db db) {
  auto version = query_int(db, "PRAGMA user_version");
  if (version == BaselineStore::kSchemaVersion) return;
  auto folder = fs::absolute(db.path).parent_path();
  bool writable = ::access(db.path.c_str(), W_OK) == 0 && ::access(folder.c_str(), W_OK) == 0;
  auto has = "has schema version " + std::to_string(version) + ", not this perfgate's " +
             std::to_string(BaselineStore::kSchemaVersion);
  if (writable)
    throw Error(db.path.string() + ": store " + has +
                "; this command only reads: upgrade it once with perfgate store migrate --store " +
                db.path.string() + " (or any run or accept)");
  throw Error(db.path.string() + ": store is read-only and " + has +
              "; open it once with write access to create or upgrade it (perfgate store migrate)");
}

}  // namespace

bool is_read_only(sqlite3* db) {
  return sqlite3_db_readonly(db, "main") == 1;
}

// Reads the header of an existing file through a read-only connection, so that
// a file which is not ours is rejected before anything could write to it.
void check_is_perfgate_store(const fs::path& path) {
  check_sqlite_magic(path);
  Handle handle = connect_untouched(path);
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
  check_version(path, version);
}

int64_t read_version(const fs::path& path) {
  Handle handle = connect_untouched(path);
  return query_int({handle.get(), path}, "PRAGMA user_version");
}

void check_current_schema(const fs::path& path) {
  Handle handle = connect_untouched(path);
  require_current_schema({handle.get(), path});
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

}  // namespace perfgate::store_schema
