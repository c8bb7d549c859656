#include "perfgate/verdict.h"

#include <cmath>
#include <cstdio>

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

void check_relative(const MetricDef& def, MetricCheck& c) {
  if (!c.change_pct || c.verdict == Verdict::kFail) return;
  const auto& t = c.thresholds;
  double worse = regression_pct(def, *c.change_pct);
  auto describe = [&](const char* what, double limit) {
    return std::string(def.key) + " " + with_unit(c.value, def.unit) + " vs baseline " +
           with_unit(*c.baseline, def.unit) + " (" + signed_pct(*c.change_pct) + "), " + what +
           " limit " + limit_text(def, limit);
  };
  if (t.fail_pct && worse > *t.fail_pct) {
    c.verdict = Verdict::kFail;
    c.message = describe("fail", *t.fail_pct);
  } else if (t.warn_pct && worse > *t.warn_pct) {
    c.verdict = Verdict::kWarn;
    c.message = describe("warn", *t.warn_pct);
  }
}

std::string pass_message(const MetricDef& def, const MetricCheck& c) {
  std::string text = std::string(def.key) + " " + with_unit(c.value, def.unit);
  if (c.change_pct)
    text +=
        " vs baseline " + with_unit(*c.baseline, def.unit) + " (" + signed_pct(*c.change_pct) + ")";
  bool relative = c.thresholds.warn_pct || c.thresholds.fail_pct;
  if (relative && !c.baseline) return text + ", no baseline: relative limits not checked";
  return text + ", within limits";
}

MetricCheck check_metric(const MetricDef& def, double value, const MetricSet* baseline,
                         const ThresholdSet& limits) {
  MetricCheck c;
  c.metric = std::string(def.key);
  c.unit = std::string(def.unit);
  c.value = value;
  if (auto it = limits.find(def.key); it != limits.end()) c.thresholds = it->second;
  c.gated = c.thresholds.any();
  if (baseline) {
    if (auto it = baseline->find(def.key); it != baseline->end()) {
      c.baseline = it->second;
      // A zero baseline (no errors before) has no relative change; absolute limits apply.
      if (it->second != 0) c.change_pct = (value - it->second) / std::fabs(it->second) * 100.0;
    }
  }
  if (!c.gated) return c;
  check_absolute(def, c);
  check_relative(def, c);
  if (c.message.empty()) c.message = pass_message(def, c);
  return c;
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

Judgement judge(const MetricSet& now, const MetricSet* baseline, const ThresholdSet& limits,
                const Saturation& saturation) {
  Judgement j;
  for (const auto& def : metric_defs()) {
    auto it = now.find(def.key);
    if (it == now.end()) continue;
    j.checks.push_back(check_metric(def, it->second, baseline, limits));
  }
  apply_saturation(saturation, j);
  for (const auto& c : j.checks) j.verdict = worst(j.verdict, c.verdict);
  if (saturation.saturated) j.verdict = worst(j.verdict, Verdict::kWarn);
  return j;
}

}  // namespace perfgate
