#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/metrics.h"
#include "perfgate/core/verdict.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/run_record.h"

namespace perfgate {

/// One stored run as the HTML report draws it: its figures and what marks it.
struct RunPoint {
  int64_t id = 0;
  std::string created_at;
  std::string commit;
  std::string branch;
  Verdict verdict = Verdict::kPass;
  Saturation saturation;
  MetricSet metrics;  // its figures, as the gate reads them (stored_run_figures)
  /// Its place in the whole history, oldest first, when the report draws a
  /// sample of a longer one (chart_sample.h); nullopt: its index in `runs`.
  std::optional<size_t> position;
};

/// What the report shows: the runs of one series and the latest one's baseline.
struct HtmlReportInput {
  std::string profile_name;
  std::vector<RunPoint> runs;      // oldest first; the last one is "the latest"
  std::optional<size_t> baseline;  // index in `runs` of the latest run's baseline
  ThresholdSet thresholds;         // the latest run's limits: the band around the baseline
  /// Runs in the whole history when `runs` is a sample of it; 0: `runs` is all.
  size_t history_size = 0;
  /// What `store prune` deleted (pruned_summary()); empty when nothing.
  std::string pruned;
  /// Change points of the latest run's default-branch history among `runs`
  /// (history_change_points()): a dashed vertical line in that metric's chart.
  std::vector<RunChangePoint> change_points;
};

/// Summarizes a stored run; its iterations must be loaded (BaselineStore::run()).
RunPoint run_point(const RunRecord& run);

/// The report's input from stored runs, oldest first (iterations loaded): the
/// baseline is picked as the gate picks it (the newest earlier run eligible as a
/// baseline, same hash and host, on the latest run's baseline branch), and the
/// limits come from the latest run's stored profile (none when it does not parse).
/// The change points are those of the default branch's runs among `runs`
/// (main_history()), in the metrics the latest run gates.
HtmlReportInput html_input(const std::vector<RunRecord>& runs);

/// One self-contained HTML page: an inline SVG trend chart per metric (throughput,
/// p50, p99, error rate; the service's CPU per request when the runs measured it) with
/// the baseline band, saturated runs and change points marked, then a
/// table of the latest run against its baseline. A sample of a longer history is
/// drawn at its places in it; there, points of one kind that fall on the same
/// pixel are one marker whose title names every run in it, so the file stays
/// small and no failed or saturated run is hidden. No scripts, no network: every
/// text is escaped and the only URL is the SVG namespace.
std::string html_report(const HtmlReportInput& input);

}  // namespace perfgate
