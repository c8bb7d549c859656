#include "perfgate/store/run_record.h"

#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "perfgate/core/checked.h"
#include "perfgate/core/error.h"
#include "perfgate/profile/json_text.h"
#include "perfgate/profile/text_limits.h"
#include "perfgate/store/cost_record.h"

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

// Every field of an imported run is checked as it is read: a count that is
// negative or too large would wrap (-1 becomes 2^64-1, then a CI of +3.9e18 %),
// a text without bound fills the history's table, and a type error would
// surface in nlohmann's words. Each error names the field.
constexpr size_t kShortText = kMaxCiTextBytes;   // names, branch, commit, times, states
constexpr size_t kReasonText = kMaxReasonBytes;  // a reviewer's or saturation reason
constexpr size_t kLongText = 16 * 1024 * 1024;   // the profile, host samples, a histogram
// Counts stay exact in a double (the statistics' type): 2^53.
constexpr uint64_t kLargestCount = uint64_t{1} << 53;

std::string type_name(const json& j) {
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number_float()) return "a number with a fraction or exponent";
  return std::string(j.is_null() ? "null" : j.is_string() ? "a string" : j.type_name());
}

const json& field(const json& j, std::string_view key, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": must be an object, got " + type_name(j));
  auto it = j.find(std::string(key));
  if (it == j.end())
    throw Error((where.empty() ? "" : where + ".") + std::string(key) + ": missing");
  return *it;
}

std::string path_of(const std::string& where, std::string_view key) {
  return where.empty() ? std::string(key) : where + "." + std::string(key);
}

uint64_t count_value(const json& v, const std::string& name, uint64_t max = kLargestCount) {
  bool negative = v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0;
  if (!v.is_number_integer() || negative || v.get<uint64_t>() > max)
    throw Error(name + ": must be an integer from 0 to " + std::to_string(max) + ", got " +
                (v.is_number() ? short_number(v.get<double>()) : type_name(v)));
  return v.get<uint64_t>();
}

uint64_t count_at(const json& j, std::string_view key, const std::string& where,
                  uint64_t max = kLargestCount) {
  return count_value(field(j, key, where), path_of(where, key), max);
}

int int_at(const json& j, std::string_view key, const std::string& where) {
  return static_cast<int>(count_at(j, key, where, std::numeric_limits<int>::max()));
}

std::string text_value(const json& v, const std::string& name, size_t limit) {
  if (!v.is_string()) throw Error(name + ": must be a string, got " + type_name(v));
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > limit)
    throw Error(name + ": " + std::to_string(s.size()) + " bytes, more than the " +
                std::to_string(limit / 1024) + " KiB a run's " +
                (limit == kShortText ? "name or label" : "text") + " may hold");
  return s;
}

std::string text_at(const json& j, std::string_view key, const std::string& where,
                    size_t limit = kShortText) {
  return text_value(field(j, key, where), path_of(where, key), limit);
}

bool bool_at(const json& j, std::string_view key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_boolean())
    throw Error(path_of(where, key) + ": must be true or false, got " + type_name(v));
  return v.get<bool>();
}

const json& array_at(const json& j, std::string_view key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_array()) throw Error(path_of(where, key) + ": must be an array, got " + type_name(v));
  return v;
}

std::vector<std::string> texts_at(const json& j, std::string_view key, const std::string& where,
                                  size_t limit) {
  std::vector<std::string> out;
  const auto& list = array_at(j, key, where);
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(text_value(list[i], path_of(where, key) + "[" + std::to_string(i) + "]", limit));
  return out;
}

template <size_t N>
std::array<uint64_t, N> counts_at(const json& j, std::string_view key, const std::string& where) {
  const auto& list = array_at(j, key, where);
  auto name = path_of(where, key);
  if (list.size() != N)
    throw Error(name + ": must hold " + std::to_string(N) + " counts, got " +
                std::to_string(list.size()));
  std::array<uint64_t, N> out{};
  for (size_t i = 0; i < N; ++i)
    out[i] = count_value(list[i], name + "[" + std::to_string(i) + "]");
  return out;
}

