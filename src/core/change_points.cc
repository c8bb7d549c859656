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
  Split best(std::span<const double> z) {
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
    for (size_t t = 0; t + kChangePointMinSegment <= n; ++t) {
      if (t >= kChangePointMinSegment) {
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

// p-value of the best split of `z` by shuffling it: p = (1 + exceedances) /
// (1 + permutations). The generator is seeded from the segment's length and the
// shuffle is our own (std::shuffle's use of the generator is the library's),
// so a history gives the same change points on every machine. Stops once p can
// no longer be significant: the p of a split that is no change point is not
// reported.
double permutation_p(std::span<const double> z, double observed, SplitFinder& finder) {
  std::mt19937_64 rng(0x9e3779b97f4a7c15ULL ^ z.size());
  std::vector<double> shuffled(z.begin(), z.end());
  int limit =
      static_cast<int>(std::floor(kChangePointMaxP * (kChangePointPermutations + 1) + 1e-9)) - 1;
  int exceed = 0;
  for (int k = 0; k < kChangePointPermutations; ++k) {
    for (size_t i = shuffled.size() - 1; i > 0; --i)
      std::swap(shuffled[i], shuffled[rng() % (i + 1)]);
    if (reaches(finder.best(shuffled).q, observed) && ++exceed > limit) break;
  }
  return (1.0 + exceed) / (1.0 + kChangePointPermutations);
}

void segment(std::span<const double> z, size_t offset, SplitFinder& finder,
             std::vector<ChangePoint>& out) {
  if (z.size() < 2 * kChangePointMinSegment) return;
  Split split = finder.best(z);
  if (split.tau == 0 || !(split.q > 0)) return;  // a flat segment has no step
  double p = permutation_p(z, split.q, finder);
  if (p > kChangePointMaxP) return;
  out.push_back({offset + split.tau, p, 0});
  segment(z.subspan(0, split.tau), offset, finder, out);
  segment(z.subspan(split.tau), offset + split.tau, finder, out);
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

std::vector<ChangePoint> find_change_points(std::span<const double> values) {
  bool positive = true;
  for (double v : values) {
    if (!std::isfinite(v)) throw std::invalid_argument("find_change_points: a value is not finite");
    positive = positive && v > 0;
  }
  std::vector<double> z(values.begin(), values.end());
  if (positive)
    for (double& v : z) v = std::log(v);
  SplitFinder finder;
  std::vector<ChangePoint> out;
  segment(z, 0, finder, out);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  for (size_t k = 0; k < out.size(); ++k) {
    size_t from = k == 0 ? 0 : out[k - 1].index;
    size_t to = k + 1 == out.size() ? values.size() : out[k + 1].index;
    double before = stats::median(values.subspan(from, out[k].index - from));
    double after = stats::median(values.subspan(out[k].index, to - out[k].index));
    out[k].relative_size = before == 0 ? NAN : after / before - 1;
  }
  return out;
}

}  // namespace perfgate
