#include "run_details.h"

#include "packed_text.h"
#include "perfgate/core/error.h"
#include "perfgate/store/run_figures.h"

namespace perfgate::run_details {
namespace {

using sqlite::Columns;

// Column by column in kIterationColumns order; service_cpu_s comes last.
Iteration read_iteration(Columns& col) {
  Iteration it;
  it.index = static_cast<int>(col.int64());
  it.discarded = col.int64() != 0;
  it.duration = Nanos(col.int64());
  auto& s = it.stats;
  s.responses = col.u64();
  s.bytes_read = col.u64();
  // Braced initializers are evaluated in order: the columns' order.
  s.errors = ErrorCounts{.connect = col.u64(),
                         .read = col.u64(),
                         .write = col.u64(),
                         .timeout = col.u64(),
                         .other = col.u64()};
  for (auto& count : s.statuses.by_class) count = col.u64();  // other, 1xx ... 5xx
  s.latency = LatencyHistogram::deserialize(
      packed_text::unpack_if_packed(col.blob(), "histogram", packed_text::kMaxHistogram));
  return it;
}

}  // namespace

std::string damaged_hint(int64_t run_id) {
  return "; perfgate store check lists what is damaged, perfgate store delete " +
         std::to_string(run_id) + " removes the run";
}

std::string unpacked(sqlite::Db db, const std::string& packed, int64_t run_id) {
  try {
    return packed_text::unpack(packed,
                               db.path.string() + ": run " + std::to_string(run_id) + " text");
  } catch (const Error& e) {
    throw Error(e.what() + damaged_hint(run_id));
  }
}

DetailReader::DetailReader(sqlite::Db db)
    : db_(db),
      iterations_(db, "SELECT " + std::string(kIterationColumns) +
                          " FROM iterations WHERE run_id = ? ORDER BY idx"),
      samples_(db, "SELECT json, packed FROM run_samples WHERE run_id = ?") {}

void DetailReader::load(RunRecord& run) {
  load_iterations(run);
  run.host_samples_json = load_samples(run.id);
}

void DetailReader::load_iterations(RunRecord& run) {
  iterations_.reset();
  iterations_.bind_all(run.id);
  bool every_cpu = true;
  try {
    while (iterations_.step()) {
      Columns col(iterations_);
      run.iterations.push_back(read_iteration(col));
      auto cpu = col.real();
      every_cpu = every_cpu && cpu;
      if (cpu) run.service_cpu_s.push_back(*cpu);
    }
  } catch (const Error& e) {
    throw Error(db_.path.string() + ": run " + std::to_string(run.id) + ": " + e.what() +
                damaged_hint(run.id));
  }
  if (!every_cpu) run.service_cpu_s.clear();
}

std::string DetailReader::load_samples(int64_t run_id) {
  samples_.reset();
  samples_.bind_all(run_id);
  if (!samples_.step()) return std::string();
  auto packed = samples_.blob(1);
  return packed.empty() ? samples_.text(0) : unpacked(db_, packed, run_id);
}

FigureWriter::FigureWriter(sqlite::Db db)
    : details_(db), update_(db, "UPDATE runs SET figures = ?, shared_cpu_pct = ? WHERE id = ?") {}

void FigureWriter::write(int64_t run_id) {
  RunRecord run;
  run.id = run_id;
  details_.load(run);
  auto stored = compute_stored_figures(run);
  update_.bind_all(sqlite::Blob{pack_figures(stored.figures)}, stored.shared_cpu_pct, run_id);
  update_.run();
  update_.reset();
}

}  // namespace perfgate::run_details
