#pragma once

// Internal to the gate stage: the pairs of a paired run that may vote. A pair
// whose two windows the sampler saw differently disturbed (a neighbour's burst
// on one side only, steal on one side, a stalled window) measures the burst,
// not the builds: it is dropped and, within a bound, measured again.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "measurement.h"

namespace perfgate {

/// Why pair `index` must not vote, naming the side; nullopt when it may.
std::optional<std::string> pair_disturbance(const PairedMeasurement& m, size_t index,
                                            const PairedSpec& spec);

/// What screening did, for the notes and the verdict.
struct PairScreening {
  int dropped = 0;                    // pairs that did not vote
  int redone = 0;                     // pairs measured again in their place
  std::vector<std::string> reasons;   // "pair 3: foreign CPU 12% on the baseline side, 61% ..."
  std::vector<size_t> dropped_pairs;  // their indices
  std::string inconclusive;           // why too few pairs voted; "" when enough did

  /// "2 of 8 pairs dropped (pair 3: ...; pair 5: ...); 2 measured again".
  std::string note(int planned) const;
};

/// Measures `pairs` more pairs, as the first ones were.
using PairRedo = std::function<PairedMeasurement(int pairs)>;

/// Drops every disturbed kept pair of `m` (both its windows become discarded),
/// measures at most `spec.max_redos` pairs again through `redo` and screens them
/// in turn. Too few undisturbed pairs left to ever fail at `confidence_pct` makes
/// the run inconclusive: then every pair votes again, for figures that describe
/// the run, and the caller makes the verdict at most a warn.
PairScreening screen_pairs(PairedMeasurement& m, const PairedSpec& spec, double confidence_pct,
                           const PairRedo& redo);

}  // namespace perfgate
