#pragma once

#include <string>

#include "perfgate/report/gate_result.h"

namespace perfgate {

/// The k6 summary (`k6 run --summary-export`) that GitLab's merge request widget
/// reads from `artifacts:reports:load_performance`: `metrics.http_reqs` (count,
/// rate), `metrics.http_req_waiting` (avg, min, med, max, "p(90)", "p(95)" in ms)
/// and `metrics.checks` (passes, fails, value).
///
/// Mapping: `http_reqs.rate` is the gated throughput_rps (median of the kept
/// iterations). `http_req_waiting` comes from the kept iterations' merged latency
/// histogram, every request counted once as k6 does; perfgate times the whole
/// request (send to last byte), which is TTFB plus the body's transfer. When the
/// result carries no histogram, only the figures perfgate gated are written
/// (med, p(90), max) and "p(95)" is left out rather than guessed. `checks` counts
/// the gated metrics: pass and warn are passes, fail and error are fails.
std::string gitlab_load_performance(const GateResult& result);

}  // namespace perfgate
