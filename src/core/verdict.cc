#include "perfgate/core/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "perfgate/core/error_rate.h"
#include "perfgate/core/statistics.h"

namespace perfgate {
namespace {

// printf's fixed form without a "-0.0": a change that rounds to zero has no sign.
std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string text = buf;
  if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

// A limit as the user wrote it: 25 -> "25", 0.1 -> "0.1".
std::string compact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A level as a reader takes it: 95 -> "95", 98.3333 -> "98.33".
std::string level_text(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", pct);
  return buf;
}

int decimals_for(std::string_view unit) {
  return unit == "req/s" ? 1 : 3;
}

std::string with_unit(double v, std::string_view unit) {
  return fixed(v, decimals_for(unit)) + (unit == "%" ? "%" : " " + std::string(unit));
}

std::string signed_pct(double pct) {
  if (std::fabs(pct) > 99999) return pct > 0 ? ">+99999%" : "<-99999%";  // "huge", no more
  return (pct >= 0 ? "+" : "") + fixed(pct, 1) + "%";
}

// Change in the regressing direction: positive means worse.
double regression_pct(const MetricDef& def, double change_pct) {
  return def.better == Better::kHigher ? -change_pct : change_pct;
}

// The limit as the user reads it: "-5%" for throughput, "+20%" for latency.
std::string limit_text(const MetricDef& def, double limit_pct) {
  return (def.better == Better::kHigher ? "-" : "+") + compact(limit_pct) + "%";
}

// Why an error rate over its max is not surely past it: the noise of its
// requests, widened by the bursts its windows show. `low` states the bounds.
std::string noise_text(const ErrorRateBound& b, const std::string& low) {
  if (b.dispersion < 1.05) return " (" + low + ")";
  // Twice a binomial's variance is bursts; a little more may be chance.
  std::string scatter = b.dispersion >= 2 ? ": the errors came in bursts"
                                          : ": the windows' errors scatter more than "
                                            "independent ones";
  return scatter + " (dispersion x" + fixed(b.dispersion, 1) + " over " +
         std::to_string(b.windows) + " windows; " + low + ")";
}

std::string bound_text(const ErrorRateBound& b, double level) {
  return fixed(b.lower_pct, 3) + "% at " + level_text(level * 100) + "%";
}

// What failed, by kind, as the run counted it: "; failed: 4xx x 12000, timeout x 30".
std::string failed_text(const RunFigures& now) {
  std::string statuses = now.statuses.failed_text();
  std::string sockets = now.socket_errors.kinds_text();
  if (statuses.empty() && sockets.empty()) return "";
  return "; failed: " + statuses + (statuses.empty() || sockets.empty() ? "" : ", ") + sockets;
}

// An error rate over its max is judged on its lower bound (error_rate.h), which
// counts a burst of 16 failed requests as one event, not 16 independent ones.
// Surely past the max (the bound at 1 - alpha/2) it fails, so that a true rate
// at the max fails at most alpha / 2 of runs. Plausibly past it (the bound at
// 1 - alpha) it warns: a rate at the max warns or fails at most about alpha of
// runs, and a healthy service with a few bad windows seldom (a warn on the
// point rate alone warned a fifth of runs at half the max; issue 46). Over the max
// within the noise it passes, saying so. A fail whose answered statuses alone
// are surely past the max stands on a saturated run (apply_saturation).
void check_error_rate(const RunFigures& now, double level_pct, MetricCheck& c) {
  double alpha = 1 - level_pct / 100, max = *c.thresholds.max;
  auto sure = error_rate_bound(now, 1 - alpha / 2);
  if (sure.lower_pct > max) {
    auto answered = error_rate_bound(now, 1 - alpha / 2, Failures::kAnsweredStatus);
    c.fails_when_saturated = answered.lower_pct > max;
    c.message += failed_text(now);
    if (c.fails_when_saturated)
      c.message += "; the statuses the service answered are past it alone (lower bound " +
                   bound_text(answered, 1 - alpha / 2) + ")";
    return;
  }
  auto plausible = error_rate_bound(now, 1 - alpha);
  std::string low = "lower bound " + bound_text(plausible, 1 - alpha);
  if (plausible.lower_pct > max) {
    c.verdict = Verdict::kWarn;
    c.message += ", plausibly but not surely past it";
    low += ", " + bound_text(sure, 1 - alpha / 2);
  } else {
    c.verdict = Verdict::kPass;
    c.message += " but within the noise of " + std::to_string(now.attempts) + " requests";
  }
  c.message += noise_text(plausible, low) + failed_text(now);
}

// An absolute ceiling or floor.
void check_absolute(const MetricDef& def, const RunFigures& now, double level_pct, MetricCheck& c) {
  const auto& t = c.thresholds;
  if (t.max && c.value > *t.max) {
    c.verdict = Verdict::kFail;
    c.message = std::string(def.key) + " " + with_unit(c.value, def.unit) + " is above the max " +
                with_unit(*t.max, def.unit);
    if (def.key == "error_rate_pct" && now.attempts > 0) check_error_rate(now, level_pct, c);
  } else if (t.min && c.value < *t.min) {
    c.verdict = Verdict::kFail;
    c.message = std::string(def.key) + " " + with_unit(c.value, def.unit) + " is below the min " +
                with_unit(*t.min, def.unit);
  }
}

std::string p_text(double p) {
  if (p < 0.001) return "p<0.001";
  char buf[32];
  std::snprintf(buf, sizeof buf, "p=%.3f", p);
  return buf;
}

// "(-10.0%, 95% CI -12.1%..-8.0%, p=0.001)": the change and how sure it is.
std::string change_text(const MetricCheck& c, double confidence) {
  std::string text = "(" + signed_pct(*judged_change_pct(c));
  if (c.test && std::isfinite(c.test->ci_low_pct))  // no interval without a test of runs
    text += ", " + level_text(confidence) + "% CI " + signed_pct(c.test->ci_low_pct) + ".." +
            signed_pct(c.test->ci_high_pct) + ", " + p_text(c.test->p_value);
  return text + ")";
}

// The figures of the window's period's runs that are no baseline, within the
// warn limit of the level (log figures' mean): they count toward the spread.
// Farther, a run is another level, not noise (a regression that persists must
// keep failing, not widen its own interval); a run that regressed on another
// metric lends this one its figure.
std::vector<double> spread_runs(const BaselineSample& base, const std::string& key,
                                const std::vector<double>& runs, std::optional<double> limit_pct) {
  auto extra = base.spread_figures.find(key);
  if (!limit_pct || extra == base.spread_figures.end()) return {};
  double mean = 0;
  for (double v : runs) mean += std::log(v) / static_cast<double>(runs.size());
  double reach = std::log1p(*limit_pct / 100);
  std::vector<double> out;
  for (double v : extra->second)
    if (v > 0 && std::fabs(std::log(v) - mean) <= reach) out.push_back(v);
  return out;
}

// The run-level test, when there is one. A young window (fewer than
// kPooledNoiseBelowRuns runs, or of fewer days: runs of one day share its luck)
// takes the spread of whole runs from the noise pooled over earlier runs when
// that holds groups of kPoolMinDays days and rests on more degrees of freedom
// than the window's own k - 1, else from the metric's stated prior, each refined
// by the window's own spread; a window of five runs of five days, or a metric
// without a prior and three runs or more, judges with its own spread.
std::optional<ChangeEstimate> run_level_change(const BaselineSample& base, const std::string& key,
                                               double value, double level,
                                               std::optional<double> limit_pct) {
  auto runs = base.run_figures.find(key);
  if (runs == base.run_figures.end() || runs->second.empty()) return std::nullopt;
  int k = static_cast<int>(runs->second.size());
  auto day_count = base.run_days.find(key);
  int days = day_count == base.run_days.end() ? k : std::clamp(day_count->second, 1, k);
  bool positive = value > 0 && std::all_of(runs->second.begin(), runs->second.end(),
                                           [](double v) { return v > 0; });
  std::vector<RunNoise> noises;
  auto noise = base.run_noise.find(key);
  if (noise != base.run_noise.end() && noise->second.days >= kPoolMinDays &&
      noise->second.df > k - 1)
    noises.push_back(noise->second);
  if (auto prior = run_noise_prior(key)) noises.push_back(*prior);
  auto scattered =
      positive ? spread_runs(base, key, runs->second, limit_pct) : std::vector<double>{};
  bool young = k < kPooledNoiseBelowRuns || days < kPooledNoiseBelowRuns;
  if (!young) noises.clear();
  if (positive && (!noises.empty() || k + scattered.size() >= 3))
    return estimate_run_change(value, runs->second, level, noises, days, scattered);
  if (k >= 3) return estimate_run_change(value, runs->second, level);
  return std::nullopt;
}

// One or two baseline runs and no pool of kPoolMinDays days: nothing tells how
// far whole runs scatter, and the windows of one launch share its luck, so they
// are no test (issue 39, finding 6). No interval; the limits cannot be judged.
ChangeTest no_run_level_test(const BaselineSample& base, const std::string& key,
                             const std::vector<double>& runs, double value, double confidence) {
  ChangeTest t;
  t.ci_low_pct = t.ci_high_pct = std::nan("");
  t.reaches_level = false;
  t.confidence_pct = confidence;
  t.unit = "runs";
  // The change as a run-level test would state it: against the runs' geometric mean.
  bool logs = value > 0 && std::all_of(runs.begin(), runs.end(), [](double v) { return v > 0; });
  double mean = 0;
  for (double v : runs) mean += (logs ? std::log(v) : v) / static_cast<double>(runs.size());
  if (logs) t.estimate_pct = std::expm1(std::log(value) - mean) * 100;
  if (!logs && mean != 0) t.estimate_pct = (value - mean) / std::fabs(mean) * 100;
  auto noise = base.run_noise.find(key);
  int days = noise == base.run_noise.end() ? 0 : noise->second.days;
  t.method =
      "no run-level test: " + std::to_string(runs.size()) + " baseline run" +
      (runs.size() == 1 ? "" : "s") + " and " +
      (days == 0 ? std::string("no noise pool")
                 : "a noise pool of runs of " + std::to_string(days) + " day" +
                       (days == 1 ? "" : "s") + " (" + std::to_string(kPoolMinDays) + " needed)");
  return t;
}

ChangeTest change_test(const ChangeEstimate& e, double confidence, std::string unit) {
  ChangeTest t;
  t.ci_low_pct = e.ci_low_pct;
  t.ci_high_pct = e.ci_high_pct;
  t.p_value = e.p_value;
  t.reaches_level = e.reaches_level;
  t.significant = e.reaches_level && e.p_value < 1 - confidence / 100;
  t.n_now = e.n_now;
  t.n_base = e.n_base;
  t.method = e.method;
  t.estimate_pct = e.change_pct;
  t.confidence_pct = confidence;
  t.unit = std::move(unit);
  t.spread = e.spread;
  if (e.reaches_level)
    t.detectable_pct = (e.ci_high_pct - e.ci_low_pct) / 2 *
                       stats::power_multiplier(confidence / 100, kDetectionPower / 100, e.df);
  return t;
}

// The test of a change, at the launch as its unit where it can be. Paired: the
// signed-rank test on the pairs' log-ratios. Stored: the run-level t test of this
// run's figure against the baseline runs' figures (run_level_change) when there
// is one, since iterations of one run share its luck and are no independent
// evidence; with one or two baseline runs and no pool, no test at all.
std::optional<ChangeTest> test_change(const std::vector<double>& now, const BaselineSample& base,
                                      const std::string& key, double value, double confidence,
                                      std::optional<double> limit_pct = std::nullopt) {
  auto pooled = base.pooled.values.find(key);
  if (now.empty() || pooled == base.pooled.values.end() || pooled->second.empty())
    return std::nullopt;
  double level = confidence / 100;
  try {
    if (base.paired)
      return change_test(estimate_paired_change(now, pooled->second, level), confidence,
                         base.paired_unit);
    auto runs = base.run_figures.find(key);
    int k = runs == base.run_figures.end() ? 0 : static_cast<int>(runs->second.size());
    std::optional<ChangeTest> t;
    if (auto run = run_level_change(base, key, value, level, limit_pct)) {
      t = change_test(*run, confidence, "runs");
      t->n_now = static_cast<int>(now.size());
      t->n_base = static_cast<int>(pooled->second.size());
    } else if (k == 1 || k == 2) {
      t = no_run_level_test(base, key, runs->second, value, confidence);
      t->n_now = static_cast<int>(now.size());
      t->n_base = static_cast<int>(pooled->second.size());
    } else {
      t = change_test(estimate_change(now, pooled->second, level), confidence, "iterations");
    }
    t->baseline_runs = std::max(k, 1);
    // A shift interval of a positive figure can reach past -100 %, which no such
    // figure can fall by: the bound says "down to nothing" and no more.
    bool positive = value > 0 && std::all_of(pooled->second.begin(), pooled->second.end(),
                                             [](double v) { return v > 0; });
    if (positive) t->ci_low_pct = std::max(t->ci_low_pct, -100.0);
    // One iteration has no spread of its own: its interval says nothing of the
    // change it could detect (count 1 printed "0.0%"), nor does an interval
    // of no width.
    if (t->detectable_pct &&
        (!(*t->detectable_pct > 0) || (t->unit == "iterations" && now.size() < 2)))
      t->detectable_pct.reset();
    return t;
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // a zero baseline: no relative change to test
  }
}

// The limit a pass must be within, and what a fail must be surely past: the
// fail limit and the warn limit (zero without one); a metric with a warn limit
// only is held to it as its fail.
struct Limits {
  double pass = 0;   // F: the interval's regressing end within it passes
  double floor = 0;  // W: a fail's interval lies wholly past it
};

std::optional<Limits> limits_of(const Thresholds& t) {
  if (t.fail_pct) return Limits{*t.fail_pct, t.warn_pct.value_or(0)};
  if (t.warn_pct) return Limits{*t.warn_pct, 0};
  return std::nullopt;
}

// How far below the estimate a sequential look's fail bound lies (half its
// interval at the estimate level); 0 at one look, which judges the estimate.
double estimate_half(const ChangeTest& t) {
  if (!t.estimate_bound) return 0;
  return (t.estimate_bound->ci_high_pct - t.estimate_bound->ci_low_pct) / 2;
}

// The change this run fails with kDetectionPower: its estimate (a sequential
// look: its bound at the estimate level, estimate_half below it) must be past F
// and its interval's near end past W, so a true change d fails with 80 % power
// when d - z80 se >= max(F, W + half-width). The detectable change (half-width
// times 1 + z80 / z) gives z80 se without the test's degrees of freedom.
double failable_pct(const ChangeTest& t, const Limits& l) {
  double half = (t.ci_high_pct - t.ci_low_pct) / 2;
  return std::max(l.pass + estimate_half(t), l.floor + half) + (*t.detectable_pct - half);
}

// Why a metric is undecided, and what would decide: the change it would fail,
// and the count at which its interval at 80 % power fits between W and F (a
// change at W then passes, and one just past F fails, each with 80 % power;
// the interval narrows with the square root of the count). For whole runs, a
// quieter runner or paired mode (a run's own noise does not average away).
// What decides in minutes when more of the same would take hours: "about 4321
// pairs would decide" was advice nobody could follow (issue 48, item 6).
std::string cheaper_step(std::string_view metric) {
  std::string quieter = "a quieter machine narrows it (perfgate doctor says what is busy)";
  if (metric == "throughput_rps" || metric == "service_cpu_us_per_request" ||
      metric == "requests_per_service_cpu_s")
    return "the counted cost (cost.instrument, docs/cost.md) decides the service's work per "
           "request beside any neighbour, in a minute for a native service; " +
           quieter;
  if (metric.starts_with("latency_"))
    return "longer windows (load.duration) give each window's tail more responses; " + quieter;
  return quieter;
}

std::string why_inconclusive(const ChangeTest& t, const Limits& l, std::string_view metric) {
  std::string level = level_text(t.confidence_pct) + "%";
  if (!t.detectable_pct && t.unit == "runs")
    return t.method +
           ": the windows of one launch share its luck and say nothing of how far whole runs "
           "scatter; `perfgate calibrate` on " +
           std::to_string(kPoolMinDays) +
           " days (its runs fill the pool) or paired mode would decide";
  if (!t.detectable_pct) {
    std::string text =
        std::to_string(t.n_now) + " " + t.unit + " cannot reach " + level + " at all";
    if (t.unit != "pairs" && t.unit != "blocks") return text + "; more " + t.unit + " would";
    return text + "; at least " + std::to_string(min_pairs_to_reach(t.confidence_pct)) + " kept " +
           t.unit + " would";
  }
  double failable = failable_pct(t, l);
  std::string size = failable > 99999 ? ">99999" : fixed(failable, 1);
  std::string text = "it would fail only a change of " + size + "% (" + compact(kDetectionPower) +
                     "% power at " + level + ")";
  if (t.unit == "runs" && t.spread == "prior")
    return text +
           ": judged with the stated prior of run-to-run noise (this store has no noise "
           "pool of " +
           std::to_string(kPoolMinDays) +
           " days yet); the next runs narrow it as they join the baseline, `perfgate "
           "calibrate` on " +
           std::to_string(kPoolMinDays) + " days replaces it, and paired mode decides now";
  if (t.unit == "runs")
    return text + ": the run-to-run noise is too large for this limit with " +
           std::to_string(t.baseline_runs) +
           " baseline runs; paired mode or a quieter runner would decide";
  double ratio = (*t.detectable_pct + estimate_half(t)) / (l.pass - l.floor);
  double needed = std::ceil(t.n_now * ratio * ratio);
  // Past a million no count is a plan: the noise itself is the problem.
  std::string count = needed > 1e6 ? "more than a million"
                                   : "about " + std::to_string(static_cast<long long>(needed));
  text +=
      "; " + count + " " + t.unit + " would decide (this run has " + std::to_string(t.n_now) + ")";
  // Four times the run, or past what a budgeted run measures: no plan.
  if (needed > std::max(4.0 * t.n_now, 60.0))
    text += ", more than a run takes: " + cheaper_step(metric);
  return text;
}

// A sequential look judges the fail limit on its interval's near end at the
// look's estimate level, in the regressing direction: the looks together then
// fail a change at the limit at most half the time, as one look's estimate
// does (docs/statistics.md, "Sequential runs"). nullopt at one look.
std::optional<double> fail_side(const MetricDef& def, const ChangeTest& t) {
  if (!t.estimate_bound) return std::nullopt;
  return def.better == Better::kHigher ? -t.estimate_bound->ci_high_pct
                                       : t.estimate_bound->ci_low_pct;
}

// "; past it at the sequential look's estimate level (61.2% CI +8.4%..+9.9%)".
std::string bound_text(const ChangeTest& t) {
  if (!t.estimate_bound) return "";
  const auto& b = *t.estimate_bound;
  return "; past it at the sequential look's estimate level (" + level_text(b.confidence_pct) +
         "% CI " + signed_pct(b.ci_low_pct) + ".." + signed_pct(b.ci_high_pct) + ")";
}

// Why an estimate past the limit did not fail a sequential look: the near end
// of its interval at the look's estimate level is not past it.
std::string unfailed_text(const ChangeTest& t, double worse, double past, double limit) {
  if (!t.estimate_bound || worse <= limit || past > limit) return "";
  return "; the estimate is past the limit but not the near end of its " +
         level_text(t.estimate_bound->confidence_pct) +
         "% interval, which a sequential look's fail needs (one look's 50 % chance at the "
         "limit, spent over the looks)";
}

// Three answers, each earned. In the regressing direction, with the estimate e
// and the interval lo..hi at the look's level: fail when e (a sequential look:
// its bound at the look's estimate level, fail_side) is past F and lo past W;
// a warn when e is past W and lo past zero with hi within F (a change, surely
// inside the fail limit; with a warn limit only, surely past it); pass only
// when hi is within F (equivalence: a change at F passes at most alpha / 2 of
// the time); anything else is inconclusive.
void check_relative(const MetricDef& def, MetricCheck& c) {
  if (!c.change_pct || c.verdict == Verdict::kFail) return;
  const auto& t = c.thresholds;
  auto limits = limits_of(t);
  if (!limits) return;
  double confidence = c.test ? c.test->confidence_pct : 95;
  double worse = regression_pct(def, *judged_change_pct(c));
  auto describe = [&](const std::string& what, double limit) {
    return std::string(def.key) + " " + with_unit(c.value, def.unit) + " vs baseline " +
           with_unit(*c.baseline, def.unit) + " " + change_text(c, confidence) + ", " + what +
           " limit " + limit_text(def, limit);
  };
  if (!c.test) {  // one value a side: nothing to test, the limit alone decides
    if (t.fail_pct && worse > *t.fail_pct) {
      c.verdict = Verdict::kFail;
      c.message = describe("fail", *t.fail_pct);
    } else if (t.warn_pct && worse > *t.warn_pct) {
      c.verdict = Verdict::kWarn;
      c.message = describe("warn", *t.warn_pct);
    }
    return;
  }
  bool higher = def.better == Better::kHigher;
  double least = higher ? -c.test->ci_high_pct : c.test->ci_low_pct;
  double most = higher ? -c.test->ci_low_pct : c.test->ci_high_pct;
  double past = fail_side(def, *c.test).value_or(worse);  // what the fail limit judges
  bool sure = c.test->reaches_level;
  if (t.fail_pct && sure && past > *t.fail_pct && least > limits->floor) {
    c.verdict = Verdict::kFail;
    c.message = describe("fail", *t.fail_pct) + bound_text(*c.test);
  } else if (t.warn_pct && sure && least > 0 &&
             (t.fail_pct ? worse > *t.warn_pct && most <= limits->pass : past > *t.warn_pct)) {
    c.verdict = Verdict::kWarn;
    c.message = describe("warn", *t.warn_pct);
  } else if (!sure || most > limits->pass) {
    c.verdict = Verdict::kWarn;
    c.inconclusive = true;
    c.message = "inconclusive: " + describe(t.fail_pct ? "fail" : "warn", limits->pass) +
                ", neither surely within nor surely past it: " +
                why_inconclusive(*c.test, *limits, def.key) +
                unfailed_text(*c.test, worse, past, limits->pass);
  }
}

// A quantile of too few responses is the slowest few requests, moved by any one
// of them: its relative limits are not judged, pass or fail, and the run says
// what would make them judgeable (an absolute limit still holds). The unit is
// the test's: a window (or a pair's window), a launch, or the whole run for
// run-level tests. True when the tail is too thin to judge. Not for a paired
// test: its pairs' ratios carry the thin tail's scatter, which the signed-rank
// test measures, so it stands (a p99.9 with fewer than 10,000 responses a
// window could otherwise never pass; issue 39, finding 11).
bool thin_tail(const MetricDef& def, const RunFigures& now, MetricCheck& c) {
  if (!c.test || def.aggregate != Aggregate::kPooled || now.unit_responses.empty()) return false;
  if (c.test->unit == "pairs" || c.test->unit == "blocks") return false;
  if (!c.thresholds.warn_pct && !c.thresholds.fail_pct) return false;
  std::vector<double> units(now.unit_responses.begin(), now.unit_responses.end());
  bool whole_run = c.test->unit == "runs";
  double responses = whole_run ? std::accumulate(units.begin(), units.end(), 0.0) : median(units);
  double tail = tail_responses(def, responses);
  if (tail >= kMinTailResponses) return false;
  if (c.verdict != Verdict::kPass) return true;  // an absolute limit already spoke
  std::string unit = whole_run ? "run" : c.test->unit == "blocks" ? "launch" : "window";
  double needed = std::ceil(kMinTailResponses * 100 / (100 - def.percentile));
  c.verdict = Verdict::kWarn;
  c.inconclusive = true;
  c.message = "inconclusive: " + std::string(def.key) + " " + signed_pct(*judged_change_pct(c)) +
              " rests on " + fixed(tail, 1) + " responses beyond it a " + unit + " (of " +
              fixed(responses, 0) + "); judging it needs " + compact(kMinTailResponses) + ", " +
              fixed(needed, 0) + " responses a " + unit +
              ": longer windows or more load would decide";
  return true;
}

std::string pass_message(const MetricDef& def, const MetricCheck& c, double confidence) {
  std::string text = std::string(def.key) + " " + with_unit(c.value, def.unit);
  if (c.change_pct)
    text += " vs baseline " + with_unit(*c.baseline, def.unit) + " " + change_text(c, confidence);
  bool relative = c.thresholds.warn_pct || c.thresholds.fail_pct;
  if (relative && !c.baseline) return text + ", no baseline: relative limits not checked";
  return text + ", within limits";
}

std::optional<double> relative_change(double value, const MetricSet& base, std::string_view key) {
  auto it = base.find(key);
  // A zero baseline (no errors before) has no relative change; absolute limits apply.
  if (it == base.end() || it->second == 0) return std::nullopt;
  return (value - it->second) / std::fabs(it->second) * 100.0;
}

// The metric as measured and tested at `confidence` (and a sequential look's
// `estimate_level`), not yet judged.
MetricCheck measure_metric(const MetricDef& def, const RunFigures& now,
                           const BaselineSample* baseline, const ThresholdSet& limits,
                           double confidence, std::optional<double> estimate_level = std::nullopt) {
  MetricCheck c;
  c.metric = std::string(def.key);
  c.unit = std::string(def.unit);
  c.value = now.summary.at(c.metric);
  if (auto it = limits.find(def.key); it != limits.end()) c.thresholds = it->second;
  c.gated = c.thresholds.any();
  if (baseline) {
    if (auto it = baseline->pooled.summary.find(def.key); it != baseline->pooled.summary.end())
      c.baseline = it->second;
    c.change_pct = relative_change(c.value, baseline->pooled.summary, def.key);
    auto values = now.values.find(def.key);
    if (c.change_pct && values != now.values.end())
      c.test = test_change(values->second, *baseline, c.metric, c.value, confidence,
                           c.thresholds.warn_pct ? c.thresholds.warn_pct : c.thresholds.fail_pct);
    if (c.test && estimate_level) {
      auto at = test_change(values->second, *baseline, c.metric, c.value, *estimate_level);
      if (at) c.test->estimate_bound = {*estimate_level, at->ci_low_pct, at->ci_high_pct};
    }
  }
  return c;
}

MetricCheck check_metric(const MetricDef& def, const RunFigures& now,
                         const BaselineSample* baseline, const ThresholdSet& limits,
                         double confidence, double nominal, std::optional<double> estimate_level) {
  MetricCheck c = measure_metric(def, now, baseline, limits, confidence, estimate_level);
  if (!c.gated) return c;
  check_absolute(def, now, nominal, c);
  // Paired: a metric not measured in every pair has no test, and its two pooled
  // figures alone are no evidence of a change (a busy machine made one side's):
  // its relative limits are undecided, never a fail. It failed a run on the
  // service's CPU, +51.8 % with no interval, beside a busy neighbour.
  bool relative = c.thresholds.warn_pct || c.thresholds.fail_pct;
  if (baseline && baseline->paired && !c.test && c.change_pct && relative &&
      c.verdict != Verdict::kFail) {
    c.verdict = Verdict::kWarn;
    c.inconclusive = true;
    c.message = "inconclusive: " + std::string(def.key) + " " + signed_pct(*c.change_pct) +
                " from the two sides' figures alone: it was not measured in every pair, so no "
                "test of the pairs could judge it";
    return c;
  }
  if (!thin_tail(def, now, c)) {
    check_relative(def, c);
  }
  if (c.message.empty()) c.message = pass_message(def, c, confidence);
  return c;
}

// The metrics that spend the run's false-fail budget: those whose change a test
// judges (a relative limit, and a test). The error-rate max keeps its own
// alpha / 2 (a true rate at the max fails at most that often): counted here it
// would make every relative metric stricter and raise the pairs a profile needs
// (7 kept pairs reach 98.33 % for three metrics, not 98.75 % for four), so a
// run whose rate sits at its max can fail up to alpha in all. A reciprocal of a
// tested metric (requests_per_service_cpu_s of service_cpu_us_per_request) is
// one signal, refused as a second limit by the profile's validation.
int tested_family(const RunFigures& now, const BaselineSample* baseline,
                  const ThresholdSet& limits) {
  int family = 0;
  for (auto defs : {metric_defs(), host_metric_defs()}) {
    for (const auto& def : defs) {
      if (!now.summary.contains(def.key)) continue;
      auto c = measure_metric(def, now, baseline, limits, 95);
      if ((c.thresholds.warn_pct || c.thresholds.fail_pct) && c.test) ++family;
    }
  }
  return family;
}

// Many small steps, each inside the limits, add up: a run that passed against its
// recent baseline but lies significantly past the fail limit against older runs
// warns, so that someone looks before the next step.
void check_drift(const MetricDef& def, const RunFigures& now, const BaselineSample& reference,
                 double confidence, MetricCheck& c) {
  c.drift_pct = relative_change(c.value, reference.pooled.summary, def.key);
  if (!c.drift_pct || !c.thresholds.fail_pct || c.verdict != Verdict::kPass) return;
  double worse = regression_pct(def, *c.drift_pct);
  if (worse <= *c.thresholds.fail_pct) return;
  auto values = now.values.find(def.key);
  if (values == now.values.end()) return;
  auto test = test_change(values->second, reference, c.metric, c.value, confidence);
  if (test && !test->significant) return;
  c.verdict = Verdict::kWarn;
  c.message = std::string(def.key) + " drifted " + signed_pct(*c.drift_pct) +
              " against the baseline runs from before (" +
              with_unit(reference.pooled.summary.at(c.metric), def.unit) +
              "), past the fail limit " + limit_text(def, *c.thresholds.fail_pct) +
              " in small steps; " + c.message;
}

// A saturated load machine set the pace, not the service: its fails say
// nothing about the code, so they become warnings that say why. But it can
// only time out, reset or fail to connect: a fail on statuses the service
// answered itself (a wrong path's 404s, a dead backend's 502s) stands.
void apply_saturation(const Saturation& saturation, Judgement& j) {
  if (!saturation.saturated) return;
  std::string reasons;
  for (size_t i = 0; i < saturation.reasons.size(); ++i)
    reasons += (i ? "; " : "") + saturation.reasons[i];
  std::string why = "load machine saturated" + (reasons.empty() ? "" : ": " + reasons);
  std::vector<std::string> standing;
  for (auto& c : j.checks) {
    if (c.verdict != Verdict::kFail) continue;
    if (c.fails_when_saturated) {
      standing.push_back(c.metric);
      c.message = "fails although the load machine was saturated" +
                  (reasons.empty() ? "" : " (" + reasons + ")") +
                  ": a busy client times requests out or loses them, but cannot make the "
                  "service answer a status; " +
                  c.message;
      continue;
    }
    c.verdict = Verdict::kWarn;
    c.message = "inconclusive, " + why + " (would fail: " + c.message + ")";
  }
  // The reasons are listed by the reporters from Saturation itself.
  if (standing.empty())
    j.notes.push_back(
        "the load machine was saturated: this run is inconclusive and never becomes a baseline");
  else
    j.notes.push_back(
        "the load machine was saturated: this run never becomes a baseline, and "
        "fails all the same on " +
        standing.front() + ", whose failed statuses the service answered itself");
}

// Says which metrics the stated prior judged: a figure of 2-core runners in
// general, not of this store's runs, so a reader knows what to do about it.
void note_prior(Judgement& j) {
  std::string metrics;
  for (const auto& c : j.checks)
    if (c.gated && c.test && c.test->spread == "prior")
      metrics += (metrics.empty() ? "" : ", ") + c.metric;
  if (metrics.empty()) return;
  j.notes.push_back("the stated prior of run-to-run noise judged " + metrics +
                    ": this store has no noise pool of " + std::to_string(kPoolMinDays) +
                    " days yet; the baseline's own runs refine it, and `perfgate calibrate` on " +
                    std::to_string(kPoolMinDays) +
                    " days replaces it (docs/statistics.md, \"The stated prior\")");
}

}  // namespace

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "fail";
    case Verdict::kError:
      return "error";
  }
  return "error";
}

