#include "perfgate/report/json_report.h"

#include <cmath>
#include <optional>
#include <string>

#include "perfgate/host/host_sampler.h"
#include "perfgate/report/report_format.h"

namespace perfgate {
namespace {

using nlohmann::json;

// JSON has no NaN or infinity; a figure that could not be computed is null.
json number(double value) {
  return std::isfinite(value) ? json(value) : json(nullptr);
}

json number(const std::optional<double>& value) {
  return value ? number(*value) : json(nullptr);
}

json id(const std::optional<int64_t>& value) {
  return value ? json(*value) : json(nullptr);
}

// An unknown fact is null rather than "", so that consumers test one thing.
json text_or_null(const std::string& text) {
  return text.empty() ? json(nullptr) : json(text);
}

// Only the limits the profile sets: an absent key means "no such limit".
json thresholds_json(const Thresholds& t) {
  json out = json::object();
  if (t.warn_pct) out["warn_pct"] = *t.warn_pct;
  if (t.fail_pct) out["fail_pct"] = *t.fail_pct;
  if (t.max) out["max"] = *t.max;
  if (t.min) out["min"] = *t.min;
  return out;
}

// The noise test behind the change; null when there was nothing to test.
json test_json(const std::optional<ChangeTest>& t) {
  if (!t) return nullptr;
  json out = {{"ci_low_pct", number(t->ci_low_pct)},
              {"ci_high_pct", number(t->ci_high_pct)},
              {"p_value", number(t->p_value)},
              {"significant", t->significant},
              {"n_now", t->n_now},
              {"n_baseline", t->n_base},
              {"baseline_runs", t->baseline_runs},
              {"method", t->method},
              {"estimate_pct", number(t->estimate_pct)},
              {"confidence_pct", number(t->confidence_pct)},
              {"reaches_level", t->reaches_level},
              {"unit", t->unit},
              {"spread", t->spread.empty() ? json(nullptr) : json(t->spread)},
              {"detectable_change_pct", number(t->detectable_pct)}};
  // A sequential look's fail bound; absent at one look, which judges the estimate.
  if (const auto& b = t->estimate_bound)
    out["estimate_bound"] = {{"confidence_pct", number(b->confidence_pct)},
                             {"ci_low_pct", number(b->ci_low_pct)},
                             {"ci_high_pct", number(b->ci_high_pct)}};
  return out;
}

json check_json(const MetricCheck& c) {
  return {{"value", number(c.value)},
          {"baseline", number(c.baseline)},
          {"change_pct", number(c.change_pct)},
          {"verdict", std::string(to_string(c.verdict))},
          {"unit", c.unit},
          {"thresholds", thresholds_json(c.thresholds)},
          {"gated", c.gated},
          {"message", c.message},
          {"inconclusive", c.inconclusive},
          {"test", test_json(c.test)},
          {"drift_pct", number(c.drift_pct)}};
}

// Profile names and environment values are arbitrary bytes, and dumping a json
// with invalid UTF-8 throws; every string (keys included) is made valid here.
json valid_strings(const json& j) {
  if (j.is_string()) return report::valid_utf8(j.get_ref<const std::string&>());
  if (!j.is_structured()) return j;
  json out = j.is_array() ? json::array() : json::object();
  for (const auto& [key, value] : j.items()) {
    if (j.is_array())
      out.push_back(valid_strings(value));
    else
      out[report::valid_utf8(key)] = valid_strings(value);
  }
  return out;
}

json profile_json(const GateResult& r) {
  return {{"name", r.profile_name}, {"hash", r.profile_hash}, {"source", r.profile_source}};
}

json baseline_json(const GateResult& r) {
  if (!r.baseline_run_id) return nullptr;
  json drift = nullptr;
  if (!r.drift_run_ids.empty()) drift = r.drift_run_ids;
  return {{"run_id", *r.baseline_run_id},
          {"commit", text_or_null(r.baseline_commit)},
          {"run_ids", r.baseline_run_ids},
          {"confidence_pct", r.confidence},
          {"drift_run_ids", drift}};
}

json ci_json(const CiContext& ci) {
  return {{"provider", ci.provider},
          {"commit", text_or_null(ci.commit)},
          {"branch", text_or_null(ci.branch)},
          {"baseline_branch", text_or_null(ci.baseline_branch)},
          {"pipeline_id", text_or_null(ci.pipeline_id)}};
}

json errors_json(const ErrorCounts& e) {
  json out = {{"connect", e.connect},
              {"read", e.read},
              {"write", e.write},
              {"timeout", e.timeout},
              {"other", e.other}};
  // Only when there were some: runs read back from the store do not keep them.
  if (e.invalid > 0) out["invalid_responses"] = {{"count", e.invalid}, {"text", e.invalid_text()}};
  return out;
}

json status_json(const StatusCounts& s) {
  json out = {{"other", s.of_class(0)}};
  for (int cls = 1; cls <= 5; ++cls) out[std::to_string(cls) + "xx"] = s.of_class(cls);
  return out;
}

json load_json(const GateResult& r) {
  return {{"engine", r.engine},
          {"threads", r.threads},
          {"connections", r.connections},
          {"iterations_kept", r.iterations_kept},
          {"iterations_total", r.iterations_total},
          {"kept_seconds", number(r.kept_seconds)},
          {"responses", r.totals.responses},
          {"bytes_read", r.totals.bytes_read},
          {"in_flight_at_end", r.in_flight_at_end ? json(*r.in_flight_at_end) : json(nullptr)},
          {"errors", errors_json(r.totals.errors)},
          {"status", status_json(r.totals.statuses)}};
}

// The fingerprint's fields as they are, plus the key that runs are matched on.
json host_json(const HostFingerprint& host) {
  json out = json::object();
  for (const auto& [name, value] : host.fields) out[name] = value;
  out["key"] = host.key();
  return out;
}

json saturation_json(const Saturation& s) {
  return {{"saturated", s.saturated}, {"reasons", s.reasons}};
}

// A merged run's shards, as merge found them; null for a run of one machine.
json shards_json(const std::vector<ShardSummary>& shards) {
  if (shards.empty()) return nullptr;
  json out = json::array();
  for (const auto& s : shards)
    out.push_back({{"index", s.spec.index},
                   {"count", s.spec.count},
                   {"source", s.source},
                   {"host_key", s.host_key},
                   {"engine", s.engine},
                   {"connections", s.connections},
                   {"responses", s.responses},
                   {"throughput_rps", number(s.throughput_rps)},
                   {"saturated", s.saturated},
                   {"measured_from_ms", s.measured_from_ms},
                   {"measured_to_ms", s.measured_to_ms}});
  return out;
}

// How far a sequential run went and why it stopped.
json sequential_json(const SequentialSummary& s) {
  json levels = json::array(), estimate_levels = json::array();
  for (double level : s.look_levels) levels.push_back(number(level));
  for (double level : s.estimate_levels) estimate_levels.push_back(number(level));
  return {{"unit", s.unit},
          {"planned", s.planned},
          {"max_count", s.max_count},
          {"taken", s.taken},
          {"looks", s.looks},
          {"look_confidence_pct", number(s.look_confidence)},
          {"stopped", s.stopped},
          {"boundary", s.boundary},
          {"stop_look", s.stop_look},
          {"look_levels_pct", levels},
          {"futility", s.futility},
          {"estimate_confidence_pct", number(s.estimate_confidence)},
          {"estimate_levels_pct", estimate_levels}};
}

// A paired run's other side; null for a run judged against stored runs.
json paired_json(const std::optional<PairedSummary>& p) {
  if (!p) return nullptr;
  return {{"baseline_url", p->baseline_url},
          {"baseline_commit", p->baseline_commit},
          {"baseline_run_id", id(p->baseline_run_id)},
          {"pair", p->pair},
          {"pairs", p->pairs},
          {"leg_warmup_s", number(p->leg_warmup_s)}};
}

json launches_json(const std::vector<MetricSet>& launches) {
  json out = json::array();
  for (const auto& launch : launches) {
    json one = json::object();
    for (const auto& [metric, value] : launch) one[metric] = number(value);
    out.push_back(one);
  }
  return out;
}

// The cost phase: per launch counts and their spread; null when it was off.
json cost_json(const CostRun& c) {
  if (!c.ran() && c.skipped.empty()) return nullptr;
  json launches = launches_json(c.launches);
  json spread = json::object();
  for (const auto& def : cost_metric_defs())
    if (!c.values(def.key).empty()) spread[std::string(def.key)] = number(c.spread_pct(def.key));
  return {{"instrument", c.instrument},
          {"key", c.key},
          {"requests", c.requests},
          {"connections", c.connections},
          {"launches", launches},
          {"spread_pct", spread},
          {"skipped", c.skipped.empty() ? json(nullptr) : json(c.skipped)},
          {"seconds", number(c.seconds)}};
}

json error_json(const GateResult& r) {
  if (r.verdict != Verdict::kError) return nullptr;
  return r.error.empty() ? "no verdict could be made" : r.error;
}

}  // namespace

json metrics_json(const std::vector<MetricCheck>& checks) {
  json out = json::object();
  for (const MetricCheck& check : checks) out[check.metric] = check_json(check);
  return valid_strings(out);
}

// What the load machine did while measuring (the sampler's summary); null when
// nothing was sampled.
json load_machine_json(const HostSummary& h) {
  if (h.samples == 0) return nullptr;
  json out = {{"samples", h.samples},
              {"host_cpu_mean_pct", number(h.host_cpu_mean_pct)},
              {"host_cpu_max_pct", number(h.host_cpu_max_pct)},
              {"steal_max_pct", number(h.steal_max_pct)},
              {"generator_thread_max_pct", number(h.generator_thread_max_pct)},
              {"foreign_cpu_max_pct", number(h.foreign_cpu_max_pct)},
              {"memory_available_min_pct", number(h.memory_available_min_pct)},
              {"cpu_pressure_max_pct", number(h.cpu_pressure_max_pct)},
              {"shared_cpu_pct", number(h.shared_cpu_pct)},
              {"placement_class", placing_share(h.shared_cpu_pct, h.samples)
                                      ? json(placement_class(*h.shared_cpu_pct))
                                      : json(nullptr)},
              {"service_cpu_us_per_request", number(h.service_cpu_us_per_request)},
              {"doctor_warnings", h.doctor_warnings}};
  // Only when one was attributed: reports of runs without one stay as they were.
  if (h.service)
    out["service"] = {{"name", h.service->name},
                      {"pid", h.service->pid ? json(h.service->pid) : json(nullptr)},
                      {"listener", h.service->listener},
                      {"cgroup", h.service->cgroup},
                      {"how", h.service->how},
                      {"description", h.service->describe()}};
  return out;
}

json json_report(const GateResult& result) {
  json out = {{"verdict", std::string(to_string(result.verdict))},
              {"exit_code", to_int(result.exit_code)},
              {"run_id", id(result.run_id)},
              {"recorded", result.recorded},
              {"profile", profile_json(result)},
              {"target_url", result.target_url},
              {"started_at", result.started_at},
              {"duration_s", number(result.duration_s)},
              {"baseline", baseline_json(result)},
              {"ci", ci_json(result.ci)},
              {"load", load_json(result)},
              {"metrics", metrics_json(result.checks)},
              {"saturation", saturation_json(result.saturation)},
              {"load_machine", load_machine_json(result.host_summary)},
              {"host", host_json(result.host)},
              {"notes", result.notes},
              {"error", error_json(result)},
              {"shards", shards_json(result.shards)},
              {"paired", paired_json(result.paired)}};
  if (result.sequential) out["sequential"] = sequential_json(*result.sequential);
  if (auto cost = cost_json(result.cost); !cost.is_null()) {
    // Paired: both sides' launches, so that a reader can judge them again.
    if (result.paired && result.paired->baseline_cost.ran())
      cost["baseline_launches"] = launches_json(result.paired->baseline_cost.launches);
    out["cost"] = valid_strings(cost);
  }
  if (result.shard) out["shard"] = shard_json(*result.shard);
  return valid_strings(out);
}

}  // namespace perfgate
