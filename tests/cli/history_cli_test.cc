// `perfgate history`, `compare`, `accept`, `reject` and `calibrate` on real stores
// filled by real runs against local servers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "perfgate/store/baseline_store.h"
#include "support/store_fixtures.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::CommandResult;
using testing::DemoServerProcess;
using testing::TempDir;

// Four kept iterations of 300 ms against servers with a fixed service time, so
// that a server six times slower (+500 % p99) is a significant regression on any
// machine. The p99 limits leave room for what steal does to a 10 ms p99 on a
// shared VM (+54 % measured with 22 % steal): these tests are about the store.
constexpr const char* kProfile = R"({
  "name": "history-test",
  "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
  "load": { "threads": 1, "connections": 48, "duration": "300ms", "warmup": "100ms" },
  "repeat": { "count": 6, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": {
    "throughput": { "warn": "30%", "fail": "50%" },
    "latency_p99": { "warn": "200%", "fail": "300%" }
  }
})";

const std::vector<std::string> kSteady = {"--delay", "10ms", "--delay-every", "1"};
const std::vector<std::string> kSlow = {"--delay", "60ms", "--delay-every", "1"};

class HistoryCliTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_file(profile_, kProfile); }

  CommandResult perfgate(std::vector<std::string> args, uint16_t port = 1) {
    args.insert(args.begin(), testing::perfgate_binary());
    args.insert(args.end(), {"--store", store_.string()});
    return testing::run_command(args, {{"TARGET_PORT", std::to_string(port)},
                                       {"USER", "tester"},
                                       {"GITLAB_USER_LOGIN", ""},
                                       {"GITHUB_ACTOR", ""}});
  }

  CommandResult run(uint16_t port, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", profile_.string(), "--branch", "main"};
    args.insert(args.end(), extra.begin(), extra.end());
    return perfgate(args, port);
  }

  nlohmann::json history_json() {
    auto r = perfgate({"history", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  TempDir dir_;
  std::filesystem::path profile_ = dir_ / "profile.json";
  std::filesystem::path store_ = dir_ / "perfgate.db";
};

TEST_F(HistoryCliTest, HistoryListsRunsNewestFirstAsTableAndJson) {
  {
    DemoServerProcess steady(kSteady);
    ASSERT_EQ(run(steady.port()).exit_code, 0);
    // Against one run, judged with the stated prior (issue 46): a pass, and a baseline.
    ASSERT_EQ(run(steady.port(), {"--commit", "c0ffee1234"}).exit_code, 0);
  }
  auto runs = history_json();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["run_id"], 2);
  EXPECT_EQ(runs[1]["run_id"], 1);
  EXPECT_EQ(runs[0]["commit"], "c0ffee1234");
  EXPECT_EQ(runs[0]["verdict"], "pass");
  EXPECT_TRUE(runs[0]["baseline_eligible"].get<bool>());
  EXPECT_EQ(runs[1]["verdict"], "pass");
  EXPECT_TRUE(runs[1]["baseline_eligible"].get<bool>());
  EXPECT_GT(runs[0]["metrics"]["throughput_rps"].get<double>(), 0);
  EXPECT_GT(runs[0]["metrics"]["latency_p99_ms"].get<double>(), 9.0);  // 10 ms service time
  auto table = perfgate({"history", "--limit", "1"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("c0ffee1"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("\n1 "), std::string::npos) << "--limit 1 listed run 1:\n" << table.out;
  // Streamed run by run, the JSON is still one array, an empty one included.
  auto one = perfgate({"history", "--json", "--limit", "1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out).size(), 1u) << one.out;
  auto none = perfgate({"history", "--json", "--profile", "no-such-profile"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "[]\n");
}

// The whole life of an intended regression: it fails, someone accepts it with a
// reason, and the next run at the new speed passes against it.
TEST_F(HistoryCliTest, AcceptedRegressionBecomesTheBaseline) {
  {
    DemoServerProcess steady(kSteady);
    ASSERT_EQ(run(steady.port()).exit_code, 0);
  }
  testing::seed_pool_from(store_, 1);  // runs 2-10: calibrations of three days
  DemoServerProcess slow(kSlow);
  auto failed = run(slow.port());
  ASSERT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_EQ(perfgate({"accept", "11"}).exit_code, 3);  // a reason is required
  auto accepted = perfgate({"accept", "11", "--reason", "TLS everywhere costs 5x"});
  ASSERT_EQ(accepted.exit_code, 0) << accepted.err;
  EXPECT_NE(accepted.out.find("accepted"), std::string::npos);
  auto runs = history_json();
  EXPECT_EQ(runs[0]["review"]["state"], "accepted");
  EXPECT_EQ(runs[0]["review"]["by"], "tester");
  EXPECT_EQ(runs[0]["review"]["reason"], "TLS everywhere costs 5x");
  auto json_path = dir_ / "result.json";
  // Against the accepted slow run it does not fail (the pool's throughput
  // scatters by 5 %: a pass or, should this machine scatter more, inconclusive).
  auto next = run(slow.port(), {"--json", json_path.string()});
  EXPECT_NE(next.exit_code, 1) << next.out << next.err;
  EXPECT_NE(next.exit_code, 3) << next.out << next.err;
  auto result = nlohmann::json::parse(testing::read_file(json_path));
  EXPECT_EQ(result["baseline"]["run_ids"], nlohmann::json::array({11}));
}

// `accept latest` (the CI recipes' accept=latest, issue 42, item 15): the
// newest run of the branch that can be accepted, not a newer saturated one.
TEST_F(HistoryCliTest, AcceptLatestTakesTheNewestRunThatCanBeAccepted) {
  DemoServerProcess steady(kSteady);
  ASSERT_EQ(run(steady.port()).exit_code, 0);
  // The same profile (saturation is not in its hash), judged saturated: a load
  // thread busy at all is too busy, in every window.
  std::string busy = kProfile;
  busy.replace(busy.find(R"("generator_cpu": "100%")"), 23, R"("generator_cpu": "0%")");
  testing::write_file(profile_, busy);
  auto saturated = run(steady.port());
  ASSERT_EQ(saturated.exit_code, 2) << saturated.out << saturated.err;
  ASSERT_TRUE(history_json()[0]["saturation"]["saturated"].get<bool>()) << history_json()[0];
  EXPECT_EQ(perfgate({"accept", "2", "--reason", "x"}).exit_code, 3);  // saturated: refused
  auto latest = perfgate({"accept", "latest", "--branch", "main", "--reason", "the new cache"});
  ASSERT_EQ(latest.exit_code, 0) << latest.out << latest.err;
  EXPECT_NE(latest.out.find("1 newer run of branch main cannot be accepted"), std::string::npos)
      << latest.out;
  EXPECT_NE(latest.out.find("run 1 (profile history-test, branch main"), std::string::npos)
      << latest.out;
  EXPECT_EQ(history_json()[1]["review"]["state"], "accepted");
  auto none = perfgate({"accept", "latest", "--branch", "release", "--reason", "x"});
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_NE(none.err.find("accept latest: no run of branch release can be accepted"),
            std::string::npos)
      << none.err;
  EXPECT_EQ(perfgate({"reject", "latest"}).exit_code, 3);  // accept's word only
}

// Issue 50 item 13: `accept latest` accepted the run the user had rejected.
// It takes the newest run not rejected; `accept ID` still takes one back.
TEST_F(HistoryCliTest, AcceptLatestPassesOverARejectedRun) {
  DemoServerProcess steady(kSteady);
  ASSERT_EQ(run(steady.port()).exit_code, 0);
  ASSERT_EQ(run(steady.port()).exit_code, 0);
  ASSERT_EQ(perfgate({"reject", "2", "--reason", "runner was shared"}).exit_code, 0);
  auto latest = perfgate({"accept", "latest", "--reason", "the new cache"});
  ASSERT_EQ(latest.exit_code, 0) << latest.out << latest.err;
  EXPECT_NE(latest.out.find("1 newer run cannot be accepted (saturated, paired, rejected"),
            std::string::npos)
      << latest.out;
  auto runs = history_json();
  EXPECT_EQ(runs[0]["review"]["state"], "rejected");
  EXPECT_EQ(runs[1]["review"]["state"], "accepted");
  ASSERT_EQ(perfgate({"accept", "2", "--reason", "it was fine"}).exit_code, 0);
  EXPECT_EQ(history_json()[0]["review"]["state"], "accepted");
}

TEST_F(HistoryCliTest, RejectedRunIsNeverABaseline) {
  DemoServerProcess steady(kSteady);
  ASSERT_EQ(run(steady.port()).exit_code, 0);
  ASSERT_EQ(perfgate({"reject", "1", "--reason", "runner was shared"}).exit_code, 0);
  auto r = run(steady.port());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no baseline"), std::string::npos) << r.out;
  EXPECT_EQ(history_json()[1]["review"]["state"], "rejected");
}

TEST_F(HistoryCliTest, CompareJudgesAStoredRunAgainWithoutStoring) {
  {
    DemoServerProcess steady(kSteady);
    ASSERT_EQ(run(steady.port()).exit_code, 0);
    testing::seed_pool_from(store_, 1);  // runs 2-10: calibrations of three days
    ASSERT_EQ(run(steady.port()).exit_code, 0);
  }
  {
    DemoServerProcess slow(kSlow);
    ASSERT_EQ(run(slow.port()).exit_code, 1);
  }
  auto before = testing::read_file(store_);
  auto again = perfgate({"compare", "12"});
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_NE(again.out.find("judged again"), std::string::npos) << again.out;
  // Against run 1 alone (and the pool), run 11 (same server) passes.
  auto pinned = perfgate({"compare", "11", "--baseline-run", "1"});
  EXPECT_EQ(pinned.exit_code, 0) << pinned.out << pinned.err;
  EXPECT_NE(pinned.out.find("compared with run 1"), std::string::npos) << pinned.out;
  // The first run had nothing before it.
  auto first = perfgate({"compare", "1"});
  EXPECT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("no baseline"), std::string::npos) << first.out;
  EXPECT_EQ(testing::read_file(store_), before);
  auto missing = perfgate({"compare", "99"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("no run 99"), std::string::npos) << missing.err;
}

TEST_F(HistoryCliTest, BaselineRunFlagPinsAndChecksTheRun) {
  DemoServerProcess steady(kSteady);
  ASSERT_EQ(run(steady.port()).exit_code, 0);
  testing::seed_pool_from(store_, 1);  // a pinned run is judged against the pool too
  auto missing = run(steady.port(), {"--baseline-run", "42"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("--baseline-run 42"), std::string::npos) << missing.err;
  auto pinned = run(steady.port(), {"--baseline-run", "1"});
  EXPECT_EQ(pinned.exit_code, 0) << pinned.out << pinned.err;
  EXPECT_NE(pinned.out.find("pinned to run 1"), std::string::npos) << pinned.out;
}

// Issue 39, item 4: calibrate checks the warm-up transient, as a user meets it:
// a service that answers 2 ms slower for its first 250 ms, started by each run,
// and no load.warmup. The first window of every run is far slower than the
// later ones, and calibrate says to lengthen the warm-up.
TEST_F(HistoryCliTest, CalibrateFindsAServiceStillWarmingUpAfterTheWarmUp) {
  auto port = std::to_string(testing::unused_port());
  auto cold = dir_ / "cold.json";
  testing::write_file(cold, R"({
    "name": "cold", "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
    "load": { "threads": 1, "connections": 2, "duration": "150ms", "warmup": "0s" },
    "repeat": { "count": 4, "discard": 0 },
    "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                    "steal": "100%", "memory_available": "0%" },
    "service": { "command": ["${PERFGATE}", "demo-server", "--port", "${TARGET_PORT}",
                             "--delay", "200us", "--cold-for", "250ms", "--cold-delay", "2ms"],
                 "ready_url": "http://127.0.0.1:${TARGET_PORT}/health" } })");
  auto json_path = dir_ / "calibration.json";
  auto c = testing::run_command({testing::perfgate_binary(), "calibrate", cold.string(), "--runs",
                                 "3", "--no-record", "--json", json_path.string()},
                                {{"TARGET_PORT", port}});
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("warm-up: the service is still warming up after load.warmup 0s"),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("throughput_rps: the first kept window is "), std::string::npos) << c.out;
  auto warmup = nlohmann::json::parse(
      testing::read_file(json_path))["metrics"]["throughput_rps"]["warmup_transient"];
  EXPECT_TRUE(warmup["found"].get<bool>()) << warmup;
  EXPECT_LT(warmup["first_window_pct"].get<double>(), -20) << warmup;  // lower throughput
  EXPECT_EQ(warmup["runs"], 3);
}

TEST_F(HistoryCliTest, CalibrateStoresRunsThatAreNeverBaselinesAndSuggestsLimits) {
  DemoServerProcess steady(kSteady);
  auto json_path = dir_ / "calibration.json";
  auto c = perfgate({"calibrate", profile_.string(), "--runs", "3", "--json", json_path.string(),
                     "--detect", "60", "--run-cost", "3s"},
                    steady.port());
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("throughput_rps"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("suggested repeat.count"), std::string::npos) << c.out;
  auto j = nlohmann::json::parse(testing::read_file(json_path));
  EXPECT_EQ(j["runs"], 3);
  EXPECT_EQ(j["run_ids"].size(), 3u);
  auto throughput = j["metrics"]["throughput_rps"];
  EXPECT_GE(throughput["detectable_pct"].get<double>(), 0);
  EXPECT_GT(throughput["suggested_fail_pct"].get<double>(),
            throughput["suggested_warn_pct"].get<double>());
  // Variance components and Kalibera & Jones's plan for a paired run.
  EXPECT_GE(throughput["window_sd_pct"].get<double>(), 0);
  EXPECT_GE(throughput["launch_sd_pct"].get<double>(), 0);
  EXPECT_TRUE(throughput["day_sd_pct"].is_null()) << "one day of calibrations";
  EXPECT_EQ(throughput["plan"]["detect_pct"], 60);  // past the profile's fail limit, 50 %
  EXPECT_GE(throughput["plan"]["launches"].get<int>(), 6);
  EXPECT_EQ(throughput["plan"]["repeat_count"].get<int>(),
            throughput["plan"]["launches"].get<int>() * throughput["plan"]["block"].get<int>());
  EXPECT_EQ(j["launch_cost_s"], 3);
  EXPECT_NE(c.out.find("variance components"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("; fail +60% with 80% power: "), std::string::npos) << c.out;
  for (const auto& run : history_json()) {
    EXPECT_EQ(run["kind"], "calibration");
    EXPECT_FALSE(run["baseline_eligible"].get<bool>());
  }
  auto r = run(steady.port());
  EXPECT_NE(r.out.find("no baseline"), std::string::npos) << r.out;
}

TEST_F(HistoryCliTest, HistoryOfAMissingStoreIsAnError) {
  auto r = perfgate({"history"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no such store"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(store_));
}

}  // namespace
}  // namespace perfgate
