#pragma once

// The figures a stored run is judged and charted by, computed once when the
// store writes the run (and by the schema step that brought older stores to
// them), so that history, compare, baseline selection, change points and the
// report read them without parsing the run's histograms and host samples.

#include <optional>
#include <string>
#include <string_view>

#include "perfgate/core/metrics.h"

namespace perfgate {

struct RunRecord;

/// What the store keeps of a run's figures beside the run.
struct StoredFigures {
  /// Per metric, the run's figure (summary) and its kept iterations' values, as
  /// stored_run_figures() computes them with one value per iteration; the other
  /// fields of RunFigures (error counts, responses per unit) stay empty: they
  /// are read from the iterations when a run is judged itself.
  RunFigures figures;
  /// stored_shared_cpu_pct() of the run: its placement; nullopt when its
  /// windows do not say.
  std::optional<double> shared_cpu_pct;

  friend bool operator==(const StoredFigures& a, const StoredFigures& b) {
    return a.figures.summary == b.figures.summary && a.figures.values == b.figures.values &&
           a.shared_cpu_pct == b.shared_cpu_pct;
  }
};

/// A run's figures computed from its iterations (loaded), with the service's
/// cost from its stored samples; `block` > 1 gives one value per launch
/// (per_launch_figures()). The whole RunFigures, as a run is judged by.
RunFigures stored_run_figures(const RunRecord& run, int block = 1);

/// The share of a stored run's kept samples in which a busy load thread and a
/// busy service thread last ran on one CPU, weighted by samples; nullopt when
/// its windows do not say (an older run, a remote service) or are too few to
/// place the run (kMinPlacementSamples). The stored figure when the store read
/// one with the run, else computed from its samples (loaded).
std::optional<double> stored_shared_cpu_pct(const RunRecord& run);

/// The StoredFigures of `run` computed from its iterations and samples (loaded):
/// what the store writes beside it.
StoredFigures compute_stored_figures(const RunRecord& run);

/// The summary and per-iteration values of `run`: the ones stored with it when
/// the store read them (a header read is enough), else computed from its
/// iterations (a run not read from a store).
RunFigures run_figures_of(const RunRecord& run);

/// The bytes the store keeps for `figures` (summary and values; the placement
/// share has a column of its own). Exact: every double comes back bit for bit.
std::string pack_figures(const RunFigures& figures);
/// The inverse of pack_figures(); throws Error naming `what` when the bytes are damaged.
RunFigures unpack_figures(std::string_view bytes, std::string_view what);

}  // namespace perfgate
