#pragma once

// libcurl handles that clean themselves up, and what the curl engine's two
// paths (curl_engine.cc, curl_http1.cc) share (curl_handles.cc), so that
// neither calls into the other's file. Private to them.

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "perfgate/core/load_result.h"
#include "perfgate/core/units.h"

namespace perfgate {

struct EasyCleanup {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
struct MultiCleanup {
  void operator()(CURLM* multi) const { curl_multi_cleanup(multi); }
};
using EasyPtr = std::unique_ptr<CURL, EasyCleanup>;
using MultiPtr = std::unique_ptr<CURLM, MultiCleanup>;

/// curl_global_init, once per process, on first use (it is not thread-safe,
/// and doing it lazily keeps it out of static initialisation).
void init_curl_once();

/// Counts one failed transfer by kind, wrk's way: a CURLcode (an int here, as
/// callers pass it on) -> connect, read, write, timeout or other.
void count_transfer_error(int curl_code, ErrorCounts& errors);

/// How many connections share a multi handle. libcurl 7.x walks its whole
/// connection cache on every transfer (to find an idle connection for it, and
/// again in curl_multi_remove_handle) and on every curl_easy_send/recv (to
/// find the handle's connection): small multi handles keep each walk short;
/// each one costs some memory.
inline constexpr int kConnectionsPerMulti = 16;

/// libcurl takes whole milliseconds, and 0 means "no limit".
inline long to_ms(Nanos d) {
  return std::max<long>(1, std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

/// What every handle of the engine sets: no signals, no Nagle, and never a
/// proxy (a gate measures the target, never a proxy picked up from the
/// environment; "no proxy for any host" also spares the environment lookups).
inline void set_common_options(CURL* h, Nanos connect_timeout) {
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, to_ms(connect_timeout));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_PROXY, "");
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
}

/// CURLMOPT_TIMERFUNCTION for a multi handle whose TIMERDATA is a `Group` with
/// `std::optional<time_point> due`: when libcurl next wants to be driven.
template <class Group>
int store_curl_timer(CURLM*, long timeout_ms, void* group) {
  auto& due = static_cast<Group*>(group)->due;
  if (timeout_ms < 0)
    due.reset();
  else
    due = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  return 0;
}

/// Peer and host verification, off only by the profile's explicit opt-out.
inline void set_tls_verify(CURL* h, bool verify) {
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, verify ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
}

}  // namespace perfgate
