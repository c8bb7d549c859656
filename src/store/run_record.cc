#include "perfgate/store/run_record.h"

#include <array>
#include <nlohmann/json.hpp>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

using nlohmann::json;

constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 2]);
    for (size_t k = 0; k < 4; ++k)
      out += i + k <= bytes.size() + (k == 0) ? kBase64[(n >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

int base64_value(char c) {
  auto pos = kBase64.find(c);
  if (pos == std::string_view::npos) throw Error("histogram is not valid base64");
  return static_cast<int>(pos);
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) throw Error("histogram is not valid base64");
  std::string out;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t n = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      bool is_pad = text[i + k] == '=' && k >= 2 && i + 4 == text.size();
      pad += is_pad;
      n = (n << 6) | static_cast<uint32_t>(is_pad ? 0 : base64_value(text[i + k]));
    }
    out += static_cast<char>(n >> 16);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

json iteration_json(const Iteration& it, const RunRecord& run, size_t i) {
  const auto& s = it.stats;
  json j = {{"index", it.index},
            {"discarded", it.discarded},
            {"duration_ns", it.duration.count()},
            {"responses", s.responses},
            {"bytes_read", s.bytes_read},
            {"errors",
             {s.errors.connect, s.errors.read, s.errors.write, s.errors.timeout, s.errors.other}},
            {"statuses", s.statuses.stored_classes()},
            {"latency", base64_encode(s.latency.serialize())}};
  if (i < run.service_cpu_s.size()) j["service_cpu_s"] = run.service_cpu_s[i];
  return j;
}

Iteration iteration_from(const json& j) {
  Iteration it;
  it.index = j.at("index").get<int>();
  it.discarded = j.at("discarded").get<bool>();
  it.duration = Nanos(j.at("duration_ns").get<int64_t>());
  auto& s = it.stats;
  s.responses = j.at("responses").get<uint64_t>();
  s.bytes_read = j.at("bytes_read").get<uint64_t>();
  auto e = j.at("errors").get<std::array<uint64_t, 5>>();
  s.errors =
      ErrorCounts{.connect = e[0], .read = e[1], .write = e[2], .timeout = e[3], .other = e[4]};
  s.statuses.by_class = j.at("statuses").get<std::array<uint64_t, 6>>();
  s.latency = LatencyHistogram::deserialize(base64_decode(j.at("latency").get<std::string>()));
  return it;
}

Verdict verdict_from(const std::string& name) {
  for (auto v : {Verdict::kPass, Verdict::kWarn, Verdict::kFail, Verdict::kError})
    if (to_string(v) == name) return v;
  throw Error("unknown verdict \"" + name + "\"");
}

json ci_json(const CiContext& ci) {
  return {{"provider", ci.provider},
          {"commit", ci.commit},
          {"branch", ci.branch},
          {"baseline_branch", ci.baseline_branch},
          {"pipeline_id", ci.pipeline_id}};
}

CiContext ci_from(const json& j) {
  CiContext ci;
  ci.provider = j.at("provider").get<std::string>();
  ci.commit = j.at("commit").get<std::string>();
  ci.branch = j.at("branch").get<std::string>();
  ci.baseline_branch = j.at("baseline_branch").get<std::string>();
  ci.pipeline_id = j.at("pipeline_id").get<std::string>();
  return ci;
}

void read_iterations(const json& list, RunRecord& run) {
  bool every_cpu = true;
  for (const auto& j : list) {
    run.iterations.push_back(iteration_from(j));
    every_cpu = every_cpu && j.contains("service_cpu_s");
    if (j.contains("service_cpu_s")) run.service_cpu_s.push_back(j["service_cpu_s"].get<double>());
  }
  if (!every_cpu) run.service_cpu_s.clear();
}

RunRecord run_from(const json& j) {
  RunRecord run;
  run.id = j.value("id", int64_t{0});
  run.created_at = j.at("created_at").get<std::string>();
  run.profile_name = j.at("profile_name").get<std::string>();
  run.profile_hash = j.at("profile_hash").get<std::string>();
  run.profile_json = j.at("profile_json").get<std::string>();
  run.ci = ci_from(j.at("ci"));
  run.host.fields = j.at("host").get<std::map<std::string, std::string>>();
  run.engine = j.at("engine").get<std::string>();
  run.threads = j.at("threads").get<int>();
  run.connections = j.at("connections").get<int>();
  run.verdict = verdict_from(j.at("verdict").get<std::string>());
  run.saturation.saturated = j.at("saturation").at("saturated").get<bool>();
  run.saturation.reasons = j.at("saturation").at("reasons").get<std::vector<std::string>>();
  // Exports before paired mode's busy-host findings have none.
  run.saturation.shared = j.at("saturation").value("shared", std::vector<std::string>{});
  run.status = j.at("status").get<std::string>();
  // Exports of schema 2 stores have neither: a gate run nobody reviewed.
  run.kind = j.value("kind", std::string("gate"));
  if (j.contains("review")) {
    const auto& r = j.at("review");
    run.review = {r.at("state").get<std::string>(), r.at("reason").get<std::string>(),
                  r.at("by").get<std::string>(), r.at("at").get<std::string>()};
  }
  run.pair = j.value("pair", std::string());
  bool paired = run.kind == "paired" || run.kind == "paired-baseline";
  if (run.kind != "gate" && run.kind != "calibration" && !paired)
    throw Error(
        "kind must be \"gate\", \"calibration\", \"paired\" or \"paired-baseline\", got \"" +
        run.kind + "\"");
  if (paired == run.pair.empty())
    throw Error(paired ? "a " + run.kind + " run needs its pair key"
                       : "a " + run.kind + " run has no pair key, got \"" + run.pair + "\"");
  if (!run.review.state.empty() && run.review.state != "accepted" && run.review.state != "rejected")
    throw Error("review.state must be \"accepted\", \"rejected\" or \"\", got \"" +
                run.review.state + "\"");
  run.host_samples_json = j.value("host_samples", std::string());
  read_iterations(j.at("iterations"), run);
  return run;
}

}  // namespace

