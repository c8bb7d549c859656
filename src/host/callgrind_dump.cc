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

// A count as callgrind writes it: a non-negative decimal integer, and one a
// double holds exactly (2^53 is about 9e15: months of one CPU's instructions).
bool parse_count(const std::string& word, double& value) {
  if (word.empty() || word.size() > 15) return false;
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
  // callgrind's own header, with no events after it, is a dump cut short (a
  // full disk, a quota), not something else (issue 50, item 15).
  if (events.empty() && (text.rfind("# callgrind format", 0) == 0 ||
                         text.find("\ncreator: callgrind") != std::string_view::npos))
    throw Error(source + ": callgrind dump cut short (" + std::to_string(text.size()) +
                " bytes, no \"events:\" line): was the disk full?");
  if (events.empty()) throw Error(source + ": not a callgrind dump (no \"events:\" line)");
  for (size_t i = 0; i < events.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (events[i] == events[j])
        throw Error(source + ": callgrind dump names the event " + events[i].substr(0, 40) +
                    " twice");
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
      throw Error(source + ": callgrind total \"" + totals[i].substr(0, 40) + "\" of " +
                  events[i].substr(0, 40) + " is not a count (a whole number below 10^15)");
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
  // Every request runs code somewhere in the service: none counted means the
  // serving process was never counted, not a free request (issue 50).
  if (event(t, "Ir") <= 0)
    throw Error("cost phase: callgrind counted no instructions over " + std::to_string(requests) +
                " requests: the process that served them was not counted");
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