// A window's time is its throughput's denominator: 1000 responses in 1 ns are
// 1e12 req/s, which would stand as a baseline no build could ever reach.
// 1e8 req/s is far past any load machine (wrk on 64 cores does a few million).
constexpr double kMaxPlausibleRps = 1e8;

void check_window_time(const Iteration& it, const std::string& where) {
  if (it.duration.count() == 0 && it.stats.responses > 0)
    throw Error(where + ".duration_ns: 0 for " + std::to_string(it.stats.responses) +
                " responses; a window that answered took time");
  double seconds = static_cast<double>(it.duration.count()) / 1e9;
  if (it.stats.responses > 0 &&
      static_cast<double>(it.stats.responses) / seconds > kMaxPlausibleRps)
    throw Error(where + ": " + std::to_string(it.stats.responses) + " responses in " +
                std::to_string(it.duration.count()) +
                " ns is past any load machine's throughput (1e8 req/s at most); is duration_ns "
                "in nanoseconds?");
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

Iteration iteration_from(const json& j, const std::string& where) {
  Iteration it;
  it.index = int_at(j, "index", where);
  it.discarded = bool_at(j, "discarded", where);
  it.duration = Nanos(
      static_cast<int64_t>(count_at(j, "duration_ns", where, std::numeric_limits<int64_t>::max())));
  auto& s = it.stats;
  s.responses = count_at(j, "responses", where);
  s.bytes_read = count_at(j, "bytes_read", where);
  auto e = counts_at<5>(j, "errors", where);
  s.errors =
      ErrorCounts{.connect = e[0], .read = e[1], .write = e[2], .timeout = e[3], .other = e[4]};
  s.statuses.by_class = counts_at<6>(j, "statuses", where);
  check_window_time(it, where);
  auto latency = text_at(j, "latency", where, kLongText);
  try {
    s.latency = LatencyHistogram::deserialize(base64_decode(latency));
  } catch (const Error& e) {
    throw Error(where + ".latency: " + e.what());
  }
  return it;
}

Verdict verdict_from(const std::string& name) {
  for (auto v : {Verdict::kPass, Verdict::kWarn, Verdict::kFail, Verdict::kError})
    if (to_string(v) == name) return v;
  throw Error("verdict must be \"pass\", \"warn\", \"fail\" or \"error\", got \"" + name + "\"");
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
  ci.provider = text_at(j, "provider", "ci");
  ci.commit = text_at(j, "commit", "ci");
  ci.branch = text_at(j, "branch", "ci");
  ci.baseline_branch = text_at(j, "baseline_branch", "ci");
  ci.pipeline_id = text_at(j, "pipeline_id", "ci");
  return ci;
}

void read_iterations(const json& list, RunRecord& run) {
  // A run without iterations has nothing to judge, and two with one index
  // would meet the store's key as SQLite's "UNIQUE constraint failed".
  // (An aborted run may have none: the store keeps what a signal cut short.)
  if (list.empty() && run.status != "aborted")
    throw Error("iterations: a " + run.status + " run needs at least one iteration, got none");
  bool every_cpu = true;
  std::set<int> indices;
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& j = list[i];
    auto where = "iterations[" + std::to_string(i) + "]";
    run.iterations.push_back(iteration_from(j, where));
    if (!indices.insert(run.iterations.back().index).second)
      throw Error(where + ".index: " + std::to_string(run.iterations.back().index) +
                  " again; each iteration's index is its own");
    every_cpu = every_cpu && j.contains("service_cpu_s");
    if (j.contains("service_cpu_s")) {
      const auto& cpu = j["service_cpu_s"];
      if (!cpu.is_number() || !(cpu.get<double>() >= 0))
        throw Error(where + ".service_cpu_s: must be a number of seconds, 0 or more");
      run.service_cpu_s.push_back(cpu.get<double>());
    }
  }
  if (!every_cpu) run.service_cpu_s.clear();
}

