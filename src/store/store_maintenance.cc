#include "perfgate/store/store_maintenance.h"

#include <chrono>
#include <ctime>
#include <istream>
#include <map>
#include <ostream>
#include <set>

#include "perfgate/core/error.h"
#include "perfgate/core/sha256.h"
#include "sqlite_handle.h"

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
    auto histogram = LatencyHistogram::deserialize(row.blob(3));
    auto responses = static_cast<uint64_t>(row.int64(2));
    if (histogram.count() != responses)
      problems.push_back(where + ": histogram holds " + std::to_string(histogram.count()) +
                         " values for " + std::to_string(responses) + " responses");
  } catch (const Error& e) {
    problems.push_back(where + ": histogram unreadable (" + e.what() + ")");
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

// The flag is what eligible_runs() selects on, so it must agree with the rule
// in RunRecord::eligible_as_baseline().
void run_problems(BaselineStore& store, std::vector<std::string>& problems) {
  std::map<int64_t, RunRecord> runs;
  for (auto& run : store.runs("", 0)) runs.emplace(run.id, std::move(run));
  Statement row({store.connection(), store.path()},
                "SELECT id, eligible, "
                "(SELECT count(*) FROM iterations WHERE run_id = runs.id) FROM runs ORDER BY id");
  while (row.step()) {
    const RunRecord& run = runs.at(row.int64(0));
    if (row.int64(2) == 0 && run.status != "aborted")
      problems.push_back(run_name(run.id) + ": no iterations, yet status is " + run.status);
    if (run.eligible_as_baseline() != (row.int64(1) != 0))
      problems.push_back(run_name(run.id) + ": eligible flag disagrees with status " + run.status +
                         ", verdict " + std::string(to_string(run.verdict)) +
                         (run.review.state.empty() ? "" : ", review " + run.review.state));
  }
}

std::string content_key(const RunRecord& run) {
  return sha256_hex(to_json_line(run, false));
}

std::set<std::string> stored_keys(BaselineStore& store) {
  std::set<std::string> keys;
  for (const auto& header : store.runs("", 0))
    if (auto run = store.run(header.id)) keys.insert(content_key(*run));
  return keys;
}

RunRecord parse_line(const std::string& line, const std::string& source, int line_no) {
  try {
    return run_from_json_line(line);
  } catch (const Error& e) {
    throw Error(source + ":" + std::to_string(line_no) + ": not a perfgate run (" + e.what() +
                "); nothing imported");
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

}  // namespace

std::vector<std::string> check_store(BaselineStore& store) {
  Db db{store.connection(), store.path()};
  std::vector<std::string> problems;
  integrity_problems(db, problems);
  // The perfgate checks read rows SQLite may no longer trust.
  if (!problems.empty()) return problems;
  iteration_problems(db, problems);
  run_problems(store, problems);
  return problems;
}

int64_t export_runs(BaselineStore& store, std::ostream& out, const std::string& profile_name) {
  auto headers = store.runs(profile_name, 0);
  for (auto it = headers.rbegin(); it != headers.rend(); ++it)
    if (auto run = store.run(it->id)) out << to_json_line(*run) << '\n';
  if (!out) throw Error("cannot write the export");
  return static_cast<int64_t>(headers.size());
}

ImportCounts import_runs(BaselineStore& store, std::istream& in, const std::string& source) {
  auto keys = stored_keys(store);
  std::vector<RunRecord> fresh;
  ImportCounts counts;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto run = parse_line(line, source, line_no);
    if (!keys.insert(content_key(run)).second) {
      ++counts.skipped;
      continue;
    }
    fresh.push_back(std::move(run));
  }
  counts.added = static_cast<int64_t>(store.record_all(fresh).size());
  return counts;
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
  tx.commit();
  return deleted;
}

}  // namespace perfgate