ExitStatus exit_status_of(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return ExitStatus::kPass;
    case Verdict::kWarn:
      return ExitStatus::kWarn;
    case Verdict::kFail:
      return ExitStatus::kFail;
    case Verdict::kError:
      return ExitStatus::kError;
  }
  return ExitStatus::kError;
}

Verdict worst(Verdict a, Verdict b) {
  auto rank = [](Verdict v) {
    switch (v) {
      case Verdict::kPass:
        return 0;
      case Verdict::kWarn:
        return 1;
      case Verdict::kFail:
        return 2;
      case Verdict::kError:
        return 3;
    }
    return 3;
  };
  return rank(a) >= rank(b) ? a : b;
}

int family_bound(const ThresholdSet& limits) {
  return static_cast<int>(std::count_if(limits.begin(), limits.end(), [](const auto& entry) {
    return entry.second.warn_pct || entry.second.fail_pct;
  }));
}

int min_pairs_to_reach(double confidence_pct) {
  double alpha = 1 - confidence_pct / 100;
  int n = 1;
  while (std::pow(2.0, 1 - n) >= alpha) ++n;
  return n;
}

double family_confidence(double confidence_pct, int family) {
  return 100 - (100 - confidence_pct) / std::max(family, 1);
}

bool shows_regression(const MetricCheck& c) {
  // An undecided warn is no regression: leaving such runs out kept only the runs
  // that landed near the window, too narrow a window (issue 46).
  return c.verdict == Verdict::kFail || (c.verdict == Verdict::kWarn && !c.inconclusive);
}

