#pragma once

#include <string>

#include "perfgate/load/load_engine.h"

namespace perfgate {

/// wrk's report for `perfgate bench`: the header, thread stats, the optional
/// latency distribution, "N requests in 5.00s, 1.23MB read", socket errors,
/// non-2xx, Requests/sec and Transfer/sec.
std::string bench_report(const LoadPlan& plan, const LoadResult& result, bool latency_distribution);

}  // namespace perfgate
