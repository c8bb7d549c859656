// The error-rate max judged with its bursts (issue 39, finding 7): the
// dispersion and the bound against SciPy, and a simulation through the real
// run_figures() and judge() with fixed seeds. docs/statistics.md, "The error
// rate's bound", quotes what the simulation prints.
#include "perfgate/core/error_rate.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "perfgate/core/statistics.h"
#include "perfgate/core/verdict.h"

namespace perfgate {
namespace {

// 12 windows of about 3000 requests, 72 failed in bursts of 8, 16 and 32.
const std::vector<std::uint64_t> kAttempts = {3000, 2900, 3100, 3050, 2950, 3000,
                                              3020, 2980, 3010, 2990, 3000, 3000};
const std::vector<std::uint64_t> kFailures = {0, 16, 0, 0, 32, 0, 16, 0, 0, 0, 8, 0};

// Kept iterations with these counts: the failures as read errors (a reset
// fails the requests in flight), the rest as answered.
std::vector<Iteration> windows(const std::vector<std::uint64_t>& attempts,
                               const std::vector<std::uint64_t>& failures) {
  std::vector<Iteration> out(attempts.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].index = static_cast<int>(i);
    out[i].duration = Nanos(1'000'000'000);
    out[i].stats.responses = attempts[i] - failures[i];
    out[i].stats.errors.read = failures[i];
  }
  return out;
}

ThresholdSet error_max(double max_pct) {
  ThresholdSet t;
  t["error_rate_pct"].max = max_pct;
  return t;
}

const MetricCheck& error_check(const Judgement& j) {
  for (const auto& c : j.checks)
    if (c.metric == "error_rate_pct") return c;
  throw std::runtime_error("no error_rate_pct check");
}

// SciPy: chi2_contingency([failures, attempts - failures], correction=False)
// gives Pearson's 199.1463183319766 on 11 degrees of freedom.
TEST(ErrorRate, DispersionIsPearsonsChiSquareOverItsDegreesOfFreedom) {
  auto figures = run_figures(windows(kAttempts, kFailures));
  EXPECT_NEAR(error_dispersion(figures.error_windows), 199.1463183319766 / 11, 1e-10);
  // Independent-looking counts are never less dispersed than a binomial.
  std::vector<WindowCounts> even(12, WindowCounts{3000, 3});
  EXPECT_EQ(error_dispersion(even), 1);
  // Nothing to tell it from: one window, no failures, nothing but failures.
  EXPECT_EQ(error_dispersion(std::vector<WindowCounts>{{3000, 30}}), 1);
  EXPECT_EQ(error_dispersion(std::vector<WindowCounts>{{3000, 0}, {3000, 0}}), 1);
  EXPECT_EQ(error_dispersion(std::vector<WindowCounts>{{30, 30}, {20, 20}}), 1);
}

// The continuity-corrected Wilson bound is the root of p - 1/2n = L + z
// sqrt(L (1 - L) / n) (scipy.optimize.brentq at rtol 1e-15), also for counts that are not whole.
TEST(ErrorRate, ContinuityCorrectedWilsonBoundMatchesItsDefinition) {
  EXPECT_NEAR(wilson_cc_lower_bound(40, 36000, 1.96), 0.0008043645841608062, 1e-15);
  EXPECT_NEAR(wilson_cc_lower_bound(6.5, 3100.2, 2.2), 0.0008107597558089475, 1e-15);
  EXPECT_NEAR(wilson_cc_lower_bound(2, 50, 1.6448536269514722), 0.008564678960021853, 1e-14);
  EXPECT_EQ(wilson_cc_lower_bound(0, 100, 1.96), 0);
  EXPECT_THROW(wilson_cc_lower_bound(5, 4, 1.96), std::invalid_argument);
  EXPECT_THROW(wilson_cc_lower_bound(1, 4, 0), std::invalid_argument);
}

// 72 failures in 36000 requests (0.2 %) are past a 0.1 % max by Wilson's bound
// for independent requests, but they are five bursts: the bound on the
// effective counts (SciPy: t.ppf(0.975, 11), the same root) is 0.057 %.
TEST(ErrorRate, BurstsWidenTheBoundAndTheMessageSaysSo) {
  auto figures = run_figures(windows(kAttempts, kFailures));
  EXPECT_NEAR(figures.summary["error_rate_pct"], 0.2, 1e-12);
  EXPECT_GT(stats::wilson_lower_bound(72, 36000, 0.975), 0.001);
  auto bound = error_rate_bound(figures, 0.975);
  EXPECT_NEAR(bound.lower_pct, 0.05702398560609252, 1e-12);
  EXPECT_EQ(bound.windows, 12);
  auto j = judge(figures, nullptr, error_max(0.1), {});
  const auto& c = error_check(j);
  EXPECT_EQ(c.verdict, Verdict::kWarn) << c.message;
  EXPECT_EQ(c.message,
            "error_rate_pct 0.200% is above the max 0.100% but within the noise of 36000 "
            "requests: the errors came in bursts (dispersion x18.1 over 12 windows; lower bound "
            "0.057% at 97.5%)");
  // Somewhat more scatter than a binomial's, which chance can give twelve
  // windows (SciPy: chi-square 17.15235167641745, dispersion 1.559), is no
  // claim of bursts.
  std::vector<std::uint64_t> mild = {1, 7, 1, 5, 3, 7, 2, 4, 6, 0, 4, 6};
  auto scattered = run_figures(windows(std::vector<std::uint64_t>(12, 3000), mild));
  EXPECT_NEAR(error_dispersion(scattered.error_windows), 17.15235167641745 / 11, 1e-10);
  EXPECT_EQ(error_check(judge(scattered, nullptr, error_max(0.1), {})).message,
            "error_rate_pct 0.128% is above the max 0.100% but within the noise of 36000 "
            "requests: the windows' errors scatter more than independent ones (dispersion x1.6 "
            "over 12 windows; lower bound 0.084% at 97.5%)");
}

// One burst is one event: 100 requests failing in one window of twelve is a
// rate of 0.28 % over the run, reported and past the max, but no sure fail.
// With one window there is no dispersion to see: Wilson's bound, as before.
TEST(ErrorRate, OneBurstIsNoSureFail) {
  std::vector<std::uint64_t> failures(12, 0);
  failures[5] = 100;
  auto j = judge(run_figures(windows(kAttempts, failures)), nullptr, error_max(0.1), {});
  EXPECT_NEAR(error_check(j).value, 100.0 / 360, 1e-12);
  EXPECT_EQ(error_check(j).verdict, Verdict::kWarn) << error_check(j).message;
  auto one = run_figures(windows({36000}, {100}));
  EXPECT_NEAR(error_rate_bound(one, 0.975).lower_pct,
              100 * stats::wilson_lower_bound(100, 36000, 0.975), 1e-12);
  EXPECT_EQ(judge(one, nullptr, error_max(0.1), {}).verdict, Verdict::kFail);
}

// A sequential run looks again and again, and a fail at any look stops it: the
// error rate's bound is judged at the look's stricter level, as the relative
// metrics are, or a rate just under the max would fail more often than alpha / 2
// over the looks. 52 of 36,000 failed: surely past 0.1 % at one look's 97.5 %,
// not at a look of 99.5 % (one-sided 99.75 %).
TEST(ErrorRate, ASequentialLookJudgesTheBoundAtItsOwnLevel) {
  auto one = run_figures(windows({36000}, {52}));
  ASSERT_GT(error_rate_bound(one, 0.975).lower_pct, 0.1);
  ASSERT_LT(error_rate_bound(one, 0.9975).lower_pct, 0.1);
  EXPECT_EQ(judge(one, nullptr, error_max(0.1), {}).verdict, Verdict::kFail);
  DecisionSettings look;
  look.look_level = [](double) { return 99.5; };
  auto j = judge(one, nullptr, error_max(0.1), {}, look);
  EXPECT_EQ(error_check(j).verdict, Verdict::kWarn) << error_check(j).message;
  EXPECT_NE(error_check(j).message.find("at 99.75%"), std::string::npos) << error_check(j).message;
}

// Runs of 12 windows of 2500-3500 requests whose errors arrive as a Poisson
// stream of bursts, each failing `burst` requests at once.
class ErrorSimulation {
 public:
  explicit ErrorSimulation(std::uint64_t seed) : rng_(seed) {}

