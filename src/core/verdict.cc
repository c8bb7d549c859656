#include "perfgate/core/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

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

int decimals_for(std::string_view unit) {
  return unit == "req/s" ? 1 : 3;
}

std::string with_unit(double v, std::string_view unit) {
  return fixed(v, decimals_for(unit)) + (unit == "%" ? "%" : " " + std::string(unit));
}

std::string signed_pct(double pct) {
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

void check_absolute(const MetricDef& def, MetricCheck& c) {
  const auto& t = c.thresholds;
  if (t.max && c.value > *t.max) {
    c.verdict = Verdict::kFail;
    c.message = std::string(def.key) + " " + with_unit(c.value, def.unit) + " is above the max " +
                with_unit(*t.max, def.unit);
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
  std::string text = "(" + signed_pct(*c.change_pct);
  if (c.test)
    text += ", " + compact(confidence) + "% CI " + signed_pct(c.test->ci_low_pct) + ".." +
            signed_pct(c.test->ci_high_pct) + ", " + p_text(c.test->p_value);
  return text + ")";
}

// The run-level test, when there is one: with a young window (fewer than
// kPooledNoiseBelowRuns runs) against the noise pooled over earlier runs when that
// rests on more degrees of freedom than the window's own k - 1; else, with three
// or more runs, against the window's own spread.
std::optional<ChangeEstimate> run_level_change(const BaselineSample& base, const std::string& key,
                                               double value, double level) {
  auto runs = base.run_figures.find(key);
  if (runs == base.run_figures.end() || runs->second.empty()) return std::nullopt;
  int k = static_cast<int>(runs->second.size());
  auto noise = base.run_noise.find(key);
  bool positive = value > 0 && std::all_of(runs->second.begin(), runs->second.end(),
                                           [](double v) { return v > 0; });
  if (k < kPooledNoiseBelowRuns && positive && noise != base.run_noise.end() &&
      noise->second.df > k - 1)
    return estimate_run_change(value, runs->second, level, noise->second);
  if (k >= 3) return estimate_run_change(value, runs->second, level);
  return std::nullopt;
}

// The iteration-level rank test, and the run-level one too when there is one
// (run_level_change): a change counts only when it stands out from both the
// spread of iterations and the spread of whole runs.
std::optional<ChangeTest> test_change(const std::vector<double>& now, const BaselineSample& base,
                                      const std::string& key, double value, double confidence) {
  auto pooled = base.pooled.values.find(key);
  if (now.empty() || pooled == base.pooled.values.end() || pooled->second.empty())
    return std::nullopt;
  double level = confidence / 100;
  try {
    if (base.paired) {
      auto pairs = estimate_paired_change(now, pooled->second, level);
      ChangeTest t{pairs.ci_low_pct,
                   pairs.ci_high_pct,
                   pairs.p_value,
                   pairs.p_value < 1 - level,
                   pairs.n_now,
                   pairs.n_base,
                   1,
                   pairs.method};
      return t;
    }
    auto iter = estimate_change(now, pooled->second, level);
    ChangeTest t{iter.ci_low_pct, iter.ci_high_pct, iter.p_value, false, iter.n_now, iter.n_base, 1,
                 iter.method};
    auto runs = base.run_figures.find(key);
    if (runs != base.run_figures.end()) t.baseline_runs = static_cast<int>(runs->second.size());
    if (auto run = run_level_change(base, key, value, level)) {
      t.p_value = std::max(t.p_value, run->p_value);
      t.ci_low_pct = std::min(t.ci_low_pct, run->ci_low_pct);
      t.ci_high_pct = std::max(t.ci_high_pct, run->ci_high_pct);
      t.method += ", " + run->method;
    }
    t.significant = t.p_value < 1 - level;
    // A shift interval of a positive figure can reach past -100 %, which no such
    // figure can fall by: the bound says "down to nothing" and no more.
    bool positive = value > 0 && std::all_of(pooled->second.begin(), pooled->second.end(),
                                             [](double v) { return v > 0; });
    if (positive) t.ci_low_pct = std::max(t.ci_low_pct, -100.0);
    return t;
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // a zero baseline: no relative change to test
  }
}

void check_relative(const MetricDef& def, MetricCheck& c, double confidence) {
  if (!c.change_pct || c.verdict == Verdict::kFail) return;
  const auto& t = c.thresholds;
  double worse = regression_pct(def, *c.change_pct);
  auto describe = [&](const std::string& what, double limit) {
    return std::string(def.key) + " " + with_unit(c.value, def.unit) + " vs baseline " +
           with_unit(*c.baseline, def.unit) + " " + change_text(c, confidence) + ", " + what +
           " limit " + limit_text(def, limit);
  };
  // Without per-iteration values there is nothing to test: the limit alone decides.
  bool significant = !c.test || c.test->significant;
  if (t.fail_pct && worse > *t.fail_pct && significant) {
    c.verdict = Verdict::kFail;
    c.message = describe("fail", *t.fail_pct);
  } else if (t.fail_pct && worse > *t.fail_pct) {
    c.verdict = Verdict::kWarn;
    c.message = describe("past the fail", *t.fail_pct) + " but not significant at " +
                compact(confidence) + "%: within the noise of " + std::to_string(c.test->n_now) +
                " iterations vs " + std::to_string(c.test->n_base) + " (more repeats would tell)";
  } else if (t.warn_pct && worse > *t.warn_pct) {
    c.verdict = Verdict::kWarn;
    c.message = describe("warn", *t.warn_pct);
  }
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

MetricCheck check_metric(const MetricDef& def, const RunFigures& now,
                         const BaselineSample* baseline, const ThresholdSet& limits,
                         double confidence) {
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
      c.test = test_change(values->second, *baseline, c.metric, c.value, confidence);
  }
  if (!c.gated) return c;
  check_absolute(def, c);
  check_relative(def, c, confidence);
  if (c.message.empty()) c.message = pass_message(def, c, confidence);
  return c;
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
// nothing about the code, so they become warnings that say why.
void apply_saturation(const Saturation& saturation, Judgement& j) {
  if (!saturation.saturated) return;
  std::string why = "load machine saturated";
  for (size_t i = 0; i < saturation.reasons.size(); ++i)
    why += (i ? "; " : ": ") + saturation.reasons[i];
  for (auto& c : j.checks) {
    if (c.verdict != Verdict::kFail) continue;
    c.verdict = Verdict::kWarn;
    c.message = "inconclusive, " + why + " (would fail: " + c.message + ")";
  }
  // The reasons are listed by the reporters from Saturation itself.
  j.notes.push_back(
      "the load machine was saturated: this run is inconclusive and never becomes a baseline");
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

Judgement judge(const RunFigures& now, const BaselineSample* baseline, const ThresholdSet& limits,
                const Saturation& saturation, const DecisionSettings& settings,
                const BaselineSample* drift_reference) {
  Judgement j;
  for (auto defs : {metric_defs(), host_metric_defs()}) {
    for (const auto& def : defs) {
      if (!now.summary.contains(def.key)) continue;
      j.checks.push_back(check_metric(def, now, baseline, limits, settings.confidence));
      if (drift_reference && j.checks.back().gated)
        check_drift(def, now, *drift_reference, settings.confidence, j.checks.back());
    }
  }
  apply_saturation(saturation, j);
  for (const auto& c : j.checks) j.verdict = worst(j.verdict, c.verdict);
  if (saturation.saturated) j.verdict = worst(j.verdict, Verdict::kWarn);
  return j;
}

}  // namespace perfgate
