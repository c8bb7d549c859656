#include "perfgate/store/shard.h"
#include "perfgate/core/bounded_read.h"
#include "perfgate/profile/json_text.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "perfgate/core/checked.h"
#include "perfgate/core/error.h"
#include "perfgate/core/metrics.h"

namespace perfgate {
namespace {

using nlohmann::json;
using SystemClock = std::chrono::system_clock;

// The shard file's own version, apart from the result's: merge must refuse a
// file whose `run` it would misread.
constexpr int kShardFormat = 1;

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string iso_utc(int64_t unix_ms) {
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[80];  // room for any int the compiler imagines
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_ms % 1000));
  return buf;
}

std::string span_text(const ShardFile& s) {
  return iso_utc(s.measured_from_ms) + " to " + iso_utc(s.measured_to_ms);
}

ShardSummary summarize(const ShardFile& s) {
  ShardSummary out;
  out.spec = s.spec;
  out.source = s.source;
  out.host_key = s.run.host.key();
  out.engine = s.run.engine;
  out.connections = s.run.connections;
  out.saturated = s.run.saturation.saturated;
  out.measured_from_ms = s.measured_from_ms;
  out.measured_to_ms = s.measured_to_ms;
  std::vector<double> rates;
  for (const auto& it : s.run.iterations) {
    if (it.discarded) continue;
    out.responses += it.stats.responses;
    rates.push_back(it.throughput_rps());
  }
  out.throughput_rps = median(rates);
  return out;
}

// Every index once, one count for all: the shards of one run, all of them.
void check_indices(const std::vector<ShardFile>& shards) {
  const auto& first = shards.front();
  std::map<int, const ShardFile*> by_index;
  for (const auto& s : shards) {
    if (s.spec.count != first.spec.count)
      throw Error(s.source + ": shard " + s.spec.text() + ", but " + first.source + " is shard " +
                  first.spec.text() + ": not shards of one run");
    auto [it, fresh] = by_index.emplace(s.spec.index, &s);
    if (!fresh)
      throw Error(s.source + ": shard " + s.spec.text() + " again (" + it->second->source +
                  " is shard " + s.spec.text() + " too)");
  }
  for (int i = 1; i <= first.spec.count; ++i)
    if (!by_index.count(i))
      throw Error("shard " + std::to_string(i) + "/" + std::to_string(first.spec.count) +
                  " is missing: " + std::to_string(shards.size()) + " of " +
                  std::to_string(first.spec.count) + " shard files given");
}

void check_same_run(const ShardFile& s, const ShardFile& first) {
  const auto& a = first.run;
  const auto& b = s.run;
  if (b.profile_hash != a.profile_hash || b.profile_name != a.profile_name)
    throw Error(s.source + ": profile \"" + b.profile_name + "\" (hash " +
                b.profile_hash.substr(0, 12) + ") is not " + first.source + "'s \"" +
                a.profile_name + "\" (hash " + a.profile_hash.substr(0, 12) + ")");
  if (b.iterations.size() != a.iterations.size())
    throw Error(s.source + ": " + std::to_string(b.iterations.size()) + " iterations, but " +
                first.source + " has " + std::to_string(a.iterations.size()));
  if (!a.ci.commit.empty() && !b.ci.commit.empty() && a.ci.commit != b.ci.commit)
    throw Error(s.source + ": commit " + b.ci.commit + ", but " + first.source + " measured " +
                a.ci.commit);
  if (b.status != "complete")
    throw Error(s.source + ": the shard's run is " + b.status + ", not complete");
}

// Shards that loaded the service at different times measured different loads;
// their sum would describe a load that never happened.
std::optional<std::string> check_overlap(const std::vector<ShardFile>& shards) {
  int64_t from = INT64_MIN, to = INT64_MAX, shortest = INT64_MAX;
  const ShardFile *latest_start = nullptr, *earliest_end = nullptr;
  for (const auto& s : shards) {
    if (s.measured_from_ms > from) from = s.measured_from_ms, latest_start = &s;
    if (s.measured_to_ms < to) to = s.measured_to_ms, earliest_end = &s;
    shortest = std::min(shortest, s.measured_to_ms - s.measured_from_ms);
  }
  int64_t overlap = to - from;
  if (shortest <= 0 || overlap * 2 < shortest)
    throw Error("the shards' measurements do not overlap by half: " + earliest_end->source +
                " measured " + span_text(*earliest_end) + ", " + latest_start->source + " " +
                span_text(*latest_start) + "; start the shards with one --start-at");
  double pct = 100.0 * static_cast<double>(overlap) / static_cast<double>(shortest);
  if (pct >= 95) return std::nullopt;
  char text[120];
  std::snprintf(text, sizeof text,
                "the shards' measurements overlap by %.0f %% only; use one --start-at", pct);
  return std::string(text);
}

