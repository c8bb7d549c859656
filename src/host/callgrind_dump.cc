#include "perfgate/host/callgrind_dump.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "perfgate/core/cost_run.h"
#include "perfgate/core/error.h"

namespace perfgate {
namespace {

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A count as callgrind writes it: a non-negative decimal integer.
bool parse_count(const std::string& word, double& value) {
  if (word.empty() || word.size() > 20) return false;
  for (char c : word)
    if (c < '0' || c > '9') return false;
  value = std::strtod(word.c_str(), nullptr);
  return true;
}

double event(const EventTotals& t, std::string_view name) {
  auto it = t.find(name);
  return it == t.end() ? 0 : it->second;
}

bool has(const EventTotals& t, std::string_view name) {
  return t.find(name) != t.end();
}

}  // namespace

EventTotals parse_callgrind_dump(std::string_view text, const std::string& source) {
  std::vector<std::string> events, totals, summary;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    std::string_view line = text.substr(at, end == std::string_view::npos ? end : end - at);
    at = end == std::string_view::npos ? text.size() : end + 1;
    if (line.rfind("events:", 0) == 0 && events.empty()) events = words(line.substr(7));
    if (line.rfind("totals:", 0) == 0) totals = words(line.substr(7));
    if (line.rfind("summary:", 0) == 0) summary = words(line.substr(8));
  }
  if (events.empty()) throw Error(source + ": not a callgrind dump (no \"events:\" line)");
  if (totals.empty()) totals = summary;
  if (totals.empty()) throw Error(source + ": callgrind dump without totals (cut short?)");
  // Trailing zero counts may be left out; more counts than events is not ours.
  if (totals.size() > events.size())
    throw Error(source + ": callgrind dump with " + std::to_string(totals.size()) + " totals for " +
                std::to_string(events.size()) + " events");
  EventTotals out;
  for (size_t i = 0; i < events.size(); ++i) {
    double value = 0;
    if (i < totals.size() && !parse_count(totals[i], value))
      throw Error(source + ": callgrind total \"" + totals[i] + "\" of " + events[i] +
                  " is not a count");
    out[events[i]] = value;
  }
  return out;
}

void add_totals(EventTotals& a, const EventTotals& b) {
  for (const auto& [name, value] : b) a[name] += value;
}

MetricSet per_request_costs(const EventTotals& t, int requests) {
  if (!has(t, "Ir")) throw Error("callgrind dump without the Ir (instructions) event");
  if (requests <= 0) throw Error("cost phase: no request was counted");
  double n = requests;
  MetricSet out;
  out["instructions_per_request"] = event(t, "Ir") / n;
  if (has(t, "I1mr") && has(t, "ILmr")) {
    double accesses = event(t, "Ir") + event(t, "Dr") + event(t, "Dw");
    double l1_misses = event(t, "I1mr") + event(t, "D1mr") + event(t, "D1mw");
    double ll_misses = event(t, "ILmr") + event(t, "DLmr") + event(t, "DLmw");
    out["estimated_cycles_per_request"] =
        estimated_cycles(accesses - l1_misses, l1_misses - ll_misses, ll_misses) / n;
  }
  if (has(t, "sysCount")) out["syscalls_per_request"] = event(t, "sysCount") / n;
  return out;
}

}  // namespace perfgate
