#include "perfgate/report/gitlab_report.h"
#include "perfgate/profile/json_text.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

namespace perfgate {
namespace {

using nlohmann::json;

double ms(uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

const MetricCheck* find_check(const GateResult& r, std::string_view metric) {
  for (const MetricCheck& c : r.checks)
    if (c.metric == metric) return &c;
  return nullptr;
}

// JSON has no NaN: a figure that could not be computed is left out.
void put(json& out, const char* key, const MetricCheck* check) {
  if (check && std::isfinite(check->value)) out[key] = check->value;
}

// Every request of the kept iterations counted once, as k6 computes its trends.
json waiting_from_histogram(const LatencyHistogram& h) {
  return {{"avg", h.mean_ns() / 1e6},         {"min", ms(h.min_ns())},
          {"med", ms(h.percentile_ns(50))},   {"max", ms(h.max_ns())},
          {"p(90)", ms(h.percentile_ns(90))}, {"p(95)", ms(h.percentile_ns(95))}};
}

// Without a histogram only the gated figures are known; p(95) is not one of them.
json waiting_from_checks(const GateResult& r) {
  json out = json::object();
  put(out, "med", find_check(r, "latency_p50_ms"));
  put(out, "p(90)", find_check(r, "latency_p90_ms"));
  put(out, "max", find_check(r, "latency_max_ms"));
  return out;
}

json http_reqs(const GateResult& r) {
  json out = {{"count", r.totals.attempts()}};
  put(out, "rate", find_check(r, "throughput_rps"));
  return out;
}

// k6's `checks` is a Rate: `value` is the share of passes.
json checks(const GateResult& r) {
  int passes = 0;
  int fails = r.verdict == Verdict::kError ? 1 : 0;
  for (const MetricCheck& c : r.checks) {
    if (!c.gated) continue;
    bool failed = c.verdict == Verdict::kFail || c.verdict == Verdict::kError;
    (failed ? fails : passes) += 1;
  }
  double value = passes + fails ? static_cast<double>(passes) / (passes + fails) : 0.0;
  return {{"passes", passes}, {"fails", fails}, {"value", value}};
}

}  // namespace

std::string gitlab_load_performance(const GateResult& result) {
  json metrics = {{"checks", checks(result)}};
  // An error has no figures: writing zeros would show as a collapse in the widget.
  if (result.verdict != Verdict::kError) {
    metrics["http_reqs"] = http_reqs(result);
    metrics["http_req_waiting"] = result.totals.latency.empty()
                                      ? waiting_from_checks(result)
                                      : waiting_from_histogram(result.totals.latency);
  }
  return json_text(json{{"metrics", metrics}}, 2) + "\n";
}

}  // namespace perfgate