std::map<std::string, std::string> host_from(const json& j) {
  if (!j.is_object()) throw Error("host: must be an object, got " + type_name(j));
  std::map<std::string, std::string> fields;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (key.size() > kShortText)
      throw Error("host: a key of " + std::to_string(key.size()) + " bytes, more than 1 KiB");
    fields[key] = text_value(it.value(), "host." + key.substr(0, 64), kShortText);
  }
  return fields;
}

std::string optional_text(const json& j, std::string_view key, size_t limit = kShortText) {
  return j.contains(std::string(key)) ? text_at(j, key, "", limit) : std::string();
}

RunRecord run_from(const json& j) {
  if (!j.is_object()) throw Error("must be a JSON object, got " + type_name(j));
  RunRecord run;
  run.id = j.contains("id") ? static_cast<int64_t>(count_at(j, "id", "")) : 0;
  run.created_at = text_at(j, "created_at", "");
  run.profile_name = text_at(j, "profile_name", "");
  run.profile_hash = text_at(j, "profile_hash", "");
  run.profile_json = text_at(j, "profile_json", "", kLongText);
  run.ci = ci_from(field(j, "ci", ""));
  run.host.fields = host_from(field(j, "host", ""));
  run.engine = text_at(j, "engine", "");
  run.threads = int_at(j, "threads", "");
  run.connections = int_at(j, "connections", "");
  run.verdict = verdict_from(text_at(j, "verdict", ""));
  // Exports before issue 46 do not say: their warns and fails count as
  // regressions, as the store's migration counts them.
  run.regressed =
      j.contains("regressed") ? bool_at(j, "regressed", "") : run.verdict != Verdict::kPass;
  const auto& saturation = field(j, "saturation", "");
  run.saturation.saturated = bool_at(saturation, "saturated", "saturation");
  run.saturation.reasons = texts_at(saturation, "reasons", "saturation", kReasonText);
  // Exports before paired mode's busy-host findings have none.
  if (saturation.contains("shared"))
    run.saturation.shared = texts_at(saturation, "shared", "saturation", kReasonText);
  run.status = text_at(j, "status", "");
  if (run.status != "complete" && run.status != "aborted")
    throw Error("status must be \"complete\" or \"aborted\", got \"" + run.status + "\"");
  // Exports of schema 2 stores have neither: a gate run nobody reviewed.
  run.kind = j.contains("kind") ? text_at(j, "kind", "") : std::string("gate");
  if (j.contains("review")) {
    const auto& r = j.at("review");
    run.review = {text_at(r, "state", "review"), text_at(r, "reason", "review", kReasonText),
                  text_at(r, "by", "review"), text_at(r, "at", "review")};
  }
  run.pair = optional_text(j, "pair");
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
  run.host_samples_json = optional_text(j, "host_samples", kLongText);
  if (j.contains("cost")) run.cost = cost_from_json(j.at("cost").dump());
  read_iterations(array_at(j, "iterations", ""), run);
  return run;
}

}  // namespace

bool RunRecord::eligible_as_baseline() const {
  bool usable = status == "complete" && kind == "gate" && !saturation.saturated;
  bool no_regression = verdict == Verdict::kPass || (verdict == Verdict::kWarn && !regressed);
  return usable && review.state != "rejected" && (no_regression || review.state == "accepted");
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
            {"regressed", run.regressed},
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
  if (auto cost = cost_to_json(run.cost); !cost.empty()) j["cost"] = json::parse(cost);
  if (with_id) j["id"] = run.id;
  return json_text(j);
}

RunRecord run_from_json_line(std::string_view line) {
  try {
    return run_from(parse_json(line, "the run"));
  } catch (const json::exception& e) {
    // nlohmann's "[json.exception.parse_error.101] " is no word of perfgate's.
    std::string what = e.what();
    auto tag_end = what.find("] ");
    if (what.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos)
      what = what.substr(tag_end + 2);
    throw Error(e.id >= 100 && e.id < 200 ? "not JSON: " + what : what);
  }
}

}  // namespace perfgate
