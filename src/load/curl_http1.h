#pragma once

// The curl engine's HTTP/1.1 path. libcurl only connects (TCP, TLS with its
// verification, the connect timeout: CURLOPT_CONNECT_ONLY); the exchange is
// the native engine's (http1_worker.h): its request bytes, serialized once,
// and its response parser, over curl_easy_send and curl_easy_recv. A libcurl
// transfer per request cost about 53 000 instructions; this costs a few
// hundred more than the native engine. Private to the curl engine.

#include <atomic>
#include <vector>

#include "perfgate/load/load_engine.h"

namespace perfgate {

/// True when this path can run these requests: all HTTP/1.1, over http:// or
/// https://, to one origin (scheme, host and port) with one TLS setting, each
/// URL without user info. The others (HTTP/2, several origins) take a libcurl
/// transfer per request.
bool curl_http1_serves(const std::vector<TargetSpec>& requests);

/// Runs the plan this way; the caller has checked the plan and set libcurl up.
LoadResult run_curl_http1(const LoadPlan& plan, const std::atomic<bool>& stop,
                          const IterationCallback& on_iteration);

}  // namespace perfgate