// The merged window lasts as long as makes the merged throughput the sum of
// the shards' rates: they ran side by side, so their rates add up.
Nanos merged_duration(const std::vector<const Iteration*>& parts, uint64_t responses) {
  double rate = 0;
  Nanos longest{0};
  for (const auto* it : parts) {
    rate += it->throughput_rps();
    longest = std::max(longest, it->duration);
  }
  if (responses == 0 || rate <= 0) return longest;
  return std::chrono::duration_cast<Nanos>(
      std::chrono::duration<double>(static_cast<double>(responses) / rate));
}

Iteration merge_iteration(const std::vector<ShardFile>& shards, size_t i) {
  Iteration out = shards.front().run.iterations[i];
  out.stats = {};
  out.target_rate = 0;
  std::vector<const Iteration*> parts;
  for (const auto& s : shards) {
    const auto& it = s.run.iterations[i];
    parts.push_back(&it);
    out.stats.merge(it.stats);
    out.target_rate += it.target_rate;
    out.discarded = out.discarded || it.discarded;
  }
  out.duration = merged_duration(parts, out.stats.responses);
  return out;
}

std::string joined_engines(const std::vector<ShardFile>& shards) {
  std::set<std::string> names;
  for (const auto& s : shards) names.insert(s.run.engine);
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : "+") + n;
  return out;
}

// Every shard's host series, whole: the merged run keeps what each load machine did.
std::string merged_host_samples(const std::vector<ShardFile>& shards) {
  json doc = {{"version", 1}, {"shards", json::array()}};
  for (const auto& s : shards) {
    json samples = parse_json_or_discarded(s.run.host_samples_json);
    doc["shards"].push_back({{"shard", s.spec.text()},
                             {"host", s.run.host.fields},
                             {"host_key", s.run.host.key()},
                             {"samples", samples.is_discarded() ? json(nullptr) : samples}});
  }
  return json_text(doc);
}

// The file's numbers, checked before narrowing: a count of 2^40 read as an
// int was shard "2/0".
int shard_int(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 1 ||
      (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT32_MAX}) ||
      v.get<int64_t>() > INT32_MAX)
    throw Error(std::string("shard.") + key + ": must be an integer from 1 to " +
                std::to_string(INT32_MAX) + ", got " +
                (v.is_number() ? short_number(v.get<double>()) : v.dump().substr(0, 40)));
  return static_cast<int>(v.get<int64_t>());
}

int64_t shard_ms(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) || v.get<int64_t>() < 0)
    throw Error(std::string("shard.") + key +
                ": must be Unix milliseconds, an integer from 0, got " +
                (v.is_number() ? short_number(v.get<double>()) : v.dump().substr(0, 40)));
  return v.get<int64_t>();
}

}  // namespace

ShardSpec parse_shard_spec(std::string_view text) {
  auto slash = text.find('/');
  std::optional<int> index, count;
  if (slash != std::string_view::npos) {
    index = parse_int(text.substr(0, slash));
    count = parse_int(text.substr(slash + 1));
  }
  if (!index || !count || *count < 1 || *index < 1 || *index > *count)
    throw Error("--shard: must be I/N with 1 <= I <= N, like \"2/3\", got \"" + std::string(text) +
                "\"");
  return {*index, *count};
}

Profile shard_profile(const Profile& profile, ShardSpec spec) {
  if (profile.paired)
    throw Error(profile.source.string() +
                ": paired: a paired run alternates two services on one machine; it cannot be "
                "sharded");
  if (profile.service && !profile.service->command.empty())
    throw Error(profile.source.string() +
                ": service.command: a sharded run cannot start its own service (each shard "
                "would load its own copy); start the service once and give the shards its URL");
  int n = spec.count;
  if (profile.load.connections < n)
    throw Error("--shard " + spec.text() + ": the profile's " +
                std::to_string(profile.load.connections) + " connections do not split into " +
                std::to_string(n) + " shards");
  int connections = profile.load.connections / n + (spec.index - 1 < profile.load.connections % n);
  Profile out = profile;
  out.load.connections = connections;
  out.load.threads = std::clamp(profile.load.threads / n, 1, connections);
  out.load.rate = profile.load.rate / n;
  return out;
}

std::chrono::system_clock::time_point parse_start_at(std::string_view text) {
  // Unix seconds in 64 bits: 4102444800 (2100) is a time, not an overflow. Up
  // to 2200, so that the time point cannot wrap; wait_for_start bounds the wait.
  constexpr int64_t kLastSecond = 7258118400;  // 2200-01-01T00:00:00Z
  int64_t seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size() && seconds > 0 && seconds < kLastSecond)
    return SystemClock::time_point(std::chrono::seconds(seconds));
  if (!text.empty() &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw Error(
        "--start-at: Unix seconds must be from 1 to before 7258118400 (the year 2200), got " +
        std::string(text.substr(0, 24)) + (text.size() > 24 ? "..." : ""));
  std::tm tm{};
  std::istringstream in{std::string(text)};
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  char zone = 0;
  if (in.fail() || !(in >> zone) || zone != 'Z' || in.peek() != EOF)
    throw Error(
        "--start-at: must be a UTC time like \"2026-11-30T06:30:00Z\" or Unix seconds, "
        "got \"" +
        std::string(text) + "\"");
  return SystemClock::from_time_t(timegm(&tm));
}

