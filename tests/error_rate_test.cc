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

// 12 kept windows of 3000 requests: in each, `failed` answered `status` and
// `timeouts` timed out, the rest answered 200.
std::vector<Iteration> answered(int status, std::uint64_t failed, std::uint64_t timeouts) {
  std::vector<Iteration> out(12);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].index = static_cast<int>(i);
    out[i].duration = Nanos(1'000'000'000);
    out[i].stats.responses = 3000 - timeouts;
    for (std::uint64_t n = 0; n < out[i].stats.responses; ++n)
      out[i].stats.statuses.count(n < failed ? status : 200);
    out[i].stats.errors.timeout = timeouts;
  }
  return out;
}

Saturation busy() {
  return {true, {"foreign CPU 80% (limit 25%)"}, {}};
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
// effective counts (SciPy: t.ppf(0.975, 11), the same root) is 0.057 %, and
// 0.069 % at 95 %: over the max within the noise, a pass that says so (issue
// 46: it warned). 88 failures in seven bursts are plausibly past it: a warn.
TEST(ErrorRate, BurstsWidenTheBoundAndTheMessageSaysSo) {
  auto figures = run_figures(windows(kAttempts, kFailures));
  EXPECT_NEAR(figures.summary["error_rate_pct"], 0.2, 1e-12);
  EXPECT_GT(stats::wilson_lower_bound(72, 36000, 0.975), 0.001);
  auto bound = error_rate_bound(figures, 0.975);
  EXPECT_NEAR(bound.lower_pct, 0.05702398560609252, 1e-12);
  EXPECT_EQ(bound.windows, 12);
  auto j = judge(figures, nullptr, error_max(0.1), {});
  const auto& c = error_check(j);
  EXPECT_EQ(c.verdict, Verdict::kPass) << c.message;
  EXPECT_EQ(c.message,
            "error_rate_pct 0.200% is above the max 0.100% but within the noise of 36000 "
            "requests: the errors came in bursts (dispersion x18.1 over 12 windows; lower bound "
            "0.069% at 95%); failed: read x 72");
  auto more = run_figures(windows(kAttempts, {0, 16, 8, 0, 32, 0, 16, 0, 8, 0, 8, 0}));
  auto more_judged = judge(more, nullptr, error_max(0.1), {});
  const auto& warned = error_check(more_judged);
  EXPECT_EQ(warned.verdict, Verdict::kWarn) << warned.message;
  EXPECT_EQ(warned.message,
            "error_rate_pct 0.244% is above the max 0.100%, plausibly but not surely past it: "
            "the errors came in bursts (dispersion x13.7 over 12 windows; lower bound 0.109% at "
            "95%, 0.094% at 97.5%); failed: read x 88");
  // Somewhat more scatter than a binomial's, which chance can give twelve
  // windows (SciPy: chi-square 17.15235167641745, dispersion 1.559), is no
  // claim of bursts.
  std::vector<std::uint64_t> mild = {1, 7, 1, 5, 3, 7, 2, 4, 6, 0, 4, 6};
  auto scattered = run_figures(windows(std::vector<std::uint64_t>(12, 3000), mild));
  EXPECT_NEAR(error_dispersion(scattered.error_windows), 17.15235167641745 / 11, 1e-10);
  EXPECT_EQ(error_check(judge(scattered, nullptr, error_max(0.1), {})).message,
            "error_rate_pct 0.128% is above the max 0.100% but within the noise of 36000 "
            "requests: the windows' errors scatter more than independent ones (dispersion x1.6 "
            "over 12 windows; lower bound 0.090% at 95%); failed: read x 46");
}

// One burst is one event: 100 requests failing in one window of twelve is a
// rate of 0.28 % over the run, reported and past the max, but neither a sure
// fail nor a plausible one (issue 46: it warned). With one window there is no
// dispersion to see: Wilson's bound, as before.
TEST(ErrorRate, OneBurstIsNoFailNorWarn) {
  std::vector<std::uint64_t> failures(12, 0);
  failures[5] = 100;
  auto j = judge(run_figures(windows(kAttempts, failures)), nullptr, error_max(0.1), {});
  EXPECT_NEAR(error_check(j).value, 100.0 / 360, 1e-12);
  EXPECT_EQ(error_check(j).verdict, Verdict::kPass) << error_check(j).message;
  EXPECT_NE(error_check(j).message.find("but within the noise of 36000 requests: the errors came "
                                        "in bursts (dispersion x100.3 over 12 windows; lower "
                                        "bound 0.017% at 95%)"),
            std::string::npos)
      << error_check(j).message;
  auto one = run_figures(windows({36000}, {100}));
  EXPECT_NEAR(error_rate_bound(one, 0.975).lower_pct,
              100 * stats::wilson_lower_bound(100, 36000, 0.975), 1e-12);
  EXPECT_EQ(judge(one, nullptr, error_max(0.1), {}).verdict, Verdict::kFail);
}

// A wrong path: every request answered 404. A saturated load machine can time
// requests out, reset or refuse them; it cannot make the service answer 404, so
// the fail stands on a saturated run (issue 46), and says why and what failed.
TEST(ErrorRate, ASaturatedRunFailsOnStatusesTheServiceAnswered) {
  auto j = judge(run_figures(answered(404, 3000, 0)), nullptr, error_max(0.1), busy());
  EXPECT_EQ(j.verdict, Verdict::kFail);
  const auto& c = error_check(j);
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_TRUE(c.fails_when_saturated);
  EXPECT_EQ(c.message,
            "fails although the load machine was saturated (foreign CPU 80% (limit 25%)): a "
            "busy client times requests out or loses them, but cannot make the service answer "
            "a status; error_rate_pct 100.000% is above the max 0.100%; failed: 4xx x 36000; "
            "the statuses the service answered are past it alone (lower bound 99.984% at "
            "97.5%)");
  ASSERT_FALSE(j.notes.empty());
  EXPECT_EQ(j.notes.back(),
            "the load machine was saturated: this run never becomes a baseline, and fails all "
            "the same on error_rate_pct, whose failed statuses the service answered itself");
  // A dead backend's 502s among timeouts: the statuses alone are past the max.
  auto mixed = judge(run_figures(answered(502, 30, 30)), nullptr, error_max(0.1), busy());
  EXPECT_EQ(mixed.verdict, Verdict::kFail) << error_check(mixed).message;
  EXPECT_NE(error_check(mixed).message.find("; failed: 5xx x 360, timeout x 360;"),
            std::string::npos)
      << error_check(mixed).message;
}

// Timeouts past the max are what a saturated load machine does cause: they
// warn, as every other fail of a saturated run does; on a quiet one they fail.
// So do answered statuses under the max that only the timeouts put past it.
TEST(ErrorRate, ASaturatedRunOnlyWarnsOnTimeouts) {
  auto timeouts = run_figures(answered(404, 0, 30));
  EXPECT_EQ(judge(timeouts, nullptr, error_max(0.1), {}).verdict, Verdict::kFail);
  auto j = judge(timeouts, nullptr, error_max(0.1), busy());
  EXPECT_EQ(j.verdict, Verdict::kWarn);
  const auto& c = error_check(j);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_FALSE(c.fails_when_saturated);
  EXPECT_EQ(c.message,
            "inconclusive, load machine saturated: foreign CPU 80% (limit 25%) (would fail: "
            "error_rate_pct 1.000% is above the max 0.100%; failed: timeout x 360)");
  EXPECT_EQ(j.notes.back(),
            "the load machine was saturated: this run is inconclusive and never becomes a "
            "baseline");
  auto few_statuses = judge(run_figures(answered(500, 2, 30)), nullptr, error_max(0.1), busy());
  EXPECT_EQ(few_statuses.verdict, Verdict::kWarn) << error_check(few_statuses).message;
}

// A sequential run looks again and again, and a fail at any look stops it: the
// error rate's bound is judged at the look's stricter level, as the relative
// metrics are, or a rate just under the max would fail more often than alpha / 2
// over the looks. 52 of 36,000 failed: surely past 0.1 % at one look's 97.5 %,
// not at a look of 99.5 % (one-sided 99.75 %), where its bound at the look's
// 99.5 % says it plausibly is: a warn.
TEST(ErrorRate, ASequentialLookJudgesTheBoundAtItsOwnLevel) {
  auto one = run_figures(windows({36000}, {52}));
  ASSERT_GT(error_rate_bound(one, 0.975).lower_pct, 0.1);
  ASSERT_LT(error_rate_bound(one, 0.9975).lower_pct, 0.1);
  EXPECT_EQ(judge(one, nullptr, error_max(0.1), {}).verdict, Verdict::kFail);
  DecisionSettings look;
  look.look_level = [](double) { return 99.5; };
  auto j = judge(one, nullptr, error_max(0.1), {}, look);
  EXPECT_EQ(error_check(j).verdict, Verdict::kWarn) << error_check(j).message;
  EXPECT_NE(error_check(j).message.find("% at 99.5%, 0.0"), std::string::npos)
      << error_check(j).message;
  EXPECT_NE(error_check(j).message.find("at 99.75%"), std::string::npos) << error_check(j).message;
}

// What a run's errors look like: a true `rate` whose errors arrive as a Poisson
// stream of bursts of `burst` requests each; with `window_share` under 1 only
// that share of windows (drawn at random) has errors at all, at rate /
// window_share: a healthy service whose few errors come in bad windows.
struct ErrorModel {
  double rate = 0;
  int burst = 1;
  double window_share = 1;
};

// The share of runs that fail a 0.1 % max, that warn, and whose point rate is
// over it (all of which warned or failed before issue 46).
struct Shares {
  double fail = 0, warn = 0, over = 0;
};

// Runs of 12 windows of 2500-3500 requests with errors as `ErrorModel` says.
class ErrorSimulation {
 public:
  explicit ErrorSimulation(std::uint64_t seed) : rng_(seed) {}

  std::vector<Iteration> run(const ErrorModel& m) {
    std::vector<std::uint64_t> attempts, failures;
    std::uniform_int_distribution<std::uint64_t> size(2500, 3500);
    std::bernoulli_distribution bad(m.window_share);
    for (int w = 0; w < 12; ++w) {
      attempts.push_back(size(rng_));
      // Drawn only with a share, so that the other rows keep their stream.
      bool errors = m.window_share >= 1 || bad(rng_);
      double expected = static_cast<double>(attempts.back()) * m.rate / m.window_share / m.burst;
      std::poisson_distribution<std::uint64_t> bursts(expected);
      failures.push_back(errors ? std::min(attempts.back(), bursts(rng_) * m.burst) : 0);
    }
    return windows(attempts, failures);
  }

  Shares shares(const ErrorModel& m, int runs) {
    Shares s;
    for (int i = 0; i < runs; ++i) {
      auto figures = run_figures(run(m));
      auto verdict = judge(figures, nullptr, error_max(0.1), {}).verdict;
      s.fail += verdict == Verdict::kFail;
      s.warn += verdict == Verdict::kWarn;
      s.over += figures.summary["error_rate_pct"] > 0.1;
    }
    for (double* share : {&s.fail, &s.warn, &s.over}) *share /= runs;
    std::string where = m.window_share < 1
                            ? ", in " +
                                  std::to_string(static_cast<int>(m.window_share * 100 + 0.5)) +
                                  "% of windows"
                            : "";
    std::printf(
        "[ error rate ] true %.2f%% vs max 0.1%%, bursts of %2d%s: fails %5.1f%%, warns %5.1f%%, "
        "over the max %5.1f%% of %d\n",
        m.rate * 100, m.burst, where.c_str(), s.fail * 100, s.warn * 100, s.over * 100, runs);
    return s;
  }

  double fail_rate(double rate, int burst, int runs) { return shares({rate, burst}, runs).fail; }

 private:
  std::mt19937_64 rng_;
};

constexpr int kRuns = 4000;

// Finding 7: on Wilson's bound for independent requests a true rate under the
// max failed up to 26 % of runs when its errors came in bursts. Issue 46: they
// warned too, whenever the point rate was over the max (0.08 % in bursts of 16:
// 27 % of runs); now a warn needs the bound at 95 % past the max.
TEST(ErrorRateSimulation, BurstsUnderTheMaxFailWithinTheBudget) {
  ErrorSimulation sim(39);
  for (int burst : {8, 16}) {
    EXPECT_LE(sim.fail_rate(0.0005, burst, kRuns), 0.025);
    auto s = sim.shares({0.0008, burst}, kRuns);
    EXPECT_LE(s.fail, 0.025);
    EXPECT_LE(s.fail + s.warn, 0.05);
  }
  // At the max itself, the one-sided budget (measured 2.0-2.4 %, with margin);
  // a warn or a fail about alpha of the time.
  for (int burst : {1, 8, 16}) {
    auto s = sim.shares({0.001, burst}, kRuns);
    EXPECT_LE(s.fail, 0.035);
    EXPECT_LE(s.fail + s.warn, 0.065);
  }
}

// Issue 46: a healthy service whose few errors come in bad windows (0.05 %
// with errors in 2 % of windows: one bad window of twelve holds 0.2 % of the
// run) was over the max, and warned, in 21 % of runs; 0.08 % with errors in
// 4 % of windows in 39 %. One bad window is one event: now they seldom warn.
TEST(ErrorRateSimulation, AHealthyServiceWithBadWindowsSeldomWarns) {
  ErrorSimulation sim(46);
  for (int burst : {1, 8}) {
    auto s = sim.shares({0.0005, burst, 0.02}, kRuns);
    EXPECT_GE(s.over, 0.15);  // what warned before
    EXPECT_LE(s.warn, 0.05);
    EXPECT_LE(s.fail, 0.003);
  }
  // The fail is as before (its rule did not change), within alpha / 2.
  auto s = sim.shares({0.0008, 1, 0.04}, kRuns);
  EXPECT_GE(s.over, 0.3);
  EXPECT_LE(s.warn, 0.05);
  EXPECT_LE(s.fail, 0.025);
}

// Three times the max still fails most runs (measured 84 % / 58 %: a few
// bursts of 16 are few events; knowing the burst size, a 2.5 % test could not
// do better than about 66 %), and independent errors keep their power
// (measured 100 % at 0.3 %, 99 % at 0.2 %; 66 % at 0.15 %, where Wilson's
// bound alone, which assumes independence, had 80 %). What is not a fail is
// a warn less often than before, when every run over the max warned: 0.15 %
// independent warns or fails 78 % of runs, not 100 %.
TEST(ErrorRateSimulation, ARateWellPastTheMaxStillFails) {
  ErrorSimulation sim(7);
  EXPECT_GE(sim.fail_rate(0.003, 8, kRuns), 0.75);
  EXPECT_GE(sim.fail_rate(0.003, 16, kRuns), 0.50);
  EXPECT_GE(sim.fail_rate(0.003, 1, kRuns), 0.99);
  EXPECT_GE(sim.fail_rate(0.002, 1, kRuns), 0.95);
  auto s = sim.shares({0.0015, 1}, kRuns);
  EXPECT_GE(s.fail, 0.55);
  EXPECT_GE(s.fail + s.warn, 0.70);
}

}  // namespace
}  // namespace perfgate
