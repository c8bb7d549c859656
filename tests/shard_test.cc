// Shards as values: the --shard and --start-at texts, each shard's
// share of a profile, and merge_shards' arithmetic and refusals.
#include "perfgate/store/shard.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "perfgate/core/metrics.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::synthetic_run;

TEST(ShardTest, ParsesIndexOverCount) {
  EXPECT_EQ(parse_shard_spec("2/3"), (ShardSpec{2, 3}));
  EXPECT_EQ(parse_shard_spec("1/1"), (ShardSpec{1, 1}));
  for (const char* bad : {"0/3", "4/3", "3", "/3", "1/", "a/b", "1/3x", "-1/3", "1/0", ""})
    EXPECT_THROW(parse_shard_spec(bad), Error) << bad;
}

TEST(ShardTest, StartAtIsUtcOrUnixSeconds) {
  using namespace std::chrono;
  auto t = parse_start_at("2026-11-30T06:30:00Z");
  EXPECT_EQ(duration_cast<seconds>(t.time_since_epoch()).count(), 1796020200);
  EXPECT_EQ(parse_start_at("1796020200"), t);
  for (const char* bad : {"2026-11-30T06:30:00", "2026-11-30 06:30:00Z", "tomorrow", "0", "",
                          "2026-11-30T06:30:00Z+1"})
    EXPECT_THROW(parse_start_at(bad), Error) << bad;
}

Profile profile_of(int threads, int connections, double rate) {
  Profile p;
  p.name = "p";
  p.hash = "h";
  p.load.threads = threads;
  p.load.connections = connections;
  p.load.rate = rate;
  return p;
}

TEST(ShardTest, SharesAddUpToTheWholeProfile) {
  auto whole = profile_of(4, 50, 900);
  int connections = 0;
  double rate = 0;
  for (int i = 1; i <= 3; ++i) {
    auto p = shard_profile(whole, {i, 3});
    connections += p.load.connections;
    rate += p.load.rate;
    EXPECT_EQ(p.load.connections, i <= 2 ? 17 : 16);  // 50 = 17 + 17 + 16
    EXPECT_GE(p.load.threads, 1);
    EXPECT_LE(p.load.threads, p.load.connections);
    EXPECT_EQ(p.hash, "h");  // judged as the whole profile
  }
  EXPECT_EQ(connections, 50);
  EXPECT_DOUBLE_EQ(rate, 900);
}

TEST(ShardTest, RefusesWhatCannotBeSplit) {
  EXPECT_THROW(shard_profile(profile_of(1, 2, 0), {1, 3}), Error);
  auto with_service = profile_of(1, 8, 0);
  with_service.service = ServiceSpec{};
  with_service.service->command = {"./server"};
  EXPECT_THROW(shard_profile(with_service, {1, 2}), Error);
  // A service only watched (pid_file) is no copy per shard: allowed.
  with_service.service->command.clear();
  with_service.service->pid_file = "/run/server.pid";
  EXPECT_NO_THROW(shard_profile(with_service, {1, 2}));
}

ShardFile shard_of(int index, int count, uint64_t rps, double latency_ms) {
  ShardFile s;
  s.spec = {index, count};
  s.run = synthetic_run(1, rps, latency_ms);
  s.run.host.fields["cpus"] = std::to_string(index);  // another machine each
  s.measured_from_ms = 1'000'000;
  s.measured_to_ms = 1'004'000;
  s.in_flight_at_end = 16;
  s.source = "shard-" + std::to_string(index) + ".json";
  return s;
}

TEST(ShardTest, MergeAddsCountsAndHistogramsExactly) {
  std::vector<ShardFile> shards = {shard_of(2, 3, 2000, 4), shard_of(1, 3, 1000, 2),
                                   shard_of(3, 3, 3000, 8)};
  auto merged = merge_shards(shards);
  const auto& run = merged.run;
  ASSERT_EQ(run.iterations.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    LatencyHistogram all;
    uint64_t responses = 0;
    double rate = 0;
    for (const auto& s : shards) {
      all.merge(s.run.iterations[i].stats.latency);
      responses += s.run.iterations[i].stats.responses;
      rate += s.run.iterations[i].throughput_rps();
    }
    EXPECT_TRUE(run.iterations[i].stats.latency == all) << i;
    EXPECT_EQ(run.iterations[i].stats.latency.percentile_ns(99), all.percentile_ns(99));
    EXPECT_EQ(run.iterations[i].stats.responses, responses);
    EXPECT_NEAR(run.iterations[i].throughput_rps(), rate, rate * 1e-9);
    EXPECT_EQ(run.iterations[i].discarded, i == 0);
  }
  EXPECT_EQ(run.connections, 48);
  EXPECT_EQ(run.threads, 3);
  EXPECT_EQ(run.host.fields.at("shards"), "3");
  EXPECT_EQ(run.host.fields.at("cpus"), "1");           // shard 1's machine
  EXPECT_NE(run.host.key(), shards[1].run.host.key());  // a series of its own
  EXPECT_EQ(merged.in_flight_at_end, 48u);
  ASSERT_EQ(merged.shards.size(), 3u);
  EXPECT_EQ(merged.shards[0].spec.index, 1);  // ordered by index
  EXPECT_EQ(merged.shards[0].responses, 3 * 1000u);
  // Three kinds of machine: said, not hidden.
  ASSERT_EQ(merged.notes.size(), 1u);
  EXPECT_NE(merged.notes[0].find("3 kinds of load machine"), std::string::npos);
  // Every shard's host samples are kept.
  auto samples = nlohmann::json::parse(run.host_samples_json);
  EXPECT_EQ(samples["shards"].size(), 3u);
}

