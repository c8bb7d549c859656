#pragma once

// Internal to the gate stage: the cost phase (docs/cost.md). After the timed
// windows, each side's service is launched again under an instrument that
// counts instead of timing; exactly `cost.requests` requests in a fixed order
// are counted per launch. Paired runs count both sides, launch by launch in
// turns; stored runs compare with runs of the same cost key.

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "perfgate/core/cost_run.h"
#include "perfgate/host/instruction_counter.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

/// Makes the hardware counter of one launch (the PMU; a fake in tests).
using CounterFactory = std::function<std::unique_ptr<InstructionCounter>()>;

/// The instrument `cost.instrument` names, or why none can count here: one
/// line naming what is missing. "auto" takes the PMU where `counters` says it
/// counts (no slowdown), else callgrind.
struct CostInstrument {
  std::string name;         // "callgrind" or "perf"; "" when unavailable
  std::string version;      // "valgrind-3.19.0"; the kernel's release for perf
  std::string unavailable;  // why not, when name is ""
};
CostInstrument find_instrument(const Profile& profile, const CounterFactory& counters);

/// find_instrument, looked for before any load: a phase that is `cost.required`
/// and cannot count here is refused at once (Error), not after the timed phase.
CostInstrument required_instrument(const Profile& profile, const CounterFactory& counters);

/// The cost metrics the profile's phase can count and has relative limits for:
/// they join the run's false-fail budget from its first look on.
int planned_cost_family(const Profile& profile);

/// One side's cost phase: `profile.cost.launches` launches of `profile`'s
/// service under the instrument. An instrument that is not there gives a
/// CostRun with `skipped` set (Error when `cost.required`); a service that
/// cannot be counted (it exits, vgdb gets no answer) is an Error, except on
/// the first launch under "auto" (not required), where it skips the phase.
/// `series_requests`: the request count earlier runs of the profile took, kept
/// by `requests: "auto"` while the pace allows (auto_requests()); 0 for none.
CostRun measure_cost(const Profile& profile, const CostInstrument& instrument,
                     const std::atomic<bool>& stop, const CounterFactory& counters,
                     int series_requests = 0);

/// How many times a run judges its counts: 2 in a paired run that may add
/// launches (cost.max_launches above cost.launches), else 1. The levels split
/// over them (add_cost_checks), whether or not launches were added.
int cost_looks(const Profile& profile);

/// Both sides of a paired run, launch by launch in turns (baseline first).
struct PairedCost {
  CostRun baseline;
  CostRun candidate;
  std::string extension;  // launches added, or why none could be: a note; "" when none wanted
};
/// After the first cost.launches a side: how many launches a side the counts
/// want in all, judged by the caller (no more than now: none added).
using WantedLaunches = std::function<int(const PairedCost&)>;
/// `wanted` is asked once; launches are added in turns up to its answer,
/// cost.max_launches at most, while the phase's pace says the next pair ends
/// within cost.budget of its start.
PairedCost measure_paired_cost(const Profile& candidate, const Profile& baseline,
                               const CostInstrument& instrument, const std::atomic<bool>& stop,
                               const CounterFactory& counters, const WantedLaunches& wanted = {},
                               int series_requests = 0);

/// The phase's outcome as a note for the result: counts and spread, or why skipped.
std::string cost_note(const CostRun& cost, const std::string& side = "");

}  // namespace perfgate
