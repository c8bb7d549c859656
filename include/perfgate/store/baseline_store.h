#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/store/run_record.h"

struct sqlite3;

namespace perfgate {

/// Where the store is when --store is not given (the product's contract). A
/// folder of its name ("baselines") is made when missing, wherever it is; any
/// other store's folder must exist, so that a typo in --store is an error, not
/// a new empty store with "no baseline yet".
inline constexpr const char* kDefaultStorePath = "baselines/perfgate.db";

/// Which runs may serve as a baseline for a new one.
struct BaselineQuery {
  std::string profile_name;
  std::string profile_hash;
  std::string branch;      // the baseline branch
  std::string host_key;    // HostFingerprint::key(); empty = any host
  int64_t before_run = 0;  // only runs older than this id (re-judging a stored run); 0 = all
};

/// The SQLite history of runs (WAL, one transaction per run, versioned schema).
class BaselineStore {
 public:
  enum class Mode { kReadWrite, kReadOnly };

  /// Opens or creates the store (in read-write mode; a missing folder is made
  /// only when named "baselines", any other is refused with the mkdir to run).
  /// Throws Error naming the file when it is not a perfgate store, is corrupt,
  /// or has a schema newer than this perfgate; such a file is left untouched.
  static BaselineStore open(const std::filesystem::path& path, Mode mode = Mode::kReadWrite);
  /// Throws the Error open() would for a new store in a folder that does not
  /// exist (a "baselines" folder aside): said before a run's load, not after.
  static void check_folder(const std::filesystem::path& path);
  /// Why `path` can hold no store, e.g. "is a FIFO, not a store file"; "" when it
  /// is a regular file (through links) or nothing yet. Looks without opening:
  /// open() of a FIFO blocks until a writer comes, which may be never.
  static std::string file_kind_problem(const std::filesystem::path& path);
  /// Throws Error when a FIFO, device or socket sits where SQLite keeps the
  /// store's journal (-journal, -wal, -shm): opening the store would hang on it.
  static void refuse_special_journal(const std::filesystem::path& store);

  BaselineStore(BaselineStore&&) noexcept;
  BaselineStore& operator=(BaselineStore&&) noexcept;
  ~BaselineStore();

  /// Writes the run with its iterations, histograms and host samples in one
  /// transaction; returns its id.
  /// An empty `created_at` is stored as the current UTC time; `ci.summary_path` is
  /// not stored. The host sampler's raw samples are kept only when a saturation
  /// rule fired (its per-iteration summaries always are); record_all() and
  /// record_each() keep everything, as an import must. Throws Error on a
  /// read-only store.
  int64_t record(const RunRecord& run);
  /// How much of each run a query reads: everything, or only its row in the runs
  /// table (no iterations, no host samples: cheap for runs that may not be used,
  /// with the figures stored there), or its row without its stored figures (a
  /// listing of many runs of which few are used: load_figures() adds theirs).
  enum class Depth { kFull, kHeader, kListing };
  /// Runs eligible as baselines for `query`, newest first, at most `limit`,
  /// iterations loaded unless `depth` is kHeader. Stops at the newest accepted
  /// run, which starts a new normal.
  std::vector<RunRecord> eligible_runs(const BaselineQuery& query, int limit,
                                       Depth depth = Depth::kFull);
  /// Adds iterations and host samples to runs read as headers.
  void load_details(std::vector<RunRecord>& runs);
  /// Adds the stored figures to runs read as listings (Depth::kListing).
  void load_figures(std::vector<RunRecord>& runs);
  /// Records a person's word on run `id` (accept / reject) and updates whether it
  /// may be a baseline, in one transaction. Throws Error when there is no such run.
  void set_review(int64_t id, const Review& review);
  /// One run by id, iterations loaded; nullopt when there is none.
  std::optional<RunRecord> run(int64_t id);
  /// The other side of a paired run (same pair key), iterations loaded; nullopt
  /// for a run that is not paired or whose partner is gone.
  std::optional<RunRecord> paired_partner(const RunRecord& run);
  /// Runs, newest first, without iterations (for history listings). An empty
  /// `profile_name` lists every profile; `limit` <= 0 lists them all.
  std::vector<RunRecord> runs(const std::string& profile_name = "", int limit = 100);
  /// The same, only of `branch` when it is not empty.
  std::vector<RunRecord> runs(const std::string& profile_name, const std::string& branch,
                              int limit);
  /// Hands the runs runs() would list to `visit`, one at a time, without keeping
  /// them: memory holds one run whatever the history's length.
  /// Rows alone (Depth::kHeader), or without their figures (Depth::kListing).
  void each_run(const std::string& profile_name, const std::string& branch, int limit,
                const std::function<void(RunRecord&&)>& visit, Depth depth = Depth::kHeader);
  int64_t run_count();

  static constexpr int kSchemaVersion = 9;
  int schema_version();
  const std::filesystem::path& path() const { return path_; }
  /// The open connection, for store maintenance (store_maintenance.cc), which
  /// needs SQL of its own: integrity checks, pruning.
  sqlite3* connection() { return db_.get(); }
  /// Writes every run in one transaction (all or none); returns their ids.
  std::vector<int64_t> record_all(const std::vector<RunRecord>& runs);
  /// Writes the runs `next` gives, one at a time until it gives none, in one
  /// transaction (all or none, also when `next` throws); memory holds one run at a
  /// time whatever their number. Returns how many were written.
  int64_t record_each(const std::function<std::optional<RunRecord>()>& next);

 private:
  BaselineStore(std::filesystem::path path, sqlite3* db);
  std::filesystem::path path_;
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  std::unique_ptr<sqlite3, Closer> db_;
};

}  // namespace perfgate
