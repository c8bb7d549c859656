// The verdict's error rates, simulated through the real decision code (judge()
// and next_step()) with fixed seeds: A/A runs must not fail more than the
// run's one-sided budget (2.5 % at 95 %) across every gated metric at once,
// with launches that differ and windows that drift; real losses must be caught.
// docs/statistics.md, "Error rates", quotes what these print.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "perfgate/core/sequential.h"
#include "perfgate/core/statistics.h"
#include "perfgate/core/verdict.h"

namespace perfgate {
namespace {

// The pull-request recipe's limits (ci/profiles/pr-paired.json).
ThresholdSet recipe_limits() {
  ThresholdSet limits;
  limits["throughput_rps"] = {5, 8, std::nullopt, std::nullopt};
  limits["latency_p99_ms"] = {15, 30, std::nullopt, std::nullopt};
  limits["service_cpu_us_per_request"] = {5, 8, std::nullopt, std::nullopt};
  return limits;
}

// How a simulated service behaves. Log-scale standard deviations. The noise is
// the one measured here (issue 39, finding 12): a pair's two windows run one
// after the other, each in its own minute of the machine's drift; a
// neighbour's steal burst slows one window now and then; a window's p99 rests
// on few responses beyond it, so it scatters with heavy tails. The service's
// CPU is read in nanoseconds at the windows' own edges (schedstat, samples
// aligned to the windows); `ticks` models the reading before, in 10 ms ticks
// at the nearest quarter-second sample, whose ties and scatter were measured.
struct World {
  double launch_sd = 0.04;      // a launch's own speed: ±7 % uniform has sd 4 %
  double window_sd = 0.015;     // one window's noise
  double p99_sd = 0.06;         // a window's p99 scatters more than its throughput
  double drift_rho = 0.8;       // AR(1) of the machine's speed from window to window
  double drift_sd = 0.03;       // its stationary deviation
  bool own_drift = true;        // false: a pair's two windows share one drift (cancels)
  double ticks = 0;             // > 0: CPU read in ticks, this many a window (ties); 0: ns
  double steal_chance = 0.02;   // a window hit by a steal burst...
  double steal_max = 0.20;      // ...is slowed by up to this much (log, uniform)
  bool thin_tail = true;        // p99 noise Student's t with 3 df: a few slow requests
  bool launch_per_pair = true;  // false: one launch a side for the whole run
  double cost_change = 0;       // the candidate's true change of CPU per request (log)
  double throughput_change = 0;
};

// A paired run, pair by pair: each pair's two windows alternate A B, B A (as
// measure_alternate_pair does), each side's launch speed drawn per pair (the
// launch as the unit) or once per run.
struct PairedRun {
  std::vector<double> tput_a, tput_b, p99_a, p99_b, cost_a, cost_b;
};

class Simulator {
 public:
  Simulator(const World& w, std::mt19937_64& rng) : w_(w), rng_(rng) {
    drift_ = w.drift_sd * unit_(rng_);
    launch_a_ = w.launch_sd * unit_(rng_);
    launch_b_ = w.launch_sd * unit_(rng_);
  }

  void add_pairs(PairedRun& r, int n) {
    for (int i = 0; i < n; ++i) add_pair(r);
  }

 private:
  void add_pair(PairedRun& r) {
    if (w_.launch_per_pair) {
      launch_a_ = w_.launch_sd * unit_(rng_);
      launch_b_ = w_.launch_sd * unit_(rng_);
    }
    step_drift();
    bool a_first = pairs_++ % 2 == 0;
    if (a_first) window(launch_a_, 0, 0, r.tput_a, r.p99_a, r.cost_a);
    if (w_.own_drift) step_drift();
    window(launch_b_, w_.throughput_change, w_.cost_change, r.tput_b, r.p99_b, r.cost_b);
    if (!a_first) {
      if (w_.own_drift) step_drift();
      window(launch_a_, 0, 0, r.tput_a, r.p99_a, r.cost_a);
    }
  }