nlohmann::json shard_json(const ShardFile& shard) {
  return {
      {"format", kShardFormat},
      {"index", shard.spec.index},
      {"count", shard.spec.count},
      {"measured_from", iso_utc(shard.measured_from_ms)},
      {"measured_to", iso_utc(shard.measured_to_ms)},
      {"measured_from_ms", shard.measured_from_ms},
      {"measured_to_ms", shard.measured_to_ms},
      {"in_flight_at_end", shard.in_flight_at_end ? json(*shard.in_flight_at_end) : json(nullptr)},
      {"run", json::parse(to_json_line(shard.run, false))}};
}

ShardFile read_shard_file(const std::filesystem::path& path) {
  if (auto kind = special_file_kind(path); !kind.empty())
    throw Error(path.string() + ": is " + kind + ", not a shard result file");
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot read");
  ShardFile s;
  s.source = path.string();
  try {
    auto doc = parse_json(in, path.string());
    if (doc.is_object() && !doc.contains("shard") && doc.value("error", json()).is_string())
      throw Error(path.string() + ": the shard failed: " + doc["error"].get<std::string>());
    if (!doc.is_object() || !doc.contains("shard") || !doc["shard"].is_object())
      throw Error(path.string() +
                  ": not a shard result (no \"shard\" in it; written by run --shard)");
    const auto& j = doc["shard"];
    // Any JSON may stand there: a number that is not ours, or an array.
    const json format = j.value("format", json());
    if (!format.is_number_integer() || format.get<int64_t>() != kShardFormat)
      throw Error(path.string() + ": shard format " + json_text(format).substr(0, 40) +
                  ", this perfgate reads format " + std::to_string(kShardFormat));
    s.spec = {shard_int(j, "index"), shard_int(j, "count")};
    if (s.spec.count < 1 || s.spec.index < 1 || s.spec.index > s.spec.count)
      throw Error(path.string() + ": shard " + s.spec.text() + " is not I/N with 1 <= I <= N");
    s.measured_from_ms = shard_ms(j, "measured_from_ms");
    s.measured_to_ms = shard_ms(j, "measured_to_ms");
    try {
      s.run = run_from_json_line(j.at("run").dump());
    } catch (const Error& e) {
      throw Error(path.string() + ": not a perfgate run (" + e.what() + ")");
    }
    if (j.contains("in_flight_at_end") && j["in_flight_at_end"].is_number_unsigned())
      s.in_flight_at_end = j["in_flight_at_end"].get<uint64_t>();
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not a shard result: " + e.what());
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind(path.string(), 0) == 0) throw;
    throw Error(path.string() + ": " + what);
  }
  return s;
}

MergedShards merge_shards(std::vector<ShardFile> shards) {
  if (shards.empty()) throw Error("merge: no shard files given");
  check_indices(shards);
  std::sort(shards.begin(), shards.end(),
            [](const auto& a, const auto& b) { return a.spec.index < b.spec.index; });
  const auto& first = shards.front();
  for (const auto& s : shards) check_same_run(s, first);
  MergedShards out;
  if (auto note = check_overlap(shards)) out.notes.push_back(*note);
  RunRecord& run = out.run;
  run = first.run;
  run.id = 0;
  run.engine = joined_engines(shards);
  run.threads = 0;
  run.connections = 0;
  run.iterations.clear();
  run.service_cpu_s.clear();  // a service's CPU is one machine's view; shards see none of it whole
  run.saturation = {};
  run.host.fields["shards"] = std::to_string(shards.size());
  std::set<std::string> host_keys;
  out.in_flight_at_end = 0;
  for (const auto& s : shards) {
    if (out.in_flight_at_end && s.in_flight_at_end)
      *out.in_flight_at_end += *s.in_flight_at_end;
    else
      out.in_flight_at_end.reset();
    run.created_at = std::min(run.created_at, s.run.created_at);
    run.threads += s.run.threads;
    run.connections += s.run.connections;
    host_keys.insert(s.run.host.key());
    if (s.run.saturation.saturated) run.saturation.saturated = true;
    for (const auto& reason : s.run.saturation.reasons)
      run.saturation.reasons.push_back("shard " + s.spec.text() + ": " + reason);
    if (s.run.profile_json != first.run.profile_json)
      out.notes.push_back(s.source + "'s profile text differs from " + first.source +
                          "'s in what does not change the load; " + first.source +
                          "'s limits apply");
    out.shards.push_back(summarize(s));
  }
  if (host_keys.size() > 1)
    out.notes.push_back("the shards ran on " + std::to_string(host_keys.size()) +
                        " kinds of load machine; baselines are matched on shard 1's");
  for (size_t i = 0; i < first.run.iterations.size(); ++i)
    run.iterations.push_back(merge_iteration(shards, i));
  run.host_samples_json = merged_host_samples(shards);
  return out;
}

}  // namespace perfgate
