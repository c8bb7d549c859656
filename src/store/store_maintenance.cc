#include "perfgate/store/store_maintenance.h"

#include "perfgate/store/run_figures.h"

#include <chrono>
#include <ctime>
#include <istream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "packed_text.h"
#include "perfgate/core/error.h"
#include "perfgate/core/sha256.h"
#include "sqlite_handle.h"
#include "store_schema.h"

namespace perfgate {
namespace {

using sqlite::Db;
using sqlite::Statement;

void integrity_problems(Db db, std::vector<std::string>& problems) {
  Statement stmt(db, "PRAGMA integrity_check");
  while (stmt.step())
    if (auto line = stmt.text(0); line != "ok") problems.push_back("integrity: " + line);
  Statement keys(db, "PRAGMA foreign_key_check");
  while (keys.step())
    problems.push_back("table " + keys.text(0) + " row " + std::to_string(keys.int64(1)) +
                       " refers to a missing " + keys.text(2));
}

std::string run_name(int64_t run_id) {
  return "run " + std::to_string(run_id);
}

void histogram_problem(Statement& row, std::vector<std::string>& problems) {
  auto where = run_name(row.int64(0)) + " iteration " + std::to_string(row.int64(1));
  try {
    auto histogram = LatencyHistogram::deserialize(
        packed_text::unpack_if_packed(row.blob(3), "histogram", packed_text::kMaxHistogram));
    auto responses = static_cast<uint64_t>(row.int64(2));
    if (histogram.count() != responses)
      problems.push_back(where + ": histogram holds " + std::to_string(histogram.count()) +
                         " values for " + std::to_string(responses) + " responses");
  } catch (const Error& e) {
    problems.push_back(where + ": histogram unreadable (" + e.what() + "); perfgate store delete " +
                       std::to_string(row.int64(0)) + " removes the run");
  }
}

void iteration_problems(Db db, std::vector<std::string>& problems) {
  Statement row(db, "SELECT run_id, idx, responses, latency FROM iterations ORDER BY run_id, idx");
  int64_t run_id = -1, expected = 0;
  while (row.step()) {
    if (row.int64(0) != run_id) run_id = row.int64(0), expected = 0;
    if (row.int64(1) != expected)
      problems.push_back(run_name(run_id) + ": iteration " + std::to_string(row.int64(1)) +
                         " where " + std::to_string(expected) + " was expected");
    expected = row.int64(1) + 1;
    histogram_problem(row, problems);
  }
}

// Columns only perfgate writes, holding what no perfgate writes: every command
// that reads the run refuses it, so check names it (issue 41, item 19).
void value_problems(Db db, std::vector<std::string>& problems) {
  Statement row(db,
                "SELECT id, verdict FROM runs WHERE verdict NOT IN ('pass', 'warn', 'fail', "
                "'error') ORDER BY id");
  while (row.step())
    problems.push_back(run_name(row.int64(0)) + ": unknown verdict \"" + row.text(1) + "\"");
}

// The flag is what eligible_runs() selects on, so it must agree with the rule
// in RunRecord::eligible_as_baseline().
// The figures stored in a run's row are those its details give (bit for bit).
bool figures_agree(const RunRecord& run) {
  if (!run.stored) return true;
  RunRecord details = run;
  details.stored.reset();
  auto computed = compute_stored_figures(details);
  return pack_figures(computed.figures) == pack_figures(run.stored->figures) &&
         computed.shared_cpu_pct == run.stored->shared_cpu_pct;
}

// Each run read on its own: one damaged run is named (with the command that
// removes it), not the end of the check.
void run_problems(BaselineStore& store, std::vector<std::string>& problems) {
  Statement row({store.connection(), store.path()},
                "SELECT id, eligible, "
                "(SELECT count(*) FROM iterations WHERE run_id = runs.id) FROM runs ORDER BY id");
  std::set<std::string> named;  // runs an earlier check named: not twice
  for (const auto& problem : problems)
    named.insert(problem.substr(0, problem.find_first_of(" :", 4)));
  while (row.step()) {
    if (named.count(run_name(row.int64(0)))) continue;
    std::optional<RunRecord> read;
    try {
      read = store.run(row.int64(0));
    } catch (const Error& e) {
      problems.push_back(run_name(row.int64(0)) + ": cannot be read (" + e.what() +
                         "); perfgate store delete " + std::to_string(row.int64(0)) +
                         " removes it");
      continue;
    }
    if (!read) continue;
    const RunRecord& run = *read;
    if (row.int64(2) == 0 && run.status != "aborted")
      problems.push_back(run_name(run.id) + ": no iterations, yet status is " + run.status);
    if (row.int64(2) > 0 && !figures_agree(run))
      problems.push_back(run_name(run.id) +
                         ": stored figures disagree with its iterations and samples (an export "
                         "and import of the store computes them again)");
    if (run.eligible_as_baseline() != (row.int64(1) != 0))
      problems.push_back(run_name(run.id) + ": eligible flag disagrees with status " + run.status +
                         ", verdict " + std::string(to_string(run.verdict)) +
                         (run.review.state.empty() ? "" : ", review " + run.review.state));
  }
}

std::string content_key(const RunRecord& run) {
  return sha256_hex(to_json_line(run, false));
}

// Ids only, oldest first: the runs themselves are read one at a time.
std::vector<int64_t> run_ids(BaselineStore& store, const std::string& profile_name) {
  Statement stmt({store.connection(), store.path()},
                 "SELECT id FROM runs WHERE ?1 = '' OR profile_name = ?1 ORDER BY id");
  stmt.bind_all(profile_name);
  std::vector<int64_t> ids;
  while (stmt.step()) ids.push_back(stmt.int64(0));
  return ids;
}

std::set<std::string> stored_keys(BaselineStore& store) {
  std::set<std::string> keys;
  for (auto id : run_ids(store, ""))
    if (auto run = store.run(id)) keys.insert(content_key(*run));
  return keys;
}

// "export.jsonl:7: run 5: ...": the line for an editor, the run for a person
// counting the export's runs (blank lines are not runs).
std::string import_place(const std::string& source, int line_no, int run_no) {
  return source + ":" + std::to_string(line_no) + ": run " + std::to_string(run_no);
}

RunRecord parse_line(const std::string& line, const std::string& place) {
  try {
    return run_from_json_line(line);
  } catch (const Error& e) {
    throw Error(place + ": not a perfgate run (" + e.what() + "); nothing imported");
  }
}

std::string utc_before(Nanos age) {
  auto then = std::chrono::system_clock::now() -
              std::chrono::duration_cast<std::chrono::system_clock::duration>(age);
  auto t = std::chrono::system_clock::to_time_t(then);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Ranks each run within its profile and branch, newest (highest id) first.
constexpr std::string_view kRanked =
    "SELECT id, created_at, row_number() OVER (PARTITION BY profile_name, branch "
    "ORDER BY id DESC) AS rank FROM runs";

// Profiles and host fingerprints no run refers to any more.
void drop_unused_texts(Db db) {
  sqlite::exec(
      db,
      "DELETE FROM texts WHERE id NOT IN (SELECT profile_ref FROM runs WHERE "
      "profile_ref IS NOT NULL UNION SELECT host_ref FROM runs WHERE host_ref IS NOT NULL)");
}

}  // namespace

std::vector<std::string> check_store(BaselineStore& store) {
  Db db{store.connection(), store.path()};
  std::vector<std::string> problems;
  integrity_problems(db, problems);
  // The perfgate checks read rows SQLite may no longer trust.
  if (!problems.empty()) return problems;
  iteration_problems(db, problems);
  auto before = problems.size();
  value_problems(db, problems);
  // The runs themselves cannot be read past a value problem.
  if (problems.size() == before) run_problems(store, problems);
  return problems;
}

int64_t export_runs(BaselineStore& store, std::ostream& out, const std::string& profile_name) {
  int64_t count = 0;
  for (auto id : run_ids(store, profile_name))
    if (auto run = store.run(id)) out << to_json_line(*run) << '\n', ++count;
  if (!out) throw Error("cannot write the export");
  return count;
}

ImportCounts import_runs(BaselineStore& store, std::istream& in, const std::string& source,
                         const std::function<void(const ImportCounts&)>& progress) {
  auto keys = stored_keys(store);
  ImportCounts counts;
  std::string line;
  int line_no = 0;
  int run_no = 0;
  auto next = [&]() -> std::optional<RunRecord> {
    while (std::getline(in, line)) {
      ++line_no;
      if (progress && line_no % 1000 == 0) progress(counts);
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      auto run = parse_line(line, import_place(source, line_no, ++run_no));
      if (keys.insert(content_key(run)).second) {
        ++counts.added;
        return run;
      }
      ++counts.skipped;
    }
    return std::nullopt;
  };
  try {
    store.record_each(next);
  } catch (const Error& e) {
    // The store's own refusals (SQLite's words) get the run they met; the
    // transaction is rolled back, so nothing of the file is kept.
    std::string what = e.what();
    if (what.rfind(source + ":", 0) == 0) throw;
    throw Error(import_place(source, line_no, run_no) + ": cannot store the run (" + what +
                "); nothing imported");
  }
  return counts;
}

std::string pruned_summary(BaselineStore& store) {
  Statement stmt({store.connection(), store.path()},
                 "SELECT sum(deleted), group_concat(DISTINCT rule), max(at) FROM prunes "
                 "WHERE deleted > 0");
  if (!stmt.step() || stmt.int64(0) == 0) return "";
  return std::to_string(stmt.int64(0)) + " runs pruned (" + stmt.text(1) + "), last at " +
         stmt.text(2);
}

void note_prune(BaselineStore& store, const std::string& rule, int64_t deleted) {
  Statement stmt({store.connection(), store.path()},
                 "INSERT INTO prunes (at, rule, deleted) VALUES (?, ?, ?)");
  stmt.bind_all(utc_before(Nanos(0)), rule, deleted).run();
}

int stored_schema_version(const std::filesystem::path& path) {
  store_schema::check_is_perfgate_store(path);
  return static_cast<int>(store_schema::read_version(path));
}

void check_store_sound(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) == 0)
    return;  // none yet (or not a file: the caller's other checks say so)
  BaselineStore::refuse_special_journal(path);  // SQLite would open a FIFO there
  store_schema::check_is_perfgate_store(path);
  std::string damage;
  try {
    auto handle = sqlite::connect_untouched(path);
    Statement quick({handle.get(), path}, "PRAGMA quick_check(1)");
    // "*** in database main ***\nPage 4: btreeInitPage() returns error code 11":
    // one line, the page's.
    if (quick.step() && quick.text(0) != "ok") {
      std::istringstream lines(quick.text(0));
      for (std::string line; std::getline(lines, line);)
        if (!line.empty() && line.rfind("***", 0) != 0)
          damage += (damage.empty() ? "" : "; ") + line;
      if (damage.empty()) damage = "SQLite's quick_check failed";
    }
  } catch (const Error& e) {
    damage = e.what();
  }
  if (!damage.empty())
    throw Error(path.string() + ": the store is damaged (" + damage +
                "); nothing was measured: perfgate store check says where; restore the store "
                "from a backup or an export, or judge without storing with --no-record");
}

