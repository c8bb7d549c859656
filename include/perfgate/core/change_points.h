#pragma once

// Change points in a series of runs' figures: E-divisive means (Matteson and
// James 2014, alpha = 1), as MongoDB's signal processing and Apache Otava
// ("hunter") run it on their performance histories. A step in a history is a
// fact about the code or the machine; the runs before it are another level and
// no baseline for the runs after it. See docs/statistics.md, "Change points in
// the history".

#include <cstddef>
#include <span>
#include <vector>

namespace perfgate {

/// Permutations of the significance test: p = (1 + exceedances) / (1 + this),
/// so 0.001 is the smallest p and the threshold below allows 4 exceedances.
inline constexpr int kChangePointPermutations = 999;
/// A split is a change point when its permutation p-value is at most this. Each
/// test of a series of exchangeable values without a step then fires with
/// probability 0.5 %, and a history without a step is split only when its first
/// test fires (see docs/statistics.md for the false-alarm rates measured on A/A
/// histories, independent and autocorrelated).
inline constexpr double kChangePointMaxP = 0.005;
/// Neither side of a split may have fewer runs: a level rests on five runs,
/// since a slow day of a few runs is no level (docs/statistics.md).
inline constexpr size_t kChangePointMinSegment = 5;

/// One step in a series.
struct ChangePoint {
  size_t index = 0;  // the first value of the new segment
  double p = 1;      // permutation p-value of the split
  /// median(segment after) / median(segment before) - 1, on the values given
  /// (not their logs), each segment bounded by the neighbouring change points;
  /// NaN when the median before is 0.
  double relative_size = 0;

  friend bool operator==(const ChangePoint&, const ChangePoint&) = default;
};

/// The E-divisive statistic of splitting `z` before index `tau`:
/// q = m r / (m + r) * (2/(m r) sum|x - y| - 2/(m(m-1)) sum_{i<k}|x_i - x_k|
///                      - 2/(r(r-1)) sum_{j<l}|y_j - y_l|),
/// x = z[0, tau), y = z[tau, n), m and r their sizes (both >= 2).
double e_divisive_statistic(std::span<const double> z, size_t tau);

/// Change points of `values`, oldest first, in index order: the best split of
/// the series by the E-divisive statistic, kept when a permutation test gives
/// p <= kChangePointMaxP, then the same within each side (binary segmentation),
/// no segment shorter than kChangePointMinSegment. The test allows for runs
/// correlated with their neighbours: when the residuals around the levels of a
/// first search (values shuffled) have a lag-1 autocorrelation rho (plus a
/// margin for its uncertainty) above 0, the search is made again with a test
/// that shuffles the AR(1) innovations instead (prewhitening; see
/// change_points.cc and docs/statistics.md). kChangePointPermutations shuffles,
/// seeded from the segment's length, so the answer is deterministic. Steps
/// smaller than `min_step` (of |relative_size|: 0.03 for 3 %) are dropped
/// afterwards and the levels on their two sides merged: a step that matters
/// to no limit is no level. The statistic is computed on log values when all
/// are positive (a step is a ratio), on the values otherwise. Throws
/// std::invalid_argument on a value that is not finite.
std::vector<ChangePoint> find_change_points(std::span<const double> values, double min_step = 0);

}  // namespace perfgate
