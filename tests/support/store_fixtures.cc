#include "support/store_fixtures.h"

#include <sqlite3.h>

#include <stdexcept>

#include "perfgate/store/baseline_store.h"

namespace perfgate::testing {

void spread_over_days(const std::filesystem::path& store, const std::vector<std::string>& commits) {
  sqlite3* db = nullptr;
  if (sqlite3_open(store.c_str(), &db) != SQLITE_OK)
    throw std::runtime_error("cannot open " + store.string());
  for (size_t i = 0; i < commits.size(); ++i) {
    std::string day = std::to_string(i + 1);
    std::string sql = "UPDATE runs SET created_at = '2020-01-" + std::string(i < 9 ? "0" : "") +
                      day + "T12:00:00Z' WHERE commit_sha = '" + commits[i] + "'";
    char* error = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      std::string why = error ? error : "?";
      sqlite3_free(error);
      sqlite3_close(db);
      throw std::runtime_error(store.string() + ": " + why);
    }
  }
  sqlite3_close(db);
}

void seed_pool_from(const std::filesystem::path& store, int64_t run_id, double spread) {
  auto db = BaselineStore::open(store);
  auto original = db.run(run_id);
  if (!original) throw std::runtime_error(store.string() + ": no run " + std::to_string(run_id));
  for (int day = 0; day < 3; ++day)
    for (int i = 0; i < 3; ++i) {
      RunRecord copy = *original;
      copy.kind = "calibration";
      copy.ci.commit = "pool" + std::to_string(day + 1);
      copy.created_at =
          "2020-01-0" + std::to_string(day + 1) + "T12:0" + std::to_string(i) + ":00Z";
      copy.review = {};
      // Days half a spread apart, runs of a day a spread apart.
      double factor = 1 + spread * ((i - 1) + 0.5 * (day - 1));
      for (auto& it : copy.iterations)
        it.duration =
            Nanos(static_cast<int64_t>(static_cast<double>(it.duration.count()) / factor));
      db.record(copy);
    }
}

}  // namespace perfgate::testing
