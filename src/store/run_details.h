// Reading a stored run's details, its iterations and host samples (internal to
// the store modules): the store's queries and its schema steps read them the
// same way, so that figures computed from them agree wherever they are made.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "perfgate/store/run_record.h"
#include "sqlite_handle.h"

namespace perfgate::run_details {

/// The iterations table's columns, as the store writes and reads them.
inline constexpr std::string_view kIterationColumns =
    "idx, discarded, duration_ns, responses, bytes_read, err_connect, err_read, err_write, "
    "err_timeout, err_other, status_other, status_1xx, status_2xx, status_3xx, status_4xx, "
    "status_5xx, latency, service_cpu_s";

/// What a user does about a run no command can read (issue 41, item 19).
std::string damaged_hint(int64_t run_id);

/// A packed text of run `run_id` unpacked; throws Error naming the store and the run.
std::string unpacked(sqlite::Db db, const std::string& packed, int64_t run_id);

/// The statements that read a run's iterations and host samples, prepared once
/// for any number of runs.
class DetailReader {
 public:
  explicit DetailReader(sqlite::Db db);
  /// Adds run.id's iterations, the service's CPU figures (only when every
  /// iteration has one, so that service_cpu_s[i] belongs to iterations[i]) and
  /// host samples to `run`.
  void load(RunRecord& run);

 private:
  void load_iterations(RunRecord& run);
  std::string load_samples(int64_t run_id);

  sqlite::Db db_;
  sqlite::Statement iterations_;
  sqlite::Statement samples_;
};

/// Computes stored runs' figures (compute_stored_figures()) from their details
/// as the store reads them back, and writes them to their rows: record() does
/// it for every run it writes, the schema step to figures for older runs, so
/// that a run's figures are the same whichever wrote them.
class FigureWriter {
 public:
  explicit FigureWriter(sqlite::Db db);
  void write(int64_t run_id);

 private:
  DetailReader details_;
  sqlite::Statement update_;
};

}  // namespace perfgate::run_details
