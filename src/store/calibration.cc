#include "perfgate/store/calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "perfgate/core/error.h"
#include "perfgate/core/statistics.h"
#include "perfgate/core/units.h"
#include "perfgate/core/verdict.h"

namespace perfgate {
namespace {

// Limits people can read: the next of these at or above a figure.
double nice_round_up(double pct) {
  static constexpr std::array<double, 16> kSteps = {1,  2,  3,  5,  7,  10,  15,  20,
                                                    25, 30, 40, 50, 75, 100, 150, 200};
  for (double step : kSteps)
    if (pct <= step) return step;
  return std::ceil(pct / 100) * 100;
}

double robust_cv_pct(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  double m = stats::median(values);
  return m > 0 ? stats::mad(values) / m * 100 : 0;
}

// Standard deviation of the logarithms, as a percentage (about the CV).
double log_sd_pct(const std::vector<double>& figures) {
  double mean = 0;
  for (double v : figures) mean += std::log(v) / static_cast<double>(figures.size());
  double ss = 0;
  for (double v : figures) ss += (std::log(v) - mean) * (std::log(v) - mean);
  return std::sqrt(ss / static_cast<double>(figures.size() - 1)) * 100;
}

struct Setting {
  int window;
  double level;  // confidence as a fraction
  int kept;      // kept iterations per run
};

// The half-width of the interval the verdict will put around a change: the
// run-level prediction interval with three or more baseline runs, and the
// iteration-level one (normal approximation of the rank test) always.
double detectable_pct(const MetricNoise& n, const Setting& s) {
  double w = s.window;
  double iteration = stats::normal_quantile(0.5 + s.level / 2) * n.iteration_noise_pct *
                     std::sqrt(1.0 / s.kept + 1.0 / (s.kept * w));
  if (s.window < 3) return iteration;
  double run =
      stats::student_t_quantile(0.5 + s.level / 2, w - 1) * n.run_noise_pct * std::sqrt(1 + 1 / w);
  return std::max(iteration, run);
}

// Kept iterations for the iteration-level interval to be half the fail limit.
int iterations_for(const MetricNoise& n, const Setting& s) {
  double half = n.suggested_fail_pct / 2;
  double z = stats::normal_quantile(0.5 + s.level / 2);
  double need = std::pow(z * n.iteration_noise_pct / half, 2) * (1 + 1.0 / s.window);
  // Five kept iterations is the least a rank test against the pool can work with.
  return std::max(5, static_cast<int>(std::ceil(need)));
}

double log_var(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0;
  double mean = 0;
  for (double v : xs) mean += std::log(v) / static_cast<double>(xs.size());
  double ss = 0;
  for (double v : xs) ss += (std::log(v) - mean) * (std::log(v) - mean);
  return ss / static_cast<double>(xs.size() - 1);
}

double log_mean(const std::vector<double>& xs) {
  double mean = 0;
  for (double v : xs) mean += std::log(v) / static_cast<double>(xs.size());
  return mean;
}

// One-way random effects by the method of moments, on log figures: the pooled
// within-run variance is the window's; the variance of the runs' means less its
// share (window var / windows per run) is the launch's, never below 0.
struct Components {
  double window_var = 0;
  double launch_var = 0;
  double windows = 1;  // per run, on average
};

std::optional<Components> components(const std::string& key, const std::vector<RunFigures>& runs) {
  Components c;
  double ss = 0, df = 0, n = 0;
  std::vector<double> means;
  for (const auto& run : runs) {
    auto it = run.values.find(key);
    if (it == run.values.end() || it->second.empty()) return std::nullopt;
    for (double v : it->second)
      if (!(v > 0)) return std::nullopt;
    double m = log_mean(it->second);
    for (double v : it->second) ss += (std::log(v) - m) * (std::log(v) - m);
    df += static_cast<double>(it->second.size() - 1);
    n += static_cast<double>(it->second.size());
    means.push_back(std::exp(m));
  }
  c.window_var = df > 0 ? ss / df : 0;
  c.windows = n / static_cast<double>(runs.size());
  c.launch_var = std::max(0.0, log_var(means) - c.window_var / c.windows);
  return c;
}

// The day's share: the variance of the days' means less what launches and
// windows put into a day's mean of `per_day` runs.
std::optional<double> day_var(const std::string& key, const std::vector<RunFigures>& today,
                              const std::vector<std::vector<RunFigures>>& earlier,
                              const Components& c) {
  std::vector<double> day_means;
  double runs = 0;
  std::vector<const std::vector<RunFigures>*> days = {&today};
  for (const auto& d : earlier) days.push_back(&d);
  for (const auto* day : days) {
    std::vector<double> figures;
    for (const auto& run : *day)
      if (auto it = run.summary.find(key); it != run.summary.end() && it->second > 0)
        figures.push_back(it->second);
    if (figures.empty()) continue;
    day_means.push_back(std::exp(log_mean(figures)));
    runs += static_cast<double>(figures.size());
  }
  if (day_means.size() < 2) return std::nullopt;
  double per_day = runs / static_cast<double>(day_means.size());
  return std::max(0.0, log_var(day_means) - (c.launch_var + c.window_var / c.windows) / per_day);
}

double sd_pct(double var) {
  return std::sqrt(var) * 100;
}

std::optional<MetricNoise> noise_of(const MetricDef& def, const std::vector<RunFigures>& runs,
                                    const Profile& profile, const Setting& s) {
  MetricNoise n;
  n.metric = std::string(def.key);
  n.unit = std::string(def.unit);
  std::vector<double> figures, cvs;
  for (const auto& run : runs) {
    auto it = run.summary.find(def.key);
    if (it == run.summary.end() || !(it->second > 0)) return std::nullopt;
    figures.push_back(it->second);
    cvs.push_back(robust_cv_pct(run.values.at(n.metric)));
  }
  n.typical = stats::median(figures);
  n.iteration_noise_pct = stats::median(cvs);
  n.run_noise_pct = log_sd_pct(figures);
  n.detectable_pct = detectable_pct(n, s);
  n.suggested_fail_pct = nice_round_up(std::max(1.25 * n.detectable_pct, 1.0));
  n.suggested_warn_pct = nice_round_up(n.suggested_fail_pct / 2);
  if (n.suggested_warn_pct >= n.suggested_fail_pct) n.suggested_warn_pct = n.suggested_fail_pct / 2;
  if (auto it = profile.thresholds.find(def.key); it != profile.thresholds.end()) {
    n.gated = it->second.fail_pct.has_value();
    n.current_fail_pct = it->second.fail_pct.value_or(0);
    n.current_too_tight = n.gated && n.current_fail_pct < n.detectable_pct;
  }
  return n;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pad(const std::string& text, size_t width, bool right) {
  std::string fill(width > text.size() ? width - text.size() : 0, ' ');
  return right ? fill + text : text + fill;
}

}  // namespace

namespace {

// The limits a metric's plan decides between: the profile's where it sets
// them, else the suggested ones.
// The first kept window of each run against the median of its later ones.
std::optional<WarmupTransient> warmup_transient(const MetricDef& def,
                                                const std::vector<RunFigures>& runs) {
  std::vector<double> logs;  // log(first / later)
  for (const auto& run : runs) {
    const auto& values = run.values.at(std::string(def.key));
    if (values.size() < 3) return std::nullopt;
    double rest = stats::median(std::vector<double>(values.begin() + 1, values.end()));
    if (!(values.front() > 0) || !(rest > 0)) return std::nullopt;
    logs.push_back(std::log(values.front() / rest));
  }
  WarmupTransient w;
  w.runs = static_cast<int>(logs.size());
  double mean = 0, ss = 0;
  for (double l : logs) mean += l / w.runs;
  for (double l : logs) ss += (l - mean) * (l - mean);
  double half = stats::student_t_quantile(0.975, w.runs - 1) * std::sqrt(ss / (w.runs - 1)) /
                std::sqrt(static_cast<double>(w.runs));
  w.first_pct = std::expm1(mean) * 100;
  w.low_pct = std::expm1(mean - half) * 100;
  w.high_pct = std::expm1(mean + half) * 100;
  w.found = def.better == Better::kHigher ? w.high_pct < 0 && w.first_pct <= -kWarmupTransientPct
                                          : w.low_pct > 0 && w.first_pct >= kWarmupTransientPct;
  return w;
}

std::string warmup_text(const Calibration& c) {
  std::string found;
  int checked = 0;
  for (const auto& n : c.metrics) {
    if (!n.warmup) continue;
    ++checked;
    if (!n.warmup->found) continue;
    const auto& w = *n.warmup;
    found += "  " + n.metric + ": the first kept window is " + fixed(std::abs(w.first_pct), 1) +
             (w.first_pct < 0 ? "% lower" : "% higher") + " than the later ones (95% CI " +
             fixed(w.low_pct, 1) + " to " + fixed(w.high_pct, 1) + "%, " + std::to_string(w.runs) +
             " runs)\n";
  }
  if (checked == 0)
    return "warm-up: not checked (each run needs 3 kept windows: a first and two after it)\n";
  if (found.empty())
    return "warm-up: no transient after load.warmup " + c.warmup +
           " (each run's first kept window against its later ones)\n";
  return "warm-up: the service is still warming up after load.warmup " + c.warmup +
         "; lengthen it (or paired.leg_warmup) until this goes, or a paired run with one "
         "window a launch counts the transient in every pair:\n" +
         found;
}

PlanLimits plan_limits(const MetricNoise& n, const Profile& profile, const CalibrationAsk& ask) {
  PlanLimits l{n.suggested_warn_pct, n.suggested_fail_pct, ask.detect_pct};
  if (auto it = profile.thresholds.find(n.metric); it != profile.thresholds.end() && n.gated) {
    l.fail_pct = n.current_fail_pct;
    l.warn_pct = it->second.warn_pct.value_or(0);
  }
  return l;
}

std::string plan_text(const MetricNoise& n) {
  std::string what = n.detect_pct > 0 ? "fail +" + fixed(n.detect_pct, 0) + "% with 80% power"
                                      : "decide between its limits (80% power each way)";
  if (n.launches == 0)
    return what + ": not at or below the fail limit, which a change fails at most half the time";
  return what + ": " + std::to_string(n.launches) + " launches of " + std::to_string(n.block) +
         " (paired.block " + std::to_string(n.block) + ", repeat.count " +
         std::to_string(n.launches * n.block) + "), about " + fixed(n.seconds, 0) + " s";
}

}  // namespace

int optimal_block(double window_sd, double launch_sd, const RunCost& cost, int max_block) {
  if (!(launch_sd > 0)) return max_block;
  double b = std::sqrt(cost.launch_s / cost.window_s) * window_sd / launch_sd;
  return std::clamp(static_cast<int>(std::lround(b)), 1, max_block);
}

int launches_to_detect(double window_sd, double launch_sd, int block, const PlanLimits& limits,
                       double family_confidence_pct) {
  constexpr double kPi = 3.141592653589793;
  double median_of_block = block > 1 ? kPi / 2 : 1;
  double var =
      kPi / 3 * 2 * (launch_sd * launch_sd + median_of_block * window_sd * window_sd / block) / 1e4;
  double z_level = stats::normal_quantile(0.5 + family_confidence_pct / 200);
  double z_power = stats::normal_quantile(0.8);
  double warn = std::log1p(limits.warn_pct / 100), fail = std::log1p(limits.fail_pct / 100);
  // n at which `needed` log units hold `z` standard errors.
  auto pairs = [var](double z, double needed) { return z * z * var / (needed * needed); };
  double n = 0;
  if (limits.detect_pct > 0) {
    // A fail: the estimate past F, and the interval's near end past W.
    double d = std::log1p(limits.detect_pct / 100);
    if (d <= fail) return 0;
    n = std::max(pairs(z_power, d - fail), pairs(z_level + z_power, d - warn));
  } else {
    n = pairs(z_level + z_power, fail - warn);
  }
  // A signed-rank test needs pairs to reach its level at all: 2 / 2^n <= 1 - level.
  int least = static_cast<int>(std::ceil(std::log2(2 / (1 - family_confidence_pct / 100))));
  return std::max({6, least, static_cast<int>(std::ceil(n - 1e-9))});
}

Calibration calibrate(const std::vector<RunFigures>& runs, const Profile& profile,
                      const CalibrationAsk& ask) {
  if (runs.size() < 2) throw Error("calibrate needs at least 2 runs to see their noise");
  Calibration c;
  c.runs = static_cast<int>(runs.size());
  c.window = profile.baseline.window;
  c.confidence = profile.baseline.confidence;
  c.warmup = format_duration(profile.load.warmup);
  Setting s{c.window, c.confidence / 100, profile.repeat.count - profile.repeat.discard};
  // Each tested metric is judged at the run's level split over them: so is it planned.
  double family_level = family_confidence(c.confidence, family_bound(profile.thresholds));
  int kept = 0;
  for (auto defs : {metric_defs(), host_metric_defs()}) {
    for (const auto& def : defs) {
      auto n = noise_of(def, runs, profile, s);
      if (!n) continue;
      if (auto comp = components(n->metric, runs)) {
        n->window_sd_pct = sd_pct(comp->window_var);
        n->launch_sd_pct = sd_pct(comp->launch_var);
        if (auto day = day_var(n->metric, runs, ask.earlier_days, *comp))
          n->day_sd_pct = sd_pct(*day);
        n->detect_pct = ask.detect_pct;
        n->block = optimal_block(n->window_sd_pct, n->launch_sd_pct, ask.cost);
        n->launches = launches_to_detect(n->window_sd_pct, n->launch_sd_pct, n->block,
                                         plan_limits(*n, profile, ask), family_level);
        n->seconds = 2 * n->launches * (ask.cost.launch_s + n->block * ask.cost.window_s);
      }
      n->warmup = warmup_transient(def, runs);
      if (n->gated) kept = std::max(kept, iterations_for(*n, s));
      c.metrics.push_back(*n);
    }
  }
  c.suggested_repeat_count = std::max(kept, s.kept) + profile.repeat.discard;
  c.cost = ask.cost;
  return c;
}

std::string calibration_report(const Calibration& c) {
  std::vector<std::array<std::string, 7>> rows = {
      {"metric", "typical", "iter noise", "run noise", "detectable", "suggested", "now"}};
  for (const auto& n : c.metrics) {
    std::string now = n.gated ? "fail " + fixed(n.current_fail_pct, 0) + "%" : "-";
    if (n.current_too_tight) now += " (too tight)";
    rows.push_back({n.metric, fixed(n.typical, 3) + " " + n.unit,
                    fixed(n.iteration_noise_pct, 1) + "%", fixed(n.run_noise_pct, 1) + "%",
                    fixed(n.detectable_pct, 1) + "%",
                    "warn " + fixed(n.suggested_warn_pct, 0) + "% fail " +
                        fixed(n.suggested_fail_pct, 0) + "%",
                    now});
  }
  std::array<size_t, 7> width{};
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out = "calibration: " + std::to_string(c.runs) + " A/A runs, baseline window " +
                    std::to_string(c.window) + ", confidence " + fixed(c.confidence, 0) + "%\n";
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += "  " + pad(row[i], width[i], i >= 1 && i <= 4);
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  out +=
      "iter noise: robust spread of iterations within a run; run noise: spread of whole runs.\n"
      "detectable: the smallest change the verdict can tell from noise with these settings;\n"
      "a fail limit below it fails on noise alone, or never fails for lack of significance.\n";
  out += "suggested repeat.count: " + std::to_string(c.suggested_repeat_count) +
         " (kept iterations enough for the suggested limits)\n";
  out +=
      "variance components (sd of log figures) and the paired run that decides each metric\n"
      "as the verdict does, at its share of the run's level, in the least time (Kalibera &\n"
      "Jones; a launch costs " +
      fixed(c.cost.launch_s, 1) + " s, a window " + fixed(c.cost.window_s, 1) + " s):\n";
  for (const auto& n : c.metrics) {
    if (n.window_sd_pct == 0 && n.launch_sd_pct == 0) continue;
    out += "  " + n.metric + ": window " + fixed(n.window_sd_pct, 1) + "%, launch " +
           fixed(n.launch_sd_pct, 1) + "%, day " +
           (n.day_sd_pct ? fixed(*n.day_sd_pct, 1) + "%" : std::string("- (one day)")) + "; " +
           plan_text(n) + "\n";
  }
  return out + warmup_text(c);
}

}  // namespace perfgate
