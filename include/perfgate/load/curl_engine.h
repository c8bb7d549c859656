#pragma once

#include <chrono>
#include <string_view>
#include <vector>

#include "perfgate/load/load_engine.h"
#include "perfgate/load/run_windows.h"

namespace perfgate {

/// The libcurl engine, closed or open model: `threads` threads, each driving its
/// share of `connections` keep-alive connections on its own epoll set. For
/// HTTP/1.1 to one origin (http:// or https://) libcurl only connects (TCP,
/// TLS and its verification) and the native engine's request bytes and
/// response parser do the exchange over curl_easy_send/recv; anything else
/// (HTTP/2, a mix over several origins) takes a libcurl transfer per request,
/// through its socket interface (on multi handles of a few connections each).
/// Serves whatever libcurl serves (plain HTTP, HTTPS, HTTP/2).
class CurlEngine : public LoadEngine {
 public:
  std::string_view name() const override { return "curl"; }
  /// Throws Error for a plan it cannot run (see check_plan(); HTTP/2 over plain
  /// http:// with a libcurl older than 8.0.0, which breaks it) or when libcurl
  /// cannot be set up; request failures are counted, never thrown.
  LoadResult run(const LoadPlan& plan, const std::atomic<bool>& stop,
                 const IterationCallback& on_iteration) override;
};

/// One request with the engine's options; throws Error("cannot reach URL: why")
/// when no HTTP response (of any status) comes back within `timeout`.
void curl_probe(const TargetSpec& target, Nanos timeout);

}  // namespace perfgate
