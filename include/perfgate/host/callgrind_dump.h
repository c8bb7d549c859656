#pragma once

// Reading the profile data files that Valgrind's callgrind writes on each
// `dump`: only their header's `events:` names and the `totals:` (or older
// `summary:`) line that sums every cost line of the part.

#include <map>
#include <string>
#include <string_view>

#include "perfgate/core/metrics.h"

namespace perfgate {

/// Event name ("Ir", "Dr", "sysCount", ...) -> its total count.
using EventTotals = std::map<std::string, double, std::less<>>;

/// The totals of one callgrind dump file's text. Throws Error naming `source`
/// when the text has no `events:` line, no totals, or totals that do not match
/// the events (a part cut short, another tool's file).
EventTotals parse_callgrind_dump(std::string_view text, const std::string& source);

/// `a` + `b`, event by event (the processes of one service).
void add_totals(EventTotals& a, const EventTotals& b);

/// Cost metrics per request from `totals` over `requests` requests:
/// instructions (Ir) always; estimated cycles when the cache simulation's events
/// are there; system calls when `sysCount` is. Throws Error without Ir.
MetricSet per_request_costs(const EventTotals& totals, int requests);

}  // namespace perfgate