TEST(ShardTest, AnySaturatedShardSaturatesTheMerge) {
  std::vector<ShardFile> shards = {shard_of(1, 2, 1000, 2), shard_of(2, 2, 1000, 2)};
  shards[1].run.saturation = {true, {"steal 12% (limit 5%)"}, {}};
  auto merged = merge_shards(shards);
  EXPECT_TRUE(merged.run.saturation.saturated);
  ASSERT_EQ(merged.run.saturation.reasons.size(), 1u);
  EXPECT_EQ(merged.run.saturation.reasons[0], "shard 2/2: steal 12% (limit 5%)");
  EXPECT_TRUE(merged.shards[1].saturated);
  EXPECT_FALSE(merged.run.eligible_as_baseline());
}

TEST(ShardTest, UnknownInFlightStaysUnknown) {
  std::vector<ShardFile> shards = {shard_of(1, 2, 1000, 2), shard_of(2, 2, 1000, 2)};
  shards[0].in_flight_at_end.reset();
  EXPECT_FALSE(merge_shards(shards).in_flight_at_end);
}

void expect_refused(std::vector<ShardFile> shards, const std::string& what) {
  try {
    merge_shards(std::move(shards));
    ADD_FAILURE() << "merged; expected: " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(ShardTest, RefusesShardsThatDoNotBelongTogether) {
  auto a = shard_of(1, 2, 1000, 2), b = shard_of(2, 2, 1000, 2);
  expect_refused({}, "no shard files");
  expect_refused({a}, "shard 2/2 is missing: 1 of 2");
  expect_refused({a, a}, "shard 1/2 again");
  auto other = b;
  other.run.profile_hash = "0000";
  expect_refused({a, other}, "is not shard-1.json's");
  auto three = b;
  three.spec = {2, 3};
  expect_refused({a, three}, "shard 2/3, but shard-1.json is shard 1/2");
  auto shorter = b;
  shorter.run.iterations.pop_back();
  expect_refused({a, shorter}, "3 iterations, but shard-1.json has 4");
  auto commit = b;
  commit.run.ci.commit = "deadbeef";
  expect_refused({a, commit}, "commit deadbeef");
  auto aborted = b;
  aborted.run.status = "aborted";
  expect_refused({a, aborted}, "aborted, not complete");
  auto late = b;
  late.measured_from_ms += 2'500;  // overlaps 1.5 s of 4
  late.measured_to_ms += 2'500;
  expect_refused({a, late}, "do not overlap by half");
}

TEST(ShardTest, APartialOverlapIsNoted) {
  auto a = shard_of(1, 2, 1000, 2), b = shard_of(2, 2, 1000, 2);
  b.measured_from_ms += 1'000;  // 3 s of 4 together
  b.measured_to_ms += 1'000;
  auto merged = merge_shards({a, b});
  ASSERT_FALSE(merged.notes.empty());
  EXPECT_NE(merged.notes.front().find("overlap by 75 %"), std::string::npos)
      << merged.notes.front();
}

TEST(ShardTest, AShardFileRoundTrips) {
  testing::TempDir dir;
  auto s = shard_of(2, 3, 1500, 3);
  nlohmann::json doc = {{"verdict", "pass"}, {"shard", shard_json(s)}};
  auto path = dir.path() / "shard-2.json";
  testing::write_file(path, doc.dump());
  auto back = read_shard_file(path);
  EXPECT_EQ(back.spec, s.spec);
  EXPECT_EQ(back.measured_from_ms, s.measured_from_ms);
  EXPECT_EQ(back.measured_to_ms, s.measured_to_ms);
  EXPECT_EQ(back.in_flight_at_end, s.in_flight_at_end);
  EXPECT_EQ(to_json_line(back.run, false), to_json_line(s.run, false));
  EXPECT_EQ(back.source, path.string());

  testing::write_file(path, R"({"verdict": "error", "error": "no response from http://x/"})");
  EXPECT_THROW(
      {
        try {
          read_shard_file(path);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("the shard failed: no response"), std::string::npos);
          throw;
        }
      },
      Error);
  testing::write_file(path, "{not json");
  EXPECT_THROW(read_shard_file(path), Error);
}

// Each way a file is not a shard this perfgate reads names the file.
TEST(ShardTest, UnreadableShardFilesNameTheFile) {
  testing::TempDir dir;
  auto expect_named = [](const std::filesystem::path& path, const std::string& what) {
    try {
      read_shard_file(path);
      ADD_FAILURE() << "read " << path;
    } catch (const Error& e) {
      std::string message = e.what();
      EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
      EXPECT_NE(message.find(what), std::string::npos) << message;
    }
  };
  expect_named(dir.path() / "absent.json", "cannot read");
  auto future = dir.path() / "future.json";
  auto doc = nlohmann::json{{"shard", shard_json(shard_of(1, 2, 1000, 2))}};
  doc["shard"]["format"] = 2;
  testing::write_file(future, doc.dump());
  expect_named(future, "shard format 2, this perfgate reads format 1");
  auto bad_index = dir.path() / "bad-index.json";
  doc["shard"]["format"] = 1;
  doc["shard"]["index"] = 3;
  testing::write_file(bad_index, doc.dump());
  expect_named(bad_index, "shard 3/2 is not I/N");
}

}  // namespace
}  // namespace perfgate
