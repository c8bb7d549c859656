#include "perfgate/store/prune_policy.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "perfgate/core/error.h"
#include "perfgate/profile/json_text.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/store_maintenance.h"
#include "sqlite_handle.h"

namespace perfgate {
namespace {

using sqlite::Db;
using sqlite::Statement;

void collect(Statement& stmt, std::set<int64_t>& keep) {
  while (stmt.step()) keep.insert(stmt.int64(0));
}

// The window and drift window a profile's runs are judged with, as its newest
// run stored them; a profile stored before they were written gets the defaults.
BaselinePolicy stored_policy(BaselineStore& store, int64_t newest_run) {
  BaselinePolicy policy;
  auto run = store.run(newest_run);
  if (!run) return policy;
  auto profile = parse_json_or_discarded(run->profile_json);
  if (!profile.is_object() || !profile.contains("baseline")) return policy;
  const auto& b = profile["baseline"];
  policy.window = b.value("window", policy.window);
  policy.drift_window = b.value("drift_window", policy.drift_window);
  return policy;
}

// What select_baseline() can read for any next run of each profile: the newest
// window + drift_window eligible runs per branch and host, and per branch alone.
void keep_baseline_candidates(BaselineStore& store, Db db, std::set<int64_t>& keep) {
  std::vector<std::pair<int64_t, std::string>> profiles;  // newest run, profile_name
  std::vector<std::string> hashes;
  Statement list(db,
                 "SELECT max(id), profile_name, profile_hash FROM runs "
                 "GROUP BY profile_name, profile_hash");
  while (list.step()) {
    profiles.emplace_back(list.int64(0), list.text(1));
    hashes.push_back(list.text(2));
  }
  Statement eligible(db,
                     "SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY branch, host_key "
                     "ORDER BY id DESC) AS by_host, row_number() OVER (PARTITION BY branch "
                     "ORDER BY id DESC) AS any_host FROM runs WHERE profile_name = ? AND "
                     "profile_hash = ? AND eligible = 1) WHERE by_host <= ?3 OR any_host <= ?3");
  for (size_t i = 0; i < profiles.size(); ++i) {
    auto policy = stored_policy(store, profiles[i].first);
    int64_t depth = std::max(policy.window, 1) + std::max(policy.drift_window, 0);
    eligible.bind_all(profiles[i].second, hashes[i], depth);
    collect(eligible, keep);
    eligible.reset();
  }
}

void keep_pair_partners(Db db, std::set<int64_t>& keep) {
  std::set<std::string> pairs;
  std::vector<std::pair<int64_t, std::string>> paired;
  Statement stmt(db, "SELECT id, pair FROM runs WHERE pair != ''");
  while (stmt.step()) {
    paired.emplace_back(stmt.int64(0), stmt.text(1));
    if (keep.count(paired.back().first)) pairs.insert(paired.back().second);
  }
  for (const auto& [id, pair] : paired)
    if (pairs.count(pair)) keep.insert(id);
}

// What judging can read, never deleted whatever the size: the newest run (SQLite
// gives the next run max(id) + 1, and an id must never be given twice: exports,
// reviews and compare name runs by id), accepted runs, baseline candidates.
std::set<int64_t> needed_for_judging(BaselineStore& store, Db db) {
  std::set<int64_t> keep;
  Statement newest(db, "SELECT max(id) FROM runs WHERE id IS NOT NULL");
  collect(newest, keep);
  Statement accepted(db, "SELECT id FROM runs WHERE review = 'accepted'");
  collect(accepted, keep);
  keep_baseline_candidates(store, db, keep);
  keep_pair_partners(db, keep);
  return keep;
}

void keep_recent(Db db, int64_t keep_last, std::set<int64_t>& keep) {
  Statement recent(db,
                   "SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY profile_name, "
                   "branch ORDER BY id DESC) AS rank FROM runs) WHERE rank <= ?");
  recent.bind_all(std::max<int64_t>(keep_last, 0));
  collect(recent, keep);
  keep_pair_partners(db, keep);
}

// The temp table prune_keep holds `ids`: what the deletes below must spare.
void fill_keep_table(Db db, const std::set<int64_t>& ids) {
  sqlite::exec(db, "CREATE TEMP TABLE IF NOT EXISTS prune_keep (id INTEGER PRIMARY KEY)");
  sqlite::exec(db, "DELETE FROM prune_keep");
  Statement add(db, "INSERT INTO prune_keep (id) VALUES (?)");
  for (auto id : ids) {
    add.bind_all(id).run();
    add.reset();
  }
}

void drop_unused_texts(Db db) {
  sqlite::exec(db,
               "DELETE FROM texts WHERE id NOT IN (SELECT profile_ref FROM runs WHERE "
               "profile_ref IS NOT NULL UNION SELECT host_ref FROM runs WHERE host_ref IS "
               "NOT NULL)");
}

// Pages in use: what the file holds once vacuumed, also inside a transaction.
int64_t used_bytes(Db db) {
  return (sqlite::query_int(db, "PRAGMA page_count") -
          sqlite::query_int(db, "PRAGMA freelist_count")) *
         sqlite::query_int(db, "PRAGMA page_size");
}

// Deletes the oldest runs outside prune_keep until the used pages fit in
// `max_bytes` or none is left; returns how many went. Runs take about the same
// room each, so each step deletes as many as the excess holds at the average.
int64_t trim_oldest(Db db, int64_t max_bytes) {
  Statement trim(db,
                 "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE id NOT IN "
                 "(SELECT id FROM prune_keep) ORDER BY id LIMIT ?)");
  int64_t deleted = 0;
  for (int64_t used = used_bytes(db); used > max_bytes; used = used_bytes(db)) {
    int64_t runs = std::max<int64_t>(sqlite::query_int(db, "SELECT count(*) FROM runs"), 1);
    int64_t per_run = std::max<int64_t>(used / runs, 1);
    trim.bind_all((used - max_bytes + per_run - 1) / per_run).run();
    int64_t gone = sqlite3_changes(db.handle);
    trim.reset();
    if (gone == 0) break;
    deleted += gone;
  }
  return deleted;
}

// VACUUM gives the free pages back; the checkpoint folds the WAL into the file,
// whose size is then what a CI cache carries.
int64_t compact_file(BaselineStore& store, Db db) {
  sqlite::exec(db, "VACUUM");
  sqlite::exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  std::error_code ec;
  auto size = std::filesystem::file_size(store.path(), ec);
  return ec ? used_bytes(db) : static_cast<int64_t>(size);
}

// Rounds of trimming and vacuuming: a deleted run can leave pages half used
// (the indexes), so the file may still be too big after the first.
void prune_to_size(BaselineStore& store, Db db, int64_t max_bytes, PruneResult& result) {
  constexpr int kRounds = 6;
  for (int round = 0; round < kRounds; ++round) {
    sqlite::Transaction tx(db);
    int64_t gone = trim_oldest(db, max_bytes);
    drop_unused_texts(db);
    if (gone > 0) note_prune(store, "size", gone);
    tx.commit();
    result.deleted += gone;
    result.bytes = compact_file(store, db);
    if (result.bytes <= max_bytes || gone == 0) break;
  }
  Statement spare(db, "SELECT count(*) FROM runs WHERE id NOT IN (SELECT id FROM prune_keep)");
  result.over_size = result.bytes > max_bytes && spare.step() && spare.int64(0) == 0;
}

}  // namespace

std::optional<int64_t> parse_byte_size(std::string_view text) {
  static const std::pair<std::string_view, double> kUnits[] = {
      {"", 1},          {"B", 1},       {"kB", 1e3},      {"KB", 1e3},
      {"MB", 1e6},      {"GB", 1e9},    {"KiB", 1 << 10}, {"MiB", 1 << 20},
      {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20},   {"G", 1 << 30}};
  size_t digits = text.find_first_not_of("0123456789.");
  std::string number(text.substr(0, digits));
  std::string_view unit = digits == std::string_view::npos ? "" : text.substr(digits);
  if (number.empty() || number.find('.') != number.rfind('.') || number == ".") return std::nullopt;
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    // strtod, not stod: a number past a double's range is infinite here, and
    // refused below, where stod threw "stod" at the user (issue 41, item 20).
    double bytes = std::strtod(number.c_str(), nullptr) * scale;
    if (!(bytes >= 1) || bytes > 9e18) return std::nullopt;
    return static_cast<int64_t>(bytes);
  }
  return std::nullopt;
}

PruneResult prune_by_policy(BaselineStore& store, const PrunePolicy& policy) {
  Db db{store.connection(), store.path()};
  if (sqlite3_db_readonly(db.handle, "main") == 1)
    throw Error(store.path().string() + ": store is read-only; cannot prune");
  PruneResult result;
  {
    sqlite::Transaction tx(db);
    auto needed = needed_for_judging(store, db);
    auto keep = needed;
    keep_recent(db, policy.keep_last, keep);
    fill_keep_table(db, keep);
    sqlite::exec(db, "DELETE FROM runs WHERE id NOT IN (SELECT id FROM prune_keep)");
    result.deleted = sqlite3_changes(db.handle);
    drop_unused_texts(db);
    note_prune(store, "policy", result.deleted);
    // Past the size, only what judging needs is spared.
    if (policy.max_bytes) fill_keep_table(db, needed);
    tx.commit();
  }
  if (policy.max_bytes) prune_to_size(store, db, *policy.max_bytes, result);
  sqlite::exec(db, "DROP TABLE IF EXISTS temp.prune_keep");
  result.kept = store.run_count();
  return result;
}

}  // namespace perfgate