bool RunRecord::eligible_as_baseline() const {
  bool judged_ok = verdict == Verdict::kPass || verdict == Verdict::kWarn;
  bool usable = status == "complete" && kind == "gate" && !saturation.saturated;
  return usable && review.state != "rejected" && (judged_ok || review.state == "accepted");
}

std::string to_json_line(const RunRecord& run, bool with_id) {
  json iterations = json::array();
  for (size_t i = 0; i < run.iterations.size(); ++i)
    iterations.push_back(iteration_json(run.iterations[i], run, i));
  json j = {{"created_at", run.created_at},
            {"profile_name", run.profile_name},
            {"profile_hash", run.profile_hash},
            {"profile_json", run.profile_json},
            {"ci", ci_json(run.ci)},
            {"host", run.host.fields},
            {"engine", run.engine},
            {"threads", run.threads},
            {"connections", run.connections},
            {"verdict", to_string(run.verdict)},
            {"saturation",
             {{"saturated", run.saturation.saturated},
              {"reasons", run.saturation.reasons},
              {"shared", run.saturation.shared}}},
            {"status", run.status},
            {"kind", run.kind},
            {"review",
             {{"state", run.review.state},
              {"reason", run.review.reason},
              {"by", run.review.by},
              {"at", run.review.at}}},
            {"host_samples", run.host_samples_json},
            {"iterations", iterations}};
  if (!run.pair.empty()) j["pair"] = run.pair;
  if (with_id) j["id"] = run.id;
  return j.dump();
}

RunRecord run_from_json_line(std::string_view line) {
  try {
    return run_from(json::parse(line));
  } catch (const json::exception& e) {
    throw Error(e.what());
  }
}

}  // namespace perfgate
