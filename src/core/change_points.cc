#include "perfgate/core/change_points.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>

#include "perfgate/core/statistics.h"

namespace perfgate {
namespace {

struct Split {
  size_t tau = 0;
  double q = 0;
};

// The best split of `z` by the E-divisive statistic, every tau at once in
// O(n^2): the within-left sum A(tau) and within-right sum B(tau) grow by one
// row of distances per step, and the across sum is the total less both. The
// permutation test calls this a thousand times per segment.
class SplitFinder {
 public:
  /// The best split with at least `min_side` values on either side (2 or more).
  Split best(std::span<const double> z, size_t min_side = kChangePointMinSegment) {
    size_t n = z.size();
    left_row_.assign(n, 0);
    right_row_.assign(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (size_t k = i + 1; k < n; ++k) {
        double d = std::abs(z[i] - z[k]);
        left_row_[k] += d;   // sum over earlier values
        right_row_[i] += d;  // sum over later values
      }
    within_right_.assign(n + 1, 0);
    for (size_t t = n; t-- > 0;) within_right_[t] = within_right_[t + 1] + right_row_[t];
    double total = within_right_[0];
    Split out;
    double within_left = 0;
    for (size_t t = 0; t + min_side <= n; ++t) {
      if (t >= min_side) {
        double m = static_cast<double>(t), r = static_cast<double>(n - t);
        double across = total - within_left - within_right_[t];
        double e = 2 * across / (m * r) - 2 * within_left / (m * (m - 1)) -
                   2 * within_right_[t] / (r * (r - 1));
        double q = m * r / (m + r) * e;
        if (q > out.q) out = {t, q};
      }
      within_left += left_row_[t];
    }
    return out;
  }

 private:
  std::vector<double> left_row_, right_row_, within_right_;
};

// Exceedances at or above the observed statistic (a relative tolerance, so that
// the series' own order among its permutations counts as reaching it).
bool reaches(double q, double observed) {
  return q >= observed * (1 - 1e-12);
}

// The largest autocorrelation allowed for, and the margin added to the
// estimate, in its standard errors (1/sqrt(n)): see allowed_rho().
constexpr double kMaxRho = 0.9;
constexpr double kRhoMargin = 1.5;

// The innovations of `z` as an AR(1) with coefficient `rho` around the means
// of its two sides split at `tau`: e = z - its side's mean, u_i = e_i - rho
// e_{i-1}, u_0 = sqrt(1 - rho^2) e_0 (Prais and Winsten). They are what is
// exchangeable in such a series, where the values are not.
std::vector<double> innovations(std::span<const double> z, size_t tau, double rho) {
  double mean[2] = {0, 0};
  for (size_t i = 0; i < z.size(); ++i) mean[i < tau ? 0 : 1] += z[i];
  mean[0] /= static_cast<double>(tau);
  mean[1] /= static_cast<double>(z.size() - tau);
  std::vector<double> u(z.size());
  double before = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    double e = z[i] - mean[i < tau ? 0 : 1];
    u[i] = i == 0 ? std::sqrt(1 - rho * rho) * e : e - rho * before;
    before = e;
  }
  return u;
}

// The AR(1) series of innovations `u` (the inverse of innovations(), around 0).
void rebuild(std::span<const double> u, double rho, std::vector<double>& out) {
  out.resize(u.size());
  out[0] = u[0] / std::sqrt(1 - rho * rho);
  for (size_t i = 1; i < u.size(); ++i) out[i] = rho * out[i - 1] + u[i];
}

// p-value of `split`, the best split of `z`: p = (1 + exceedances) / (1 +
// permutations), the best split of each shuffled series reaching it or not.
// With rho 0 the values are shuffled; otherwise their AR(1) innovations, and
// the series rebuilt from them is searched (rho's correlation kept, any step
// gone). The generator is seeded from the segment's length and the shuffle is
// our own (std::shuffle's use of the generator is the library's), so a history
// gives the same change points on every machine. Stops once p can no longer be
// significant: the p of a split that is no change point is not reported.
double permutation_p(std::span<const double> z, const Split& split, double rho,
                     SplitFinder& finder) {
  std::mt19937_64 rng(0x9e3779b97f4a7c15ULL ^ z.size());
  std::vector<double> shuffled =
      rho == 0 ? std::vector<double>(z.begin(), z.end()) : innovations(z, split.tau, rho);
  std::vector<double> series;
  int limit =
      static_cast<int>(std::floor(kChangePointMaxP * (kChangePointPermutations + 1) + 1e-9)) - 1;
  int exceed = 0;
  for (int k = 0; k < kChangePointPermutations; ++k) {
    for (size_t i = shuffled.size() - 1; i > 0; --i)
      std::swap(shuffled[i], shuffled[rng() % (i + 1)]);
    if (rho != 0) rebuild(shuffled, rho, series);
    if (reaches(finder.best(rho == 0 ? shuffled : series).q, split.q) && ++exceed > limit) break;
  }
  return (1.0 + exceed) / (1.0 + kChangePointPermutations);
}

void segment(std::span<const double> z, size_t offset, double rho, SplitFinder& finder,
             std::vector<ChangePoint>& out) {
  if (z.size() < 2 * kChangePointMinSegment) return;
  // A step nearer an end than a level is long is no level yet, and the best
  // split a level away from that end would put it in the wrong place (runs of
  // the old level on the new side): the rest is searched without those runs.
  size_t nearest = finder.best(z, 2).tau;
  if (nearest != 0 && nearest < kChangePointMinSegment)
    return segment(z.subspan(nearest), offset + nearest, rho, finder, out);
  if (nearest != 0 && z.size() - nearest < kChangePointMinSegment)
    return segment(z.subspan(0, nearest), offset, rho, finder, out);
  Split split = finder.best(z);
  if (split.tau == 0 || !(split.q > 0)) return;  // a flat segment has no step
  double p = permutation_p(z, split, rho, finder);
  if (p > kChangePointMaxP) return;
  out.push_back({offset + split.tau, p, 0});
  segment(z.subspan(0, split.tau), offset, rho, finder, out);
  segment(z.subspan(split.tau), offset + split.tau, rho, finder, out);
}

// Binary segmentation of `z` with the test allowing for AR(1) `rho`, in index order.
std::vector<ChangePoint> segmentation(std::span<const double> z, double rho, SplitFinder& finder) {
  std::vector<ChangePoint> out;
  segment(z, 0, rho, finder, out);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return out;
}

// The lag-1 autocorrelation of `z`'s residuals around the means of the levels
// between `points`, over pairs within a level (a step is no correlation).
double residual_lag1(std::span<const double> z, const std::vector<ChangePoint>& points) {
  double lagged = 0, squares = 0;
  for (size_t k = 0; k <= points.size(); ++k) {
    size_t from = k == 0 ? 0 : points[k - 1].index;
    size_t to = k == points.size() ? z.size() : points[k].index;
    double mean = 0;
    for (size_t i = from; i < to; ++i) mean += z[i];
    mean /= static_cast<double>(to - from);
    for (size_t i = from; i < to; ++i) {
      squares += (z[i] - mean) * (z[i] - mean);
      if (i > from) lagged += (z[i] - mean) * (z[i - 1] - mean);
    }
  }
  return squares > 0 ? lagged / squares : 0;
}

// The AR(1) coefficient the test allows for. Runs of one machine are not
// exchangeable: a slow day or a neighbour carries from run to run, and a test
// that shuffles the values takes such a drift for a step (AR(1) rho 0.5, 25
// runs: 15 % of histories split). So the test shuffles the AR(1) innovations
// (prewhitening) rather than blocks of runs: blocks long enough for rho 0.5
// leave 25 runs too few orderings for p <= kChangePointMaxP. rho is estimated
// once for the whole series, around the levels a first search (values
// shuffled) found, so that other steps do not pass for correlation; estimated
// from few runs it is uncertain (about 1/sqrt(n)) and low just where an
// excursion looks like a step, so the test takes kRhoMargin standard errors
// more. docs/statistics.md has the rates measured each way.
double allowed_rho(std::span<const double> z, const std::vector<ChangePoint>& levels) {
  double margin = kRhoMargin / std::sqrt(static_cast<double>(z.size()));
  return std::clamp(residual_lag1(z, levels) + margin, 0.0, kMaxRho);
}

// Each change point's relative size against its neighbours (index order).
void size_steps(std::span<const double> values, std::vector<ChangePoint>& points) {
  for (size_t k = 0; k < points.size(); ++k) {
    size_t from = k == 0 ? 0 : points[k - 1].index;
    size_t to = k + 1 == points.size() ? values.size() : points[k + 1].index;
    double before = stats::median(values.subspan(from, points[k].index - from));
    double after = stats::median(values.subspan(points[k].index, to - points[k].index));
    points[k].relative_size = before == 0 ? NAN : after / before - 1;
  }
}

// Drops the smallest step below `min_step` and sizes its neighbours again (the
// levels on its two sides are one now), until every step is at least that.
void drop_small_steps(std::span<const double> values, double min_step,
                      std::vector<ChangePoint>& points) {
  for (;;) {
    auto smallest = points.end();
    for (auto it = points.begin(); it != points.end(); ++it) {
      double size = std::abs(it->relative_size);  // NaN, a step from 0, is never small
      if (size < min_step && (smallest == points.end() || size < std::abs(smallest->relative_size)))
        smallest = it;
    }
    if (smallest == points.end()) return;
    points.erase(smallest);
    size_steps(values, points);
  }
}

}  // namespace

double e_divisive_statistic(std::span<const double> z, size_t tau) {
  size_t n = z.size();
  if (tau < 2 || n < tau + 2) throw std::invalid_argument("e_divisive_statistic: sides of 2+");
  double across = 0, left = 0, right = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t k = i + 1; k < n; ++k) {
      double d = std::abs(z[i] - z[k]);
      (k < tau ? left : i >= tau ? right : across) += d;
    }
  double m = static_cast<double>(tau), r = static_cast<double>(n - tau);
  return m * r / (m + r) *
         (2 * across / (m * r) - 2 * left / (m * (m - 1)) - 2 * right / (r * (r - 1)));
}

std::vector<ChangePoint> find_change_points(std::span<const double> values, double min_step) {
  bool positive = true;
  for (double v : values) {
    if (!std::isfinite(v)) throw std::invalid_argument("find_change_points: a value is not finite");
    positive = positive && v > 0;
  }
  std::vector<double> z(values.begin(), values.end());
  if (positive)
    for (double& v : z) v = std::log(v);
  SplitFinder finder;
  // The first search, values shuffled, is the more liberal: what it does not
  // find, the second does not either.
  auto out = segmentation(z, 0, finder);
  if (!out.empty())
    if (double rho = allowed_rho(z, out); rho > 0) out = segmentation(z, rho, finder);
  size_steps(values, out);
  drop_small_steps(values, min_step, out);
  return out;
}

}  // namespace perfgate
