#include "perfgate/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>

#include "perfgate/report/report_format.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/stored_run.h"

namespace perfgate {
namespace {

// The charted figures: the gate's two main ones, the median, errors, and the
// service's CPU per request when the runs measured it (throughput alone can hide
// a service that got faster by burning more CPU).
constexpr std::string_view kServiceCpu = "service_cpu_us_per_request";
constexpr std::string_view kCharted[] = {"throughput_rps", "latency_p50_ms", "latency_p99_ms",
                                         "error_rate_pct", kServiceCpu};

constexpr double kWidth = 760, kHeight = 200;
constexpr double kLeft = 100, kRight = 20, kTop = 16, kBottom = 34;

std::string esc(std::string_view raw) {
  return report::markup_escape(report::one_line(raw), "&#39;", false);
}

std::string num(double value) {
  return report::fixed(value, 1);
}

double figure(const RunPoint& run, std::string_view metric) {
  auto it = run.metrics.find(metric);
  return it == run.metrics.end() ? NAN : it->second;
}

std::string unit_of(std::string_view metric) {
  if (metric == kServiceCpu) return "us";
  const MetricDef* def = find_metric(metric);
  return def ? std::string(def->unit) : "";
}

bool measured(const HtmlReportInput& in, std::string_view metric) {
  return std::any_of(in.runs.begin(), in.runs.end(),
                     [&](const RunPoint& run) { return std::isfinite(figure(run, metric)); });
}

std::string value_text(double value, std::string_view metric) {
  std::string unit = unit_of(metric);
  return report::with_unit(report::format_value(value, unit), unit);
}

// The band is the baseline with the warn limit on both sides: a point inside it
// would not have warned against this baseline.
struct Band {
  double base = NAN;
  double lo = NAN;
  double hi = NAN;
};

Band band_of(const HtmlReportInput& in, std::string_view metric) {
  if (!in.baseline) return {};
  double base = figure(in.runs[*in.baseline], metric);
  auto t = in.thresholds.find(metric);
  double warn = t != in.thresholds.end() && t->second.warn_pct ? *t->second.warn_pct : 0;
  return {base, base * (1 - warn / 100), base * (1 + warn / 100)};
}

// Maps values and run indexes to chart coordinates.
struct Scale {
  double lo = 0, hi = 1;
  size_t count = 1;
  double x(size_t i) const {
    double span = kWidth - kLeft - kRight;
    return count < 2 ? kLeft + span / 2 : kLeft + span * static_cast<double>(i) / (count - 1);
  }
  double y(double v) const { return kTop + (kHeight - kTop - kBottom) * (hi - v) / (hi - lo); }
};

size_t history_size(const HtmlReportInput& in) {
  return std::max(in.history_size, in.runs.size());
}

size_t position(const HtmlReportInput& in, size_t i) {
  return in.runs[i].position.value_or(i);
}

Scale scale_of(const HtmlReportInput& in, std::string_view metric, const Band& band) {
  std::vector<double> values = {band.lo, band.hi};
  for (const RunPoint& run : in.runs) values.push_back(figure(run, metric));
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  double lo = values.empty() ? 0 : *std::min_element(values.begin(), values.end());
  double hi = values.empty() ? 1 : *std::max_element(values.begin(), values.end());
  // A flat series (an error rate of zero throughout) still needs a visible range.
  double pad = hi > lo ? (hi - lo) * 0.08 : std::max(std::abs(hi) * 0.05, 1.0);
  return {std::max(0.0, lo - pad), hi + pad, history_size(in)};
}

std::string band_svg(const Band& band, const Scale& s, std::string_view metric) {
  if (!std::isfinite(band.base)) return "";
  std::string title = "<title>baseline " + esc(value_text(band.base, metric)) + "</title>";
  std::string out = "<rect class=\"band\" x=\"" + num(kLeft) + "\" y=\"" + num(s.y(band.hi)) +
                    "\" width=\"" + num(kWidth - kLeft - kRight) + "\" height=\"" +
                    num(std::max(1.0, s.y(band.lo) - s.y(band.hi))) + "\">" + title + "</rect>";
  return out + "<line class=\"baseline\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kWidth - kRight) +
         "\" y1=\"" + num(s.y(band.base)) + "\" y2=\"" + num(s.y(band.base)) + "\"/>";
}

std::string axes_svg(const HtmlReportInput& in, const Scale& s, std::string_view metric) {
  auto label = [&](double v) {
    return "<text class=\"axis\" x=\"" + num(kLeft - 6) + "\" y=\"" + num(s.y(v) + 4) +
           "\" text-anchor=\"end\">" + esc(value_text(v, metric)) + "</text>";
  };
  auto run_label = [&](size_t i, const char* anchor) {
    return "<text class=\"axis\" x=\"" + num(s.x(position(in, i))) + "\" y=\"" + num(kHeight - 10) +
           "\" text-anchor=\"" + anchor + "\">run " + std::to_string(in.runs[i].id) + " " +
           esc(in.runs[i].created_at.substr(0, 10)) + "</text>";
  };
  std::string out = label(s.lo) + label(s.hi);
  if (!in.runs.empty()) out += run_label(0, "start") + run_label(in.runs.size() - 1, "end");
  return out;
}

std::string point_title(const RunPoint& run, std::string_view metric) {
  std::string text = "run " + std::to_string(run.id) + " " + run.created_at + ": " +
                     value_text(figure(run, metric), metric) + " (" +
                     std::string(to_string(run.verdict)) + ")";
  if (!run.commit.empty()) text += " commit " + report::short_id(run.commit, 7);
  if (run.saturation.saturated) text += " SATURATED: " + report::join(run.saturation.reasons, "; ");
  return "<title>" + esc(text) + "</title>";
}

// A saturated run gets a hollow red square around its point: it says the load
// machine was the bottleneck, so the figure says little about the service.
std::string point_svg(const RunPoint& run, double x, double y, std::string_view metric) {
  std::string title = point_title(run, metric);
  if (run.saturation.saturated)
    return "<rect class=\"saturated\" x=\"" + num(x - 5) + "\" y=\"" + num(y - 5) +
           "\" width=\"10\" height=\"10\">" + title + "</rect>";
  std::string cls =
      run.verdict == Verdict::kPass ? "point" : "point " + esc(to_string(run.verdict));
  return "<circle class=\"" + cls + "\" cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"3.5\">" +
         title + "</circle>";
}

// The marker a point gets: its class, and whether it is a saturated square.
std::string marker_kind(const RunPoint& run) {
  return run.saturation.saturated ? "saturated" : std::string(to_string(run.verdict));
}

// A sample of a long history: points of one kind on the same pixel become one
// marker, titled with the first run and naming the others.
std::string merged_points_svg(const HtmlReportInput& in, const Scale& s, std::string_view metric) {
  struct Marker {
    size_t first;
    std::string others;
  };
  std::map<std::tuple<std::string, long, long>, Marker> markers;
  std::vector<std::tuple<std::string, long, long>> order;
  for (size_t i = 0; i < in.runs.size(); ++i) {
    double v = figure(in.runs[i], metric);
    if (!std::isfinite(v)) continue;
    auto key = std::make_tuple(marker_kind(in.runs[i]), std::lround(s.x(position(in, i))),
                               std::lround(s.y(v)));
    auto [it, fresh] = markers.try_emplace(key, Marker{i, ""});
    if (fresh)
      order.push_back(key);
    else
      it->second.others += (it->second.others.empty() ? "" : ", ") + std::string("run ") +
                           std::to_string(in.runs[i].id);
  }
  std::string out;
  for (const auto& key : order) {
    const Marker& m = markers.at(key);
    const RunPoint& run = in.runs[m.first];
    std::string point =
        point_svg(run, s.x(position(in, m.first)), s.y(figure(run, metric)), metric);
    if (!m.others.empty())
      point.insert(point.find("</title>"), esc("; on the same spot: " + m.others));
    out += point;
  }
  return out;
}

std::string series_svg(const HtmlReportInput& in, const Scale& s, std::string_view metric) {
  std::string line = "<polyline class=\"series\" points=\"";
  std::string points;
  bool sampled = history_size(in) > in.runs.size();
  for (size_t i = 0; i < in.runs.size(); ++i) {
    double v = figure(in.runs[i], metric);
    if (!std::isfinite(v)) continue;
    double x = s.x(position(in, i));
    line += num(x) + "," + num(s.y(v)) + " ";
    if (!sampled) points += point_svg(in.runs[i], x, s.y(v), metric);
  }
  if (sampled) points = merged_points_svg(in, s, metric);
  return line + "\"/>" + points;
}

// A dashed vertical line where a change point of `metric` opened a new level,
// titled with the run, its commit, the step and its p-value.
std::string change_points_svg(const HtmlReportInput& in, const Scale& s, std::string_view metric) {
  std::string out;
  for (const RunChangePoint& cp : in.change_points) {
    if (cp.metric != metric) continue;
    auto at = std::find_if(in.runs.begin(), in.runs.end(),
                           [&](const RunPoint& run) { return run.id == cp.run_id; });
    if (at == in.runs.end()) continue;
    double x = s.x(position(in, static_cast<size_t>(at - in.runs.begin())));
    std::string text = "change point: run " + std::to_string(cp.run_id);
    if (!cp.commit.empty()) text += " commit " + report::short_id(cp.commit, 7);
    text += " " +
            (std::isnan(cp.size_pct) ? std::string("from 0") : report::format_change(cp.size_pct)) +
            " p=" + report::fixed(cp.p, 3);
    out += "<line class=\"change-point\" x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" +
           num(kTop) + "\" y2=\"" + num(kHeight - kBottom) + "\"><title>" + esc(text) +
           "</title></line>";
  }
  return out;
}

std::string chart(const HtmlReportInput& in, std::string_view metric) {
  Band band = band_of(in, metric);
  Scale s = scale_of(in, metric, band);
  std::string box = "0 0 " + num(kWidth) + " " + num(kHeight);
  return "<h2>" + esc(metric) +
         "</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" "
         "data-metric=\"" +
         esc(metric) + "\" viewBox=\"" + box + "\" width=\"" + num(kWidth) + "\" height=\"" +
         num(kHeight) + "\" role=\"img\"><title>" + esc(metric) + " over " +
         std::to_string(history_size(in)) + " runs</title>" + band_svg(band, s, metric) +
         axes_svg(in, s, metric) + change_points_svg(in, s, metric) + series_svg(in, s, metric) +
         "</svg>\n";
}

std::string row(const std::vector<std::string>& cells, const char* tag) {
  std::string out = "<tr>";
  for (const auto& c : cells) out += std::string("<") + tag + ">" + c + "</" + tag + ">";
  return out + "</tr>\n";
}

std::string table_row(const HtmlReportInput& in, const MetricDef& def) {
  MetricCheck c;
  c.metric = def.key;
  c.unit = def.unit;
  c.value = figure(in.runs.back(), def.key);
  if (auto t = in.thresholds.find(def.key); t != in.thresholds.end()) c.thresholds = t->second;
  if (in.baseline) c.baseline = figure(in.runs[*in.baseline], def.key);
  if (c.baseline && *c.baseline != 0) c.change_pct = (c.value - *c.baseline) / *c.baseline * 100;
  std::string base = c.baseline ? report::format_value(*c.baseline, c.unit) : "-";
  return row({esc(c.metric), esc(base), esc(report::format_value(c.value, c.unit)),
              esc(report::format_change(c.change_pct)), esc(report::format_limits(c))},
             "td");
}

std::string latest_summary(const HtmlReportInput& in) {
  const RunPoint& run = in.runs.back();
  std::string text = "Latest: run " + std::to_string(run.id) + " (" + run.created_at;
  if (!run.branch.empty()) text += ", branch " + run.branch;
  if (!run.commit.empty()) text += ", commit " + report::short_id(run.commit, 7);
  text += "), verdict " + std::string(to_string(run.verdict)) + "; baseline: ";
  text += in.baseline ? "run " + std::to_string(in.runs[*in.baseline].id) : "none";
  std::string out = "<p>" + esc(text) + "</p>\n";
  if (run.saturation.saturated)
    out += "<p class=\"warning\">" +
           esc("Saturated: " + report::join(run.saturation.reasons, "; ") +
               ". The load machine was the bottleneck; this run is inconclusive.") +
           "</p>\n";
  return out;
}

std::string latest_table(const HtmlReportInput& in) {
  if (in.runs.empty()) return "<p>No runs stored for this profile.</p>\n";
  std::string out = "<h2>Latest run against its baseline</h2>\n" + latest_summary(in);
  out += "<table>\n" + row({"metric", "baseline", "latest", "change", "limits"}, "th");
  for (const MetricDef& def : metric_defs()) out += table_row(in, def);
  // The service's CPU and the counted cost where the latest run has them: a
  // paired counted run's deciding metric was missing from its own page.
  for (auto defs : {host_metric_defs(), cost_metric_defs()})
    for (const MetricDef& def : defs)
      if (std::isfinite(figure(in.runs.back(), def.key))) out += table_row(in, def);
  return out + "</table>\n";
}

constexpr const char* kStyle = R"(<style>
body { font: 14px sans-serif; margin: 24px; color: #222; }
svg.chart { border: 1px solid #ddd; background: #fff; display: block; }
.band { fill: #2e7d32; fill-opacity: 0.12; }
.baseline { stroke: #2e7d32; stroke-dasharray: 4 3; }
.series { fill: none; stroke: #1565c0; stroke-width: 1.5; }
.point { fill: #1565c0; } .point.warn { fill: #f9a825; } .point.fail { fill: #c62828; }
.saturated { fill: none; stroke: #c62828; stroke-width: 2; }
.change-point { stroke: #6a1b9a; stroke-width: 1.5; stroke-dasharray: 6 3; }
.axis { font-size: 11px; fill: #555; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 4px 8px; }
td { text-align: right; } td:first-child { text-align: left; }
.warning { color: #c62828; }
</style>
)";

// What the charts leave out of a long history, and what pruning took away.
std::string sample_note(const HtmlReportInput& in) {
  std::string out;
  if (history_size(in) > in.runs.size())
    out += "<p>" +
           esc("The charts draw " + std::to_string(in.runs.size()) + " of the " +
               std::to_string(history_size(in)) +
               " runs: every failed or saturated one and an even sample of the others.") +
           "</p>\n";
  if (!in.pruned.empty()) out += "<p class=\"pruned\">" + esc("Pruned: " + in.pruned) + "</p>\n";
  return out;
}

}  // namespace

RunPoint run_point(const RunRecord& run) {
  RunPoint point{run.id,
                 run.created_at,
                 run.ci.commit,
                 run.ci.branch,
                 run.verdict,
                 run.saturation,
                 run_figures_of(run).summary,
                 std::nullopt};
  // A counted run's figure per cost metric: the median of its launches.
  for (const MetricDef& def : cost_metric_defs()) {
    auto values = run.cost.values(def.key);
    if (values.empty()) continue;
    std::sort(values.begin(), values.end());
    size_t n = values.size();
    point.metrics[std::string(def.key)] =
        n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  }
  return point;
}

HtmlReportInput html_input(const std::vector<RunRecord>& runs) {
  HtmlReportInput in;
  for (const RunRecord& run : runs) in.runs.push_back(run_point(run));
  if (runs.empty()) return in;
  in.profile_name = runs.back().profile_name;
  in.baseline = baseline_index(runs);
  in.thresholds = stored_thresholds(runs.back());
  auto history = main_history(runs, runs.back());
  if (!history.empty())
    in.change_points = history_change_points(history, gated_metrics(runs.back()));
  return in;
}

std::string html_report(const HtmlReportInput& in) {
  std::string title = "perfgate: " + in.profile_name;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
      esc(title) + "</title>\n" + kStyle + "</head>\n<body>\n<h1>" + esc(title) + "</h1>\n<p>" +
      std::to_string(history_size(in)) +
      " runs, oldest first. Shaded: the baseline with the warn limit either side; "
      "red squares: saturated runs (inconclusive); dashed purple lines: change points of "
      "the default branch's history.</p>\n" +
      sample_note(in);
  for (std::string_view metric : kCharted)
    if (measured(in, metric)) out += chart(in, metric);
  return out + latest_table(in) + "</body>\n</html>\n";
}

}  // namespace perfgate