bool shows_regression(const std::vector<MetricCheck>& checks) {
  return std::any_of(checks.begin(), checks.end(),
                     [](const MetricCheck& c) { return shows_regression(c); });
}

std::optional<double> judged_change_pct(const MetricCheck& c) {
  if (c.test) return c.test->estimate_pct;
  return c.change_pct;
}

Judgement judge(const RunFigures& now, const BaselineSample* baseline, const ThresholdSet& limits,
                const Saturation& saturation, const DecisionSettings& settings,
                const BaselineSample* drift_reference) {
  Judgement j;
  j.family = tested_family(now, baseline, limits) + settings.extra_family;
  j.confidence_pct = j.share_pct = family_confidence(settings.confidence, j.family);
  if (settings.look_level) j.confidence_pct = settings.look_level(j.confidence_pct);
  // The error rate's own alpha is not split over the metrics, but a sequential
  // run's looks spend it as they spend theirs: a fail at any look stops the run.
  double absolute_level =
      settings.look_level ? settings.look_level(settings.confidence) : settings.confidence;
  for (auto defs : {metric_defs(), host_metric_defs()}) {
    for (const auto& def : defs) {
      if (!now.summary.contains(def.key)) continue;
      j.checks.push_back(check_metric(def, now, baseline, limits, j.confidence_pct, absolute_level,
                                      settings.estimate_level));
      if (drift_reference && j.checks.back().gated)
        check_drift(def, now, *drift_reference, j.confidence_pct, j.checks.back());
    }
  }
  note_prior(j);
  if (j.family > 1)
    j.notes.push_back(std::to_string(j.family) + " tested metrics share one " +
                      level_text(settings.confidence) + "% false-fail budget: each judged at " +
                      level_text(j.confidence_pct) + "%");
  apply_saturation(saturation, j);
  for (const auto& c : j.checks) j.verdict = worst(j.verdict, c.verdict);
  if (saturation.saturated) j.verdict = worst(j.verdict, Verdict::kWarn);
  return j;
}

}  // namespace perfgate
