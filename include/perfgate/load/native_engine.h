#pragma once

#include <string_view>

#include "perfgate/load/load_engine.h"

namespace perfgate {

/// The native HTTP/1.1 engine for plain http:// keep-alive traffic, as cheap
/// per request as wrk: one epoll loop per thread, non-blocking sockets, each
/// thread driving its share of the connections, the request bytes serialized
/// once and reused, responses parsed with http_parser. Closed model
/// (`rate` 0: each connection sends its next request when the last one is
/// answered) and open model (`rate` > 0: see arrival_schedule.h).
class NativeEngine : public LoadEngine {
 public:
  std::string_view name() const override { return "native"; }
  /// Throws Error for a plan it cannot run (an https:// or HTTP/2 target, an
  /// unresolvable host, too few open files); request failures are counted.
  LoadResult run(const LoadPlan& plan, const std::atomic<bool>& stop,
                 const IterationCallback& on_iteration) override;
};

}  // namespace perfgate
