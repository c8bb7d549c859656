#include "perfgate/core/spending_boundary.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "perfgate/core/statistics.h"

namespace perfgate {
namespace {

constexpr int kSequences = 20'000;
constexpr std::uint64_t kSeed = 20261203;

// SplitMix64: the same bits on every platform and standard library (the
// <random> distributions are not), one stream per simulated sequence.
struct Bits {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {  // Box-Muller, one of the pair
    double u = 1 - uniform(), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
};

// P(V <= v) for v = 0..n(n+1)/2 of the signed-rank sum of n pairs, exactly.
std::vector<double> signed_rank_cdf(int n) {
  size_t max_sum = static_cast<size_t>(n) * (n + 1) / 2;
  std::vector<double> ways(max_sum + 1, 0.0);
  ways[0] = 1;
  for (int rank = 1; rank <= n; ++rank)
    for (size_t s = max_sum; s >= static_cast<size_t>(rank); --s) ways[s] += ways[s - rank];
  double total = std::ldexp(1.0, n), cum = 0;
  for (auto& w : ways) w = (cum += w) / total;
  return ways;
}

// The two-sided level at which stats::hodges_lehmann_paired puts the interval's
// end at the critical value "fail when V <= r" (r = -1: no fail possible): half
// way between the attained tails at r and r + 1, so that the test's own
// critical value search lands on r + 1 (exact below 50 pairs, normal above).
double level_for(int n, int r) {
  if (n < 50) {
    auto cdf = signed_rank_cdf(n);
    double below = r >= 0 ? cdf[static_cast<size_t>(r)] : 0;
    double at = cdf[std::min(static_cast<size_t>(r + 1), cdf.size() - 1)];
    return 100 * (1 - (below + at));
  }
  double mean = n * (n + 1) / 4.0, sigma = std::sqrt(n * (n + 1) * (2 * n + 1) / 24.0);
  double z = (mean - 0.5 - (r + 0.5)) / sigma;
  return 100 * (1 - 2 * (1 - stats::normal_cdf(z)));
}

// How many of the kSequences simulated sequences may have crossed by a look
// that has spent `spent`: the most whose crossing rate's upper 95 % bound
// (normal, one-sided) is still within it. Counting up to spent * kSequences
// itself let the table's sampling noise decide: one seed's boundary crossed
// 2.65 % where 2.5 % was spent (issue 39, finding 10).
long allowed_crossings(double spent) {
  const double n = kSequences;
  long k = static_cast<long>(std::floor(spent * n + 1e-9));
  auto upper = [n](long c) {
    double p = c / n;
    return p + 1.6448536269514722 * std::sqrt(p * (1 - p) / n);
  };
  while (k > 0 && upper(k) > spent) --k;
  return k;
}

// One independent, fixed-seed stream per simulated sequence: the same table on
// every platform and every run.
std::vector<Bits> seeded_streams() {
  std::vector<Bits> bits(kSequences);
  for (int s = 0; s < kSequences; ++s) bits[s].state = kSeed ^ (0x632be59bd9b4e019ULL * (s + 1));
  return bits;
}

// The joint law of the signed-rank sums at the looks, simulated: per sequence
// the |d| are uniform (only their order matters) and the signs fair; V is the
// sum of the ranks of the positive ones, kept up to date as values arrive.
std::vector<BoundaryLook> exact_boundary(Spending shape, const std::vector<int>& ns, double alpha) {
  int last = ns.back();
  std::vector<std::vector<double>> mags(kSequences);
  std::vector<std::vector<char>> positive(kSequences);
  std::vector<long> v(kSequences, 0);
  std::vector<char> failed(kSequences, 0);
  std::vector<Bits> bits = seeded_streams();
  int fails = 0, have = 0;
  std::vector<BoundaryLook> looks;
  for (size_t k = 0; k < ns.size(); ++k) {
    int n = ns[k];
    for (int s = 0; s < kSequences; ++s) {
      for (int i = have; i < n; ++i) {
        double x = bits[s].uniform();
        bool pos = bits[s].next() & 1;
        long less = 0, pos_greater = 0;
        for (size_t j = 0; j < mags[s].size(); ++j) {
          if (mags[s][j] < x)
            ++less;
          else if (positive[s][j])
            ++pos_greater;
        }
        v[s] += pos_greater + (pos ? less + 1 : 0);
        mags[s].push_back(x);
        positive[s].push_back(pos);
      }
    }
    have = n;
    BoundaryLook look;
    look.n = n;
    look.spent = spent_alpha(shape, alpha, static_cast<double>(n) / last);
    int r = -1;
    if (k == 0) {
      // The first look's law is the marginal one, known exactly.
      auto cdf = signed_rank_cdf(n);
      while (r + 1 < static_cast<int>(cdf.size()) && cdf[r + 1] <= look.spent) ++r;
    } else {
      long allowed = allowed_crossings(look.spent) - fails;
      std::vector<long> count(static_cast<size_t>(n) * (n + 1) / 2 + 1, 0);
      for (int s = 0; s < kSequences; ++s)
        if (!failed[s]) ++count[v[s]];
      long cum = 0;
      while (r + 1 < static_cast<int>(count.size()) && cum + count[r + 1] <= allowed)
        cum += count[++r];
    }
    for (int s = 0; s < kSequences; ++s)
      if (!failed[s] && v[s] <= r) failed[s] = 1, ++fails;
    look.reachable = r >= 0;
    look.confidence_pct = level_for(n, r);
    looks.push_back(look);
  }
  return looks;
}

// Past kExactMaxPairs: the statistic's normal limit, a Brownian motion in the
// information n, simulated the same way with a z boundary.
std::vector<BoundaryLook> normal_boundary(Spending shape, const std::vector<int>& ns,
                                          double alpha) {
  int last = ns.back();
  std::vector<double> sum(kSequences, 0);
  std::vector<char> failed(kSequences, 0);
  std::vector<Bits> bits = seeded_streams();
  int fails = 0, have = 0;
  std::vector<BoundaryLook> looks;
  for (int n : ns) {
    std::vector<double> z;
    for (int s = 0; s < kSequences; ++s) {
      sum[s] += std::sqrt(static_cast<double>(n - have)) * bits[s].normal();
      if (!failed[s]) z.push_back(sum[s] / std::sqrt(static_cast<double>(n)));
    }
    have = n;
    BoundaryLook look;
    look.n = n;
    look.spent = spent_alpha(shape, alpha, static_cast<double>(n) / last);
    long allowed = allowed_crossings(look.spent) - fails;
    double p = 1e-9;  // nothing left to spend: a level no sample here will pass
    double bound = 1e300;
    if (allowed > 0 && allowed < static_cast<long>(z.size())) {
      // The allowed-th and next largest z, without sorting all of them.
      std::nth_element(z.begin(), z.begin() + allowed, z.end(), std::greater<>());
      bound = (*std::min_element(z.begin(), z.begin() + allowed) + z[allowed]) / 2;
      p = 1 - stats::normal_cdf(bound);
    }
    for (int s = 0; s < kSequences; ++s)
      if (!failed[s] && sum[s] / std::sqrt(static_cast<double>(n)) > bound) failed[s] = 1, ++fails;
    look.confidence_pct = 100 * (1 - 2 * p);
    looks.push_back(look);
  }
  return looks;
}

}  // namespace

const char* to_string(Spending shape) {
  switch (shape) {
    case Spending::kBonferroni:
      return "bonferroni";
    case Spending::kPocock:
      return "pocock";
    case Spending::kOBrienFleming:
      return "obrien-fleming";
  }
  return "bonferroni";
}

double spent_alpha(Spending shape, double alpha, double t) {
  if (t >= 1) return alpha;
  if (t <= 0) return 0;
  switch (shape) {
    case Spending::kPocock:
      return alpha * std::log(1 + (std::exp(1.0) - 1) * t);
    case Spending::kOBrienFleming:
      return 2 - 2 * stats::normal_cdf(stats::normal_quantile(1 - alpha / 2) / std::sqrt(t));
    case Spending::kBonferroni:
      break;
  }
  return alpha * t;  // not a spending function; Bonferroni's levels are not tabled
}

namespace {

// The table for a one-sided `alpha` spent over looks at `ns`, computed once.
const std::vector<BoundaryLook>& cached_boundary(Spending shape, const std::vector<int>& ns,
                                                 double alpha, const char* caller) {
  if (ns.empty() || ns.front() < 1 || !std::is_sorted(ns.begin(), ns.end()))
    throw std::invalid_argument(std::string(caller) +
                                ": looks need increasing counts of at least 1");
  using Key = std::tuple<int, std::vector<int>, double>;
  static std::mutex mutex;
  static std::map<Key, std::vector<BoundaryLook>> cache;
  std::lock_guard lock(mutex);
  Key key{static_cast<int>(shape), ns, alpha};
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  auto table = ns.back() <= kExactMaxPairs ? exact_boundary(shape, ns, alpha)
                                           : normal_boundary(shape, ns, alpha);
  // A look that spends about half may land past the middle of a coarse law:
  // its bound is then the estimate's own side of the median, as lenient as a
  // bound can be, and the level still one the interval search accepts.
  for (auto& look : table) look.confidence_pct = std::max(look.confidence_pct, kLeastLevelPct);
  return cache.emplace(key, std::move(table)).first->second;
}

}  // namespace

const std::vector<BoundaryLook>& signed_rank_boundary(Spending shape, const std::vector<int>& ns,
                                                      double confidence_pct) {
  if (!(confidence_pct > 0 && confidence_pct < 100))
    throw std::invalid_argument("signed_rank_boundary: confidence must be in (0, 100)");
  double alpha = (1 - confidence_pct / 100) / 2;  // one end of the two-sided interval
  return cached_boundary(shape, ns, alpha, "signed_rank_boundary");
}

const std::vector<BoundaryLook>& estimate_boundary(Spending shape, const std::vector<int>& ns) {
  return cached_boundary(shape, ns, kEstimateAlpha, "estimate_boundary");
}

}  // namespace perfgate
