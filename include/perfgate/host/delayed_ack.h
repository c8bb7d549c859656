#pragma once

#include <optional>
#include <string>

namespace perfgate {

/// What a run saw of its service's requests: each one's wait, and its work.
struct RequestShape {
  double p50_ms = 0;
  double p90_ms = 0;
  std::optional<double> service_cpu_us;  // per request; absent when the service is unknown
};

/// A service whose every request waits about 40 ms while it spends little CPU
/// on each shows the mark of a response written in two pieces (headers, then
/// body) that Nagle's algorithm holds until the client's delayed ACK, 40 ms on
/// Linux: Python's http.server by default. Its throughput then measures that
/// wait, not the code. The note that says so and what to do, or nullopt where
/// the figures do not show it (the service's CPU unknown included).
std::optional<std::string> delayed_ack_note(const RequestShape& shape);

}  // namespace perfgate
