#pragma once

// Internal to the gate stage: the steps of the gate that its variants share.
// run_gate (gate.cc) is the pipeline; a shard and a merge (shard_gate.cc), a
// paired run (paired_gate.cc) and a compare (compare_gate.cc) differ only in how they measure,
// what they judge against and where the result goes.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "measurement.h"
#include "perfgate/core/error.h"
#include "perfgate/gate/gate.h"
#include "perfgate/host/host_fingerprint.h"
#include "perfgate/host/instruction_counter.h"
#include "perfgate/host/placement.h"
#include "perfgate/report/output_file.h"
#include "perfgate/store/baseline.h"

namespace perfgate {

/// Where a gate gets its load from: the real engines by default, a fake that
/// replays scripted windows in unit tests.
struct Measurer {
  std::function<Measurement(const Profile&, const std::atomic<bool>&, std::optional<WallTime>)>
      load = measure_load;
  std::function<PairedMeasurement(const Profile&, const Profile&, const std::atomic<bool>&)>
      paired = measure_paired;
  std::function<HostFingerprint()> host = [] { return read_host_fingerprint(); };
  std::function<Placement(const Profile&)> placement = resolve_placement;
  /// The cost phase's hardware counter of one launch (the PMU; a fake in tests).
  std::function<std::unique_ptr<InstructionCounter>()> counter = pmu_instruction_counter;
};

/// The host's fingerprint with the run's placement in it: runs pinned another
/// way are another series.
inline HostFingerprint placed_host(const Measurer& measurer, const Profile& profile) {
  HostFingerprint host = measurer.host();
  record_placement(host, measurer.placement(profile));
  return host;
}

/// A gate in progress: what it knows so far, so that a run that ends without a
/// verdict still writes error reports that say as much as is known.
class GateRun {
 public:
  /// What a run knows before its load. `profile` may be null (merge: not read yet).
  GateRun(const RunOptions& options, const Profile* profile, const EnvLookup& env);

  const RunOptions& options() const { return options_; }
  GateResult& partial() { return partial_; }
  OutputGuard& guard() { return guard_; }
  /// Every output, the step summary and the store, checked before any work:
  /// a run must not be measured and recorded, then fail on a file.
  void check_outputs();
  /// The load's shape, for the error reports of a run that fails after it.
  void loaded(const LoadResult& load);
  /// Runs `body`; when it throws Error, writes the error reports, then rethrows.
  ExitStatus guarded(const std::function<ExitStatus()>& body);
  /// Prints the console report on `out` and writes the report files.
  void write(const GateResult& result, std::ostream& out) const;
  /// The same for a result that was stored in `store`: when a report file
  /// cannot be written, the runs it stored are deleted again, then the error
  /// goes on (saying so).
  void write(const GateResult& result, std::ostream& out,
             std::optional<BaselineStore>& store) const;

 private:
  void guard_bodies(const Profile& profile);

  const RunOptions& options_;
  GateResult partial_;
  OutputGuard guard_;
  std::string refused_output_;  // the flag of the output check_outputs() refused
};

/// The result's fields that come from the run and its judgement: profile,
/// verdict, checks, notes, baseline, load and totals, time, CI, host, saturation.
GateResult assemble(const Profile& profile, const RunRecord& run, const Judgement& judgement,
                    const BaselineSelection& selection);

/// A measured load made a run: record, saturation, figures, host summary. Throws
/// Error when a kept window has no response.
MeasuredRun measured(const Profile& profile, const Measurement& m, const CiContext& ci,
                     const HostFingerprint& host, const std::string& started_at);

/// An interrupted run is stored as aborted (never a baseline) unless --no-record;
/// records its id in `gate`'s error reports, then throws the Error that says so.
[[noreturn]] void record_aborted(GateRun& gate, std::optional<BaselineStore>& store,
                                 const Profile& profile, const Measurement& m,
                                 const HostFingerprint& host);

/// The store when it exists; none yet gives no baseline (it is created only when
/// a run is recorded, so that a run that errors out leaves no file behind).
std::optional<BaselineStore> open_store(const RunOptions& options);

/// The doctor's warnings, quietly: recorded in the result, logged at debug.
std::vector<std::string> preflight(const Profile& profile);

/// The default-branch recipes' notice: one note per change point that `rec`,
/// just stored, confirmed (confirmed_change_points), saying that later runs are
/// judged against the new level.
void note_new_levels(BaselineStore& store, const RunRecord& rec, std::vector<std::string>& notes);

/// Says what a paired run's busy host was, and why it does not make it inconclusive.
void note_shared_load(const Saturation& saturation, std::vector<std::string>& notes);

/// A stored paired run's baseline: its own other side, one value per launch
/// when `block` (paired.block) is above 1.
BaselineSelection paired_selection(BaselineStore& store, const RunRecord& run,
                                   const RunOptions& options, int block);

/// The baseline, chosen before the load so that a bad --baseline-run fails fast;
/// once the run's placement is known (its shared_cpu_pct), among runs of its
/// placement class (select_baseline).
BaselineSelection choose_baseline(const RunOptions& options, std::optional<BaselineStore>& store,
                                  const Profile& profile, const CiContext& ci,
                                  const HostFingerprint& host,
                                  std::optional<double> shared_cpu_pct = std::nullopt);

/// A run judged against `selection` at the profile's confidence, or at
/// `look_level` (a sequential look's stricter level) with the fail limit on
/// `estimate_level`'s bound (DecisionSettings), and assembled as a result.
GateResult judged(const Profile& profile, const RunRecord& rec, const RunFigures& now,
                  const BaselineSelection& selection,
                  const std::function<double(double)>& look_level = {},
                  std::optional<double> estimate_level = std::nullopt);

/// Baseline runs existed but all of another placement class: neither a pass
/// nor "no baseline yet", but inconclusive (warn), saying why. True when so.
bool inconclusive_placement(const BaselineSelection& selection, GateResult& r);

/// The gate proper, for a run measured here or merged from shards: judges it
/// against its baseline, then stores it with its verdict (unless --no-record).
GateResult judge_and_store(const RunOptions& options, std::optional<BaselineStore>& store,
                           const Profile& profile, const BaselineSelection& selection,
                           RunRecord rec, const RunFigures& now);

/// --start-at, when given.
std::optional<WallTime> start_time(const RunOptions& options);

/// `run --shard I/N` (shard_gate.cc): this machine's share, measured and written
/// for `perfgate merge`, not judged or stored.
ExitStatus run_shard(const RunOptions& options, const Profile& whole, const EnvLookup& env,
                     std::ostream& out, const std::atomic<bool>& stop, const Measurer& measurer);

/// Paired mode (paired_gate.cc).
ExitStatus run_paired(const RunOptions& options, const Profile& profile, const EnvLookup& env,
                      std::ostream& out, const std::atomic<bool>& stop, const Measurer& measurer);

/// run_gate with the load taken from `measurer`.
ExitStatus run_gate(const RunOptions& options, const EnvLookup& env, std::ostream& out,
                    const std::atomic<bool>& stop, const Measurer& measurer);

/// Prints the console report on `out` (when not null) and writes every report
/// file `options` asks for, none of them over a file `guard` protects.
void write_reports(const RunOptions& options, const OutputGuard& guard, const GateResult& result,
                   std::ostream* out);

/// Now, in UTC, as the store and the reports write it.
std::string utc_now();

}  // namespace perfgate
