#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>  // keeps json.hpp out of every report and CLI unit

#include "perfgate/profile/profile.h"
#include "perfgate/store/run_record.h"

namespace perfgate {

/// `--shard I/N`: this load machine is shard I (1-based) of N.
struct ShardSpec {
  int index = 1;
  int count = 1;

  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
  friend bool operator==(const ShardSpec&, const ShardSpec&) = default;
};

/// Parses "2/3"; throws Error naming the flag when it is not I/N with 1 <= I <= N.
ShardSpec parse_shard_spec(std::string_view text);

/// The profile with this shard's share of the load: its part of the connections
/// (the first `connections % N` shards take one more) and threads, and its part of
/// the open model's rate. The hash stays the whole profile's, so that the merged
/// run is judged against runs of the whole profile. Throws Error when the profile
/// cannot be split that way (fewer connections than shards) or starts its own
/// service (N services would each take 1/N of the load).
Profile shard_profile(const Profile& profile, ShardSpec spec);

/// `--start-at`: "2026-11-30T06:30:00Z" (UTC) or Unix seconds ("1764484200").
/// Throws Error on anything else.
std::chrono::system_clock::time_point parse_start_at(std::string_view text);

/// What one shard wrote with --json: its measurement as the store would keep it,
/// and the wall-clock span of its kept iterations, so that merge can check that
/// the shards loaded the service at the same time.
struct ShardFile {
  ShardSpec spec;
  int64_t measured_from_ms = 0;  // Unix ms, start of the first kept iteration
  int64_t measured_to_ms = 0;    // Unix ms, end of the last kept iteration
  RunRecord run;                 // histograms, counts, iterations, host samples, fingerprint
  std::optional<uint64_t> in_flight_at_end;  // see LoadResult
  std::string source;                        // the file it was read from, for messages
};

/// The `shard` member of a shard's JSON result.
nlohmann::json shard_json(const ShardFile& shard);
/// Reads a shard's JSON result; throws Error naming the file when it is not one.
ShardFile read_shard_file(const std::filesystem::path& path);

/// One shard as the merged run's reports list it.
struct ShardSummary {
  ShardSpec spec;
  std::string source;
  std::string host_key;
  std::string engine;
  int connections = 0;
  uint64_t responses = 0;     // kept iterations
  double throughput_rps = 0;  // median of the kept iterations
  bool saturated = false;
  int64_t measured_from_ms = 0;
  int64_t measured_to_ms = 0;
};

/// The shards as one run.
struct MergedShards {
  RunRecord run;                     // iteration i = every shard's iteration i added exactly
  std::vector<ShardSummary> shards;  // by index
  std::vector<std::string> notes;    // what the reader should know about the merge
  std::optional<uint64_t> in_flight_at_end;  // the shards' sum; nullopt when one did not count
};

/// Checks the shards belong together (same profile hash, one file for each of
/// the N indices, the same iterations, measurement windows overlapping by at
/// least half) and adds them: counts and histograms exactly, throughput as the
/// sum of the shards' rates, saturated when any shard was, every shard's host
/// samples kept. Throws Error with one line saying which file is wrong and why.
MergedShards merge_shards(std::vector<ShardFile> shards);

}  // namespace perfgate
