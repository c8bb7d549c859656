#pragma once

// Fixtures that write a baseline store directly: kept apart from test_support
// so that the engine-only test binary (the ThreadSanitizer pass) links no store.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace perfgate::testing {

/// Moves the stored runs of each of `commits` (in the store at `store`) to a UTC
/// day of its own, 2020-01-01 on, as if each commit's runs had been one
/// calibration on its own day: a noise pool of as many days, which a baseline of
/// one or two runs needs to be judged at all (docs/statistics.md, "A young store").
void spread_over_days(const std::filesystem::path& store, const std::vector<std::string>& commits);

/// A noise pool of three days in the store at `store`, copied from its run
/// `run_id`: three calibrations (commits pool1 to pool3, 2020-01-01 to -03) of
/// three runs each, their throughput scattered by about `spread` (a fraction;
/// the windows' durations scaled), their latencies as measured. For CLI tests of
/// other things than the noise model, whose one-run baselines it lets be judged:
/// the copies are older than any run recorded after, as calibrations would be.
void seed_pool_from(const std::filesystem::path& store, int64_t run_id, double spread = 0.05);

}  // namespace perfgate::testing
