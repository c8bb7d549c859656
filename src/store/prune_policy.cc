#include "perfgate/store/prune_policy.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "perfgate/core/error.h"
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
  auto profile = nlohmann::json::parse(run->profile_json, nullptr, false);
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

}  // namespace

PruneResult prune_by_policy(BaselineStore& store, const PrunePolicy& policy) {
  Db db{store.connection(), store.path()};
  if (sqlite3_db_readonly(db.handle, "main") == 1)
    throw Error(store.path().string() + ": store is read-only; cannot prune");
  sqlite::Transaction tx(db);
  std::set<int64_t> keep;
  // The newest run always stays: SQLite gives the next run max(id) + 1, and an id
  // must never be given twice (exports, reviews and compare name runs by id).
  Statement newest(db, "SELECT max(id) FROM runs WHERE id IS NOT NULL");
  collect(newest, keep);
  Statement accepted(db, "SELECT id FROM runs WHERE review = 'accepted'");
  collect(accepted, keep);
  Statement recent(db,
                   "SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY profile_name, "
                   "branch ORDER BY id DESC) AS rank FROM runs) WHERE rank <= ?");
  recent.bind_all(std::max<int64_t>(policy.keep_last, 0));
  collect(recent, keep);
  keep_baseline_candidates(store, db, keep);
  keep_pair_partners(db, keep);

  sqlite::exec(db, "CREATE TEMP TABLE IF NOT EXISTS prune_keep (id INTEGER PRIMARY KEY)");
  sqlite::exec(db, "DELETE FROM prune_keep");
  Statement add(db, "INSERT INTO prune_keep (id) VALUES (?)");
  for (auto id : keep) {
    add.bind_all(id).run();
    add.reset();
  }
  sqlite::exec(db, "DELETE FROM runs WHERE id NOT IN (SELECT id FROM prune_keep)");
  PruneResult result;
  result.deleted = sqlite3_changes(db.handle);
  sqlite::exec(db,
               "DELETE FROM texts WHERE id NOT IN (SELECT profile_ref FROM runs WHERE "
               "profile_ref IS NOT NULL UNION SELECT host_ref FROM runs WHERE host_ref IS "
               "NOT NULL)");
  sqlite::exec(db, "DROP TABLE prune_keep");
  note_prune(store, "policy", result.deleted);
  tx.commit();
  result.kept = store.run_count();
  return result;
}

}  // namespace perfgate