  void step_drift() {
    double innovation = w_.drift_sd * std::sqrt(1 - w_.drift_rho * w_.drift_rho);
    drift_ = w_.drift_rho * drift_ + innovation * unit_(rng_);
  }

  // A slow launch or minute costs CPU per request and throughput alike.
  void window(double launch, double tput_shift, double cost_shift, std::vector<double>& tput,
              std::vector<double>& p99, std::vector<double>& cost) {
    double speed = launch + drift_;
    if (uniform_(rng_) < w_.steal_chance) speed += w_.steal_max * uniform_(rng_);
    tput.push_back(10000 * std::exp(-speed + tput_shift + w_.window_sd * unit_(rng_)));
    double cpu = 50 * std::exp(speed + cost_shift + w_.window_sd * unit_(rng_));
    // CPU read in ticks of 1 / ticks of the unchanged window's CPU, at a random
    // phase: the figure is a whole number of ticks.
    if (w_.ticks > 0) {
      double tick = 50.0 / w_.ticks;
      cpu = std::max(1.0, std::floor(cpu / tick + uniform_(rng_))) * tick;
    }
    cost.push_back(cpu);
    double tail = w_.thin_tail ? t3_(rng_) * std::sqrt(1.0 / 3) : unit_(rng_);
    p99.push_back(2 * std::exp(speed + w_.p99_sd * tail));
  }

  World w_;
  std::mt19937_64& rng_;
  std::normal_distribution<double> unit_{0, 1};
  std::uniform_real_distribution<double> uniform_{0, 1};
  std::student_t_distribution<double> t3_{3};
  double drift_ = 0, launch_a_ = 0, launch_b_ = 0;
  int pairs_ = 0;
};

PairedRun simulate(const World& w, int pairs, std::mt19937_64& rng) {
  PairedRun r;
  Simulator(w, rng).add_pairs(r, pairs);
  return r;
}

RunFigures figures(const std::vector<double>& tput, const std::vector<double>& p99,
                   const std::vector<double>& cost) {
  RunFigures f;
  f.values = {
      {"throughput_rps", tput}, {"latency_p99_ms", p99}, {"service_cpu_us_per_request", cost}};
  for (const auto& [key, values] : f.values) f.summary[key] = stats::median(values);
  return f;
}

Judgement judge_run(const PairedRun& r, const ThresholdSet& limits,
                    const DecisionSettings& settings) {
  RunFigures now = figures(r.tput_b, r.p99_b, r.cost_b);
  BaselineSample base;
  base.pooled = figures(r.tput_a, r.p99_a, r.cost_a);
  base.paired = true;
  return judge(now, &base, limits, {}, settings);
}

struct Rates {
  double fail = 0, pass = 0, warn = 0, inconclusive = 0, pairs = 0;