int64_t delete_runs(BaselineStore& store, const std::vector<int64_t>& ids) {
  if (ids.empty()) throw Error("store delete: give the ids of the runs to delete");
  Db db{store.connection(), store.path()};
  if (sqlite3_db_readonly(db.handle, "main") == 1)
    throw Error(store.path().string() + ": store is read-only; cannot delete runs");
  sqlite::Transaction tx(db);
  // Plain SQL on the ids: a run too damaged to be read can still be deleted.
  Statement remove(db, "DELETE FROM runs WHERE id = ?");
  int64_t deleted = 0;
  for (auto id : std::set<int64_t>(ids.begin(), ids.end())) {
    remove.reset();
    remove.bind_all(id).run();
    if (sqlite3_changes(db.handle) == 0)
      throw Error(store.path().string() + ": no run " + std::to_string(id) + "; nothing deleted");
    ++deleted;
  }
  drop_unused_texts(db);
  note_prune(store, "delete", deleted);
  tx.commit();
  return deleted;
}

int64_t prune_runs(BaselineStore& store, const PruneRule& rule) {
  if (!rule.keep && !rule.older_than) throw Error("store prune: give --keep N or --older-than AGE");
  Db db{store.connection(), store.path()};
  if (sqlite3_db_readonly(db.handle, "main") == 1)
    throw Error(store.path().string() + ": store is read-only; cannot prune");
  std::string sql = "DELETE FROM runs WHERE id IN (SELECT id FROM (" + std::string(kRanked) +
                    ") WHERE rank > ? AND created_at < ?)";
  sqlite::Transaction tx(db);
  Statement stmt(db, sql);
  stmt.bind_all(rule.keep.value_or(0), rule.older_than ? utc_before(*rule.older_than) : "~");
  stmt.run();
  auto deleted = static_cast<int64_t>(sqlite3_changes(db.handle));
  drop_unused_texts(db);
  note_prune(store, rule.keep ? (rule.older_than ? "keep, age" : "keep") : "age", deleted);
  tx.commit();
  return deleted;
}

}  // namespace perfgate
