#include "perfgate/host/delayed_ack.h"

#include <cstdio>

namespace perfgate {

std::optional<std::string> delayed_ack_note(const RequestShape& s) {
  // Linux's delayed ACK is 40 ms at least; a busy client or server adds a few.
  // Every request held (p90 close to p50), and the service idle for most of
  // each: more than 20 times its CPU in waiting.
  if (!s.service_cpu_us || s.p50_ms < 38 || s.p50_ms > 50 || s.p90_ms > 1.3 * s.p50_ms)
    return std::nullopt;
  if (*s.service_cpu_us * 20 > s.p50_ms * 1000) return std::nullopt;
  char text[640];
  std::snprintf(text, sizeof text,
                "every request waited about %.0f ms (p50 %.1f, p90 %.1f) while the service spent "
                "%.2f ms of CPU on it: the mark of a response written in two pieces (headers, "
                "then body) that Nagle's algorithm holds until the client's delayed ACK, 40 ms "
                "on Linux; throughput then measures that wait, not the service's work. Unless "
                "it waits on purpose, set TCP_NODELAY on its sockets or write each response at "
                "once (Python's http.server: disable_nagle_algorithm = True in the handler)",
                s.p50_ms, s.p50_ms, s.p90_ms, *s.service_cpu_us / 1000);
  return std::string(text);
}

}  // namespace perfgate
