#pragma once

// An alpha-spending boundary for a sequential paired run (Lan & DeMets 1983):
// the one-sided false-fail budget alpha is spent over the looks as a function
// of the information fraction t = n_k / n_K, and each look's nominal level is
// the one at which the probability of a fail by that look, under no change,
// equals what the function has spent by then. The probability is the joint law
// of the signed-rank statistic of the pair log ratios across the looks, which
// under no change is distribution-free (ranks of |d| uniformly ordered, signs
// fair coins): a fixed-seed simulation of it gives the levels, deterministic
// and computed once per plan. See docs/statistics.md, "Sequential runs".

#include <string>
#include <vector>

namespace perfgate {

/// How alpha is spent over the looks.
enum class Spending {
  kBonferroni,     // alpha / K at every look: valid for any dependence
  kPocock,         // alpha * ln(1 + (e - 1) t): nearly equal levels
  kOBrienFleming,  // 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)): strict early, lenient late
};

const char* to_string(Spending shape);

/// One-sided alpha spent by information fraction t in (0, 1] (t >= 1: all of it).
double spent_alpha(Spending shape, double alpha, double t);

/// One look of a boundary.
struct BoundaryLook {
  int n = 0;                  // values tested at this look (pairs, or blocks)
  double spent = 0;           // cumulative one-sided alpha spent by this look
  double confidence_pct = 0;  // the two-sided level this look's interval is built at
  bool reachable = true;      // false: no fail is possible at this look (it extends)
};

/// Per-look levels for looks at `ns` values (increasing) with a one-sided
/// budget of (1 - confidence_pct / 100) / 2, as a fail is one end of a
/// two-sided interval. Signed-rank (up to kExactMaxPairs values at the last
/// look) or its normal limit (above), 20,000 simulated sequences from a fixed
/// seed, each look allowed the crossings whose rate's upper 95 % bound is
/// within what it has spent (the first look's law is exact). Cached: the same
/// arguments return the same table, bit for bit.
const std::vector<BoundaryLook>& signed_rank_boundary(Spending shape, const std::vector<int>& ns,
                                                      double confidence_pct);

/// The fail limit's own boundary (docs/statistics.md, "Sequential runs"): "the
/// estimate is past F" is a one-sided test of "the change is past F" at 50 %
/// (its bound at 50 % is the estimate itself), so a change exactly at F fails at
/// most half the time at one look. Over several looks the estimate would get
/// a chance at each; this spends the 50 % over the looks as alpha is spent,
/// for the signed-rank test of the log-ratios shifted by ln(1 + F), whose law
/// under "the change is F" is the same distribution-free one. Each look's
/// `confidence_pct` is the two-sided level whose interval's near end must be
/// past F (kLeastLevelPct where the look spends about half).
const std::vector<BoundaryLook>& estimate_boundary(Spending shape, const std::vector<int>& ns);

/// The one-sided chance a change exactly at the fail limit has to fail over
/// all looks: the estimate's, at one look.
inline constexpr double kEstimateAlpha = 0.5;

/// The least level a table gives: an interval of (nearly) no width, its ends
/// the Walsh averages beside the median.
inline constexpr double kLeastLevelPct = 1e-6;

/// Above this many values at the last look the table uses the normal limit of
/// the statistic (Brownian motion in the information), as the test itself does
/// from 50 pairs on.
inline constexpr int kExactMaxPairs = 100;

}  // namespace perfgate
