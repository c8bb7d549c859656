#include "perfgate/store/cost_record.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

using nlohmann::json;

// Counts are read from outside (an imported file): bounded, finite, known names.
constexpr size_t kMaxLaunches = 1000;
constexpr size_t kMaxText = 4096;

std::string text(const json& j, const char* key) {
  if (!j.contains(key)) return "";
  const auto& v = j.at(key);
  if (!v.is_string() || v.get_ref<const std::string&>().size() > kMaxText)
    throw Error(std::string("cost.") + key + " must be a string of at most 4096 bytes");
  return v.get<std::string>();
}

MetricSet launch_from(const json& j) {
  if (!j.is_object()) throw Error("cost.launches: each launch must be an object");
  MetricSet out;
  // Named, not a structured binding: clang 14 (the fuzz build) cannot capture one.
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    const json& value = item.value();
    auto defs = cost_metric_defs();
    if (std::none_of(defs.begin(), defs.end(), [&](const MetricDef& d) { return d.key == key; }))
      throw Error("cost.launches: unknown cost metric \"" + key.substr(0, 64) + "\"");
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0)
      throw Error("cost.launches: " + key + " must be a count >= 0");
    out[key] = value.get<double>();
  }
  return out;
}

}  // namespace

std::string cost_to_json(const CostRun& cost) {
  if (!cost.ran() && cost.skipped.empty()) return "";
  json launches = json::array();
  for (const auto& launch : cost.launches) launches.push_back(launch);
  json j = {{"instrument", cost.instrument},   {"key", cost.key},      {"requests", cost.requests},
            {"connections", cost.connections}, {"launches", launches}, {"skipped", cost.skipped},
            {"seconds", cost.seconds}};
  // Outside text (a CPU model, a reason) may hold any bytes: never a dump error.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

CostRun cost_from_json(std::string_view text_in) {
  if (text_in.empty()) return {};
  json j = json::parse(text_in, nullptr, false);
  if (!j.is_object()) throw Error("cost: must be a JSON object");
  CostRun cost;
  cost.instrument = text(j, "instrument");
  cost.key = text(j, "key");
  cost.skipped = text(j, "skipped");
  for (const char* key : {"requests", "connections"})
    if (j.contains(key) && !(j.at(key).is_number_integer() && j.at(key).get<int64_t>() >= 0 &&
                             j.at(key).get<int64_t>() <= 100'000'000))
      throw Error(std::string("cost.") + key + " must be an integer >= 0");
  cost.requests = j.value("requests", 0);
  cost.connections = j.value("connections", 0);
  if (j.contains("seconds") && j.at("seconds").is_number()) cost.seconds = j.at("seconds");
  if (j.contains("launches")) {
    const auto& l = j.at("launches");
    if (!l.is_array() || l.size() > kMaxLaunches)
      throw Error("cost.launches must be an array of at most 1000 launches");
    for (const auto& launch : l) cost.launches.push_back(launch_from(launch));
  }
  return cost;
}

}  // namespace perfgate