  void count(const Judgement& j, int taken) {
    fail += j.verdict == Verdict::kFail;
    pass += j.verdict == Verdict::kPass;
    warn += j.verdict == Verdict::kWarn;
    inconclusive += std::any_of(j.checks.begin(), j.checks.end(),
                                [](const MetricCheck& c) { return c.inconclusive; });
    pairs += taken;
  }
  Rates& per(int runs) {
    for (double* v : {&fail, &pass, &warn, &inconclusive, &pairs}) *v /= runs;
    return *this;
  }
};

// One look at `pairs` pairs at the run's 95 %.
Rates rates(const World& w, int pairs, int runs, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Rates out;
  for (int i = 0; i < runs; ++i)
    out.count(judge_run(simulate(w, pairs, rng), recipe_limits(), {95}), pairs);
  return out.per(runs);
}

// What a sequential look judges the fail limit on: its interval's near end at
// the look's estimate level, as the gate does since issue 46, or the estimate
// itself at every look, the rule before (for the comparison only).
enum class FailRule { kEstimateBound, kEstimateEveryLook };

struct Setup {
  FailRule rule = FailRule::kEstimateBound;
  int extra_family = 0;  // the recipe's cost phase: instructions_per_request holds a share
};

// A sequential run as the gate makes it (paired_gate.cc): judge at count, then
// while next_step() says undecided, two more pairs, each look at its boundary's
// level.
Rates sequential_rates(const World& w, const SequentialPlan& plan, int runs, std::uint64_t seed,
                       const Setup& setup = {}) {
  std::mt19937_64 rng(seed);
  Rates out;
  for (int i = 0; i < runs; ++i) {
    PairedRun r;
    Simulator sim(w, rng);
    sim.add_pairs(r, plan.count);
    int taken = plan.count;
    while (true) {
      DecisionSettings settings{plan.confidence};
      settings.look_level = [&plan, taken](double level) {
        return plan.look_confidence(level, taken);
      };
      settings.extra_family = setup.extra_family;
      if (setup.rule == FailRule::kEstimateBound)
        settings.estimate_level = plan.estimate_confidence(taken);
      auto j = judge_run(r, recipe_limits(), settings);
      if (!next_step(j, false, false, taken, plan).more) {
        out.count(j, taken);
        break;
      }
      sim.add_pairs(r, plan.next_batch(taken));
      taken += plan.next_batch(taken);
    }
  }
  return out.per(runs);
}

// The model's noise is the measured one: bench/README.md's paired A/A gates
// with launches ±7 % showed pair ratios scattering by 6.9-7.3 %. The kind model
// before (one drift for both windows of a pair, no ties, steal or heavy tails)
// put 5.7 % there and predicted 16 % A/A inconclusive where 58 % was measured.
// The pairs' log-ratios of CPU per request: their standard deviation, and
// whether two of them tie.
std::pair<double, bool> cost_ratio_scatter(const World& w, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto r = simulate(w, 4000, rng);
  std::vector<double> d;
  for (size_t i = 0; i < r.cost_a.size(); ++i) d.push_back(std::log(r.cost_b[i] / r.cost_a[i]));
  double mean = std::accumulate(d.begin(), d.end(), 0.0) / d.size(), ss = 0;
  for (double x : d) ss += (x - mean) * (x - mean);
  std::sort(d.begin(), d.end());
  return {std::sqrt(ss / (d.size() - 1)), std::adjacent_find(d.begin(), d.end()) != d.end()};
}

TEST(GateSimulationTest, ThePairRatiosScatterAsMeasured) {
  World ticks;  // the reading those gates had: 10 ms ticks, 20 a window
  ticks.ticks = 20;
  auto [sd, ties] = cost_ratio_scatter(ticks, 20261209);
  auto [ns_sd, ns_ties] = cost_ratio_scatter(World{}, 20261209);
  std::printf("pair log-ratio sd of CPU per request: %.4f in ticks (ties %s), %.4f in ns\n", sd,
              ties ? "yes" : "no", ns_sd);
  EXPECT_GE(sd, 0.065);
  EXPECT_LE(sd, 0.080);
  EXPECT_TRUE(ties);  // whole ticks: the signed-rank test sees ties and zeros
  EXPECT_LT(ns_sd, sd);
  EXPECT_FALSE(ns_ties);
}

TEST(GateSimulationTest, AaFalseFailsStayInOneBudgetAcrossEveryGatedMetric) {
  World w;  // launches ±7 %, realistic windows, three gated metrics
  auto aa = rates(w, 16, 2000, 20261202);
  std::printf("A/A, 16 pairs, one look: fail %.4f pass %.4f warn %.4f inconclusive %.4f\n", aa.fail,
              aa.pass, aa.warn, aa.inconclusive);
  EXPECT_LE(aa.fail, 0.01);
  // Warns have a noise model too: an A/A run warns only past the warn limit and
  // clear of zero at the run's level, or when it is inconclusive.
  EXPECT_LE(aa.warn - aa.inconclusive, 0.05);
}

// What the pull-request gate must do inside its time budget (issue 39, "Done
// when"): a paired gate of 0.5 s windows and 0.25 s warm-ups took 13-15 s for
// 7 pairs here (bench/README.md), about 2 s a pair, so 90 s is 44 pairs and 45 s
// is 22. The plan: a first look at 12 pairs, then 2 more while undecided.
SequentialPlan budget_plan(int max_pairs) {
  SequentialPlan plan{12, max_pairs, 2, kPairedSpending};
  plan.futility = true;
  return plan;
}

TEST(GateSimulationTest, WithinNinetySecondsUnchangedCodePassesAndNeverFails) {
  auto aa = sequential_rates(World{}, budget_plan(44), 1000, 20261211);
  std::printf(
      "A/A, launches sd 4%%, 12..44 pairs: fail %.4f pass %.4f inconclusive %.4f, mean pairs "
      "%.1f\n",
      aa.fail, aa.pass, aa.inconclusive, aa.pairs);
  EXPECT_LE(aa.fail, 0.01);
  EXPECT_GE(aa.pass, 0.95);
}

TEST(GateSimulationTest, WithinNinetySecondsAChangeAtALimitGetsTheOtherAnswerRarely) {
  World at_warn;
  at_warn.cost_change = std::log(1.05);  // exactly the warn limit
  auto w = sequential_rates(at_warn, budget_plan(44), 1000, 20261212);
  World at_fail;
  at_fail.cost_change = std::log(1.08);  // exactly the fail limit
  auto f = sequential_rates(at_fail, budget_plan(44), 1000, 20261213);
  std::printf(
      "+5%% CPU per request (W), 12..44 pairs: fail %.4f pass %.4f; +8%% (F): fail %.4f pass "
      "%.4f\n",
      w.fail, w.pass, f.fail, f.pass);
  EXPECT_LE(w.fail, 0.025);
  EXPECT_LE(f.pass, 0.025);
}

TEST(GateSimulationTest, WithinTheBudgetATenPercentCostFailsAndNeverPasses) {
  World w;
  w.cost_change = std::log(1.10);
  auto loud = sequential_rates(w, budget_plan(44), 1000, 20261214);
  w.launch_sd = 0.01;
  auto quiet = sequential_rates(w, budget_plan(22), 1000, 20261215);
  w.ticks = 20;  // the same with the CPU read as before, in ticks
  auto quiet_ticks = sequential_rates(w, budget_plan(22), 1000, 20261215);
  std::printf(
      "+10%% CPU per request: launches sd 4%%, 12..44 pairs: fail %.4f pass %.4f mean pairs "
      "%.1f; sd 1%%, 12..22 pairs: fail %.4f pass %.4f mean pairs %.1f (read in ticks: fail "
      "%.4f)\n",
      loud.fail, loud.pass, loud.pairs, quiet.fail, quiet.pass, quiet.pairs, quiet_ticks.fail);
  EXPECT_GE(loud.fail, 0.65);
  // "Never passes": a pass needs the interval's regressing end within +8 %, 2
  // points short of the truth; over 9,000 runs of three other seeds 5 passed
  // (0.06 %), with the CPU read in ticks as well: rare, not impossible.
  EXPECT_LE(loud.pass, 0.002);
  EXPECT_EQ(quiet.pass, 0);
  // Issue 39: 95 % within 45 s (22 pairs) on quiet launches. In 10 ms ticks
  // the windows' own scatter kept it near 82 %; read in nanoseconds at the
  // windows' edges, the launches and the machine's drift are what is left.
  EXPECT_GE(quiet.fail, 0.95);
  EXPECT_GT(quiet.fail, quiet_ticks.fail);
}

// Issue 46, item 3: "the estimate past F" at every look gave a change below
// the fail limit up to 17 chances to cross it. The pull-request recipe's plan
// (ci/profiles/pr-paired.json: 12 pairs, 2 more while undecided, to 44; its
// cost phase's instructions_per_request holds a fourth share of the budget),
// CPU per request changed by `change` against its fail limit F = 8 %.
Rates recipe_rates(double change, double launch_sd, int runs, std::uint64_t seed,
                   FailRule rule = FailRule::kEstimateBound, int max_count = 44) {
  World w;
  w.launch_sd = launch_sd;
  w.cost_change = std::log1p(change);
  SequentialPlan plan = budget_plan(max_count);
  if (max_count <= 12) plan = SequentialPlan{max_count, max_count, 2, kPairedSpending};
  return sequential_rates(w, plan, runs, seed, {rule, 1});
}

// One look at a fixed count: the rule's own rate, with nothing to spend it over.
Rates one_look_rates(double change, double launch_sd, int pairs, int runs, std::uint64_t seed) {
  World w;
  w.launch_sd = launch_sd;
  w.cost_change = std::log1p(change);
  return sequential_rates(w, SequentialPlan{pairs, pairs, 2, kPairedSpending}, runs, seed, {{}, 1});
}

void print_rates(const char* what, const Rates& r) {
  std::printf("%s: fail %.4f pass %.4f inconclusive %.4f mean pairs %.1f\n", what, r.fail, r.pass,
              r.inconclusive, r.pairs);
}

// The figures fit quiet launches best (one look at 12 pairs failed +7 %
// 8.2 % of the time there, 9.7 % here; 12..44 pairs 23.8 %, 21.4 % here).
TEST(GateSimulationTest, SequentialRunsFailAChangeBelowTheFailLimitRarely) {
  auto now = recipe_rates(0.07, 0.01, 600, 20261220);
  auto before = recipe_rates(0.07, 0.01, 600, 20261220, FailRule::kEstimateEveryLook);
  print_rates("+7% CPU per request (7/8 of F), quiet launches, 12..44 pairs", now);
  print_rates("  the same, the estimate judged against F at every look (before)", before);
  EXPECT_LE(now.fail, 0.10);
  EXPECT_GE(before.fail, 0.15);  // what issue 46 measured
}

TEST(GateSimulationTest, SequentialRunsFailAChangeBelowTheFailLimitNoMoreThanOneLookAtMaxCount) {
  // Launches sd 4 %: the runs that +7 % leaves undecided go on to about 40
  // pairs, where 7/8 of F lies within one standard error of F. No rule that
  // fails a change at F half the time can fail this one much less: one look at
  // 44 pairs, which spends nothing over looks, fails it more often.
  auto loud = recipe_rates(0.07, 0.04, 600, 20261221);
  auto fixed = one_look_rates(0.07, 0.04, 44, 600, 20261221);
  print_rates("+7% CPU per request, launches sd 4%, 12..44 pairs", loud);
  print_rates("  the same, one look at 44 pairs", fixed);
  EXPECT_LE(loud.fail, fixed.fail);
  EXPECT_LE(loud.fail, 0.15);
}

TEST(GateSimulationTest, SequentialRunsFailAChangeAtTheFailLimitAtMostHalfTheTime) {
  auto quiet = recipe_rates(0.08, 0.01, 1000, 20261222);
  auto loud = recipe_rates(0.08, 0.04, 600, 20261223);
  print_rates("+8% CPU per request (exactly F), quiet launches, 12..44 pairs", quiet);
  print_rates("+8% CPU per request (exactly F), launches sd 4%, 12..44 pairs", loud);
  EXPECT_LE(quiet.fail, 0.50);
  EXPECT_LE(loud.fail, 0.50);
  EXPECT_LE(quiet.pass, 0.025);  // the pass side is as it was
  EXPECT_LE(loud.pass, 0.025);
}

TEST(GateSimulationTest, SequentialRunsStillCatchALargeChange) {
  auto aa = recipe_rates(0, 0.04, 1000, 20261224);
  print_rates("A/A, launches sd 4%, 12..44 pairs", aa);
  EXPECT_LE(aa.fail, 0.025);  // the boundary's alpha over every gated metric
  auto ten = recipe_rates(0.10, 0.04, 600, 20261225);
  auto ten_quiet = recipe_rates(0.10, 0.01, 600, 20261226, FailRule::kEstimateBound, 22);
  auto twelve = recipe_rates(0.12, 0.04, 600, 20261227);
  print_rates("+10% CPU per request, launches sd 4%, 12..44 pairs", ten);
  print_rates("+10% CPU per request, quiet launches, 12..22 pairs", ten_quiet);
  print_rates("+12% CPU per request, launches sd 4%, 12..44 pairs", twelve);
  // docs/statistics.md ("A gate in a time budget") asserts these floors for
  // +10 %; the fail limit's bound costs a point or two of them.
  EXPECT_GE(ten.fail, 0.85);
  EXPECT_GE(ten_quiet.fail, 0.95);
  EXPECT_GE(twelve.fail, 0.97);
}

// The table of docs/statistics.md, "Sequential runs": each change under both
// rules and at one look (too slow for every test run: disabled, run with
// --gtest_also_run_disabled_tests).
TEST(GateSimulationTest, DISABLED_SequentialFailLimitTable) {
  for (double launch_sd : {0.01, 0.04}) {
    for (double change : {0.05, 0.07, 0.075, 0.08, 0.10}) {
      auto seed = static_cast<std::uint64_t>(20261230 + change * 1000 + launch_sd * 100);
      auto once = one_look_rates(change, launch_sd, 12, 500, seed);
      auto once44 = one_look_rates(change, launch_sd, 44, 500, seed);
      auto before = recipe_rates(change, launch_sd, 500, seed, FailRule::kEstimateEveryLook);
      auto now = recipe_rates(change, launch_sd, 500, seed);
      std::printf(
          "launch sd %.0f%% %+5.1f%%: one look 12 pairs %5.1f%%, 44 pairs %5.1f%%; 12..44 "
          "before %5.1f%% (%.1f pairs), now %5.1f%% (%.1f pairs, pass %.1f%%)\n",
          launch_sd * 100, change * 100, once.fail * 100, once44.fail * 100, before.fail * 100,
          before.pairs, now.fail * 100, now.pairs, now.pass * 100);
    }
  }
}

TEST(GateSimulationTest, OneLaunchPerRunMakesPairsAgreeByLuckTheSimulationSeesIt) {
  // The design the launch-per-pair replaced: every pair of a run shares its two
  // launches, so one lucky draw moves every pair the same way. The rule cannot
  // tell, which is why paired mode restarts its services per pair.
  World w;
  w.launch_per_pair = false;
  auto shared = rates(w, 16, 2000, 20261203);
  std::printf("A/A, 16 pairs, one launch per run: fail %.4f\n", shared.fail);
  EXPECT_GT(shared.fail, 0.025);
}

TEST(GateSimulationTest, CatchesACostlierService) {
  World w;
  w.cost_change = std::log(1.15);
  auto caught = rates(w, 16, 500, 20261204);
  std::printf("+15%% CPU per request, 16 pairs: fail %.4f warn %.4f\n", caught.fail, caught.warn);
  EXPECT_GE(caught.fail, 0.6);
  w.launch_sd = 0.01;  // a quieter service: a 10 % cost is caught almost always
  w.cost_change = std::log(1.10);
  auto quiet = rates(w, 16, 500, 20261205);
  std::printf("+10%% CPU per request, quiet launches, 16 pairs: fail %.4f\n", quiet.fail);
  // 99.4 % in the kind model, which had no ticks, steal or drift within a pair.
  EXPECT_GE(quiet.fail, 0.7);
}

TEST(GateSimulationTest, AChangeAtTheWarnLimitRarelyFails) {
  // The threshold hypothesis: a fail needs the interval wholly past the warn
  // limit, so a true change at the warn limit fails at most alpha / 2.
  World w;
  w.launch_sd = 0.01;
  w.throughput_change = std::log(0.95);  // -5 %: the warn limit
  auto at_warn = rates(w, 16, 2000, 20261206);
  std::printf("-5%% throughput (the warn limit), 16 pairs: fail %.4f\n", at_warn.fail);
  EXPECT_LE(at_warn.fail, 0.025);
}

TEST(GateSimulationTest, TooFewPairsForTheLimitsIsInconclusiveNeverAPass) {
  // Loud launches, few pairs: the run cannot tell an 8 % change from none.
  World w;
  w.launch_sd = 0.08;
  auto few = rates(w, 8, 300, 20261207);
  std::printf("A/A, 8 pairs, launches ±14 %%: fail %.4f inconclusive %.4f\n", few.fail,
              few.inconclusive);
  EXPECT_GE(few.inconclusive, 0.8);
  EXPECT_GE(few.warn + few.fail, 0.8);  // such runs warn: hardly ever a pass
  EXPECT_LE(few.fail, 0.025);
}

// The clamp case of issue 26: count 6, max_count 16. The first look judges at
// 99.17 % per look, which six pairs cannot reach (p >= 2/64); that look must not
// stop the run as decided, and a -10 % loss must end as a fail once enough
// pairs have been measured.
TEST(GateSimulationTest, ASequentialLookThatCannotReachItsLevelExtends) {
  SequentialPlan plan{6, 16, 2};
  ThresholdSet limits;
  limits["throughput_rps"] = {3, 5, std::nullopt, std::nullopt};
  std::mt19937_64 rng(20261208);
  std::normal_distribution<double> noise(0, 0.02);
  int fails = 0, runs = 200;
  for (int s = 0; s < runs; ++s) {
    std::vector<double> a, b;
    auto add = [&](int n) {
      for (int i = 0; i < n; ++i) {
        a.push_back(1000 * std::exp(noise(rng)));
        b.push_back(900 * std::exp(noise(rng)));
      }
    };
    add(plan.count);
    int taken = plan.count;
    while (true) {
      RunFigures now{{{"throughput_rps", stats::median(b)}}, {{"throughput_rps", b}}};
      BaselineSample base;
      base.pooled = {{{"throughput_rps", stats::median(a)}}, {{"throughput_rps", a}}};
      base.paired = true;
      auto j = judge(now, &base, limits, {}, {plan.look_confidence(95)});
      if (taken == plan.count) {
        ASSERT_FALSE(j.checks.front().test->reaches_level);
        ASSERT_NE(j.verdict, Verdict::kFail);
      }
      auto step = next_step(j, false, false, taken, plan);
      if (taken == plan.count) {
        ASSERT_TRUE(step.more) << "a look that cannot reach its level";
      }
      if (!step.more) {
        fails += j.verdict == Verdict::kFail;
        break;
      }
      add(plan.next_batch(taken));
      taken += plan.next_batch(taken);
    }
  }
  std::printf("-10%% at 2%% noise, count 6 max_count 16: fail %d of %d\n", fails, runs);
  EXPECT_GE(fails, runs * 95 / 100);
}

// The power table of docs/statistics.md, printed by bench/power_table.sh (too
// slow for every test run: disabled, run with --gtest_also_run_disabled_tests).
TEST(GateSimulationTest, DISABLED_PowerTable) {
  // 32 and 48: what it takes to catch +10 % 19 times in 20 when launches differ.
  const int kPairCounts[] = {8, 12, 16, 24, 32, 48};
  struct Loss {
    const char* name;
    double tput, cost;
  };
  const Loss losses[] = {{"A/A", 0, 0},
                         {"-5% throughput", std::log(0.95), 0},
                         {"-10% throughput", std::log(0.90), 0},
                         {"+5% CPU/request", 0, std::log(1.05)},
                         {"+10% CPU/request", 0, std::log(1.10)}};
  for (double launch_sd : {0.01, 0.04}) {
    std::printf("\nlaunch sd %.0f%% (fail rate; in parentheses, inconclusive)\n", launch_sd * 100);
    std::printf("%-18s", "pairs");
    for (int pairs : kPairCounts) std::printf("%16d", pairs);
    std::printf("\n");
    for (const auto& loss : losses) {
      std::printf("%-18s", loss.name);
      for (int pairs : kPairCounts) {
        World w;
        w.launch_sd = launch_sd;
        w.throughput_change = loss.tput;
        w.cost_change = loss.cost;
        auto r = rates(w, pairs, 1000, 20261210 + pairs);
        char cell[32];
        std::snprintf(cell, sizeof cell, "%.1f%% (%.0f%%)", r.fail * 100, r.inconclusive * 100);
        std::printf("%16s", cell);
      }
      std::printf("\n");
    }
  }
}

}  // namespace
}  // namespace perfgate