  std::vector<Iteration> run(double rate, int burst) {
    std::vector<std::uint64_t> attempts, failures;
    std::uniform_int_distribution<std::uint64_t> size(2500, 3500);
    for (int w = 0; w < 12; ++w) {
      attempts.push_back(size(rng_));
      std::poisson_distribution<std::uint64_t> bursts(static_cast<double>(attempts.back()) * rate /
                                                      burst);
      failures.push_back(std::min(attempts.back(), bursts(rng_) * burst));
    }
    return windows(attempts, failures);
  }

  // The share of `runs` runs that fail a 0.1 % max.
  double fail_rate(double rate, int burst, int runs) {
    int failed = 0;
    for (int i = 0; i < runs; ++i)
      failed += judge(run_figures(run(rate, burst)), nullptr, error_max(0.1), {}).verdict ==
                Verdict::kFail;
    double share = static_cast<double>(failed) / runs;
    std::printf("[ error rate ] true %.2f%% vs max 0.1%%, bursts of %2d: fails %5.1f%% of %d\n",
                rate * 100, burst, share * 100, runs);
    return share;
  }

 private:
  std::mt19937_64 rng_;
};

constexpr int kRuns = 4000;

// Finding 7: on Wilson's bound for independent requests a true rate under the
// max failed up to 26 % of runs when its errors came in bursts.
TEST(ErrorRateSimulation, BurstsUnderTheMaxFailWithinTheBudget) {
  ErrorSimulation sim(39);
  for (int burst : {8, 16}) {
    EXPECT_LE(sim.fail_rate(0.0005, burst, kRuns), 0.025);
    EXPECT_LE(sim.fail_rate(0.0008, burst, kRuns), 0.025);
  }
  // At the max itself, the one-sided budget (measured 2.0-2.4 %, with margin).
  for (int burst : {1, 8, 16}) EXPECT_LE(sim.fail_rate(0.001, burst, kRuns), 0.035);
}

// Three times the max still fails most runs (measured 84 % / 58 %: a few
// bursts of 16 are few events; knowing the burst size, a 2.5 % test could not
// do better than about 66 %), and independent errors keep their power
// (measured 100 % at 0.3 %, 99 % at 0.2 %; 66 % at 0.15 %, where Wilson's
// bound alone, which assumes independence, had 80 %).
TEST(ErrorRateSimulation, ARateWellPastTheMaxStillFails) {
  ErrorSimulation sim(7);
  EXPECT_GE(sim.fail_rate(0.003, 8, kRuns), 0.75);
  EXPECT_GE(sim.fail_rate(0.003, 16, kRuns), 0.50);
  EXPECT_GE(sim.fail_rate(0.003, 1, kRuns), 0.99);
  EXPECT_GE(sim.fail_rate(0.002, 1, kRuns), 0.95);
  EXPECT_GE(sim.fail_rate(0.0015, 1, kRuns), 0.55);
}

}  // namespace
}  // namespace perfgate
