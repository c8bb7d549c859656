// The cost phase end to end: the real binary starts a real service under
// Valgrind's callgrind, counts exactly N requests per launch, and gates on
// instructions per request, in stored and in paired mode. The service is a
// small server built without sanitizers (tests/tools/counted_server.cc), whose
// --work-rounds plants an exact regression.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include <nlohmann/json.hpp>

#include "perfgate/store/baseline_store.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CommandResult;
using testing::TempDir;

const char* kQuiet = R"({ "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
    "steal": "100%", "memory_available": "0%" })";

// `mode`: a flag of the counted server's, e.g. "${MODE}" for --close or --fork.
std::string service(const std::string& port, const std::string& rounds,
                    const std::string& mode = "") {
  return R"({ "command": [")" + std::string(PERFGATE_COUNTED_SERVER) + R"(", "--port", "${)" +
         port + R"(}", "--work-rounds", "${)" + rounds + "}\"" +
         (mode.empty() ? "" : ", \"" + mode + "\"") + R"(],
      "ready_url": "http://127.0.0.1:${)" +
         port + R"(}/health" })";
}

// The timed part is short and gates nothing relative: these tests are about the counts.
std::string profile(const std::string& cost, bool paired, const std::string& mode = "") {
  std::string text = R"({ "name": "cost-test",
  "target": { "url": "http://127.0.0.1:${PORT}/" },
  "load": { "threads": 1, "connections": 2, "duration": "150ms", "warmup": "0s" },
  "repeat": { "count": )" +
                     std::string(paired ? "6" : "2") +
                     R"(, "discard": 0 },
  "saturation": )" + kQuiet +
                     R"(,
  "thresholds": { "error_rate": { "max": "1%" } },
  "service": )" + service("PORT", "ROUNDS", mode);
  if (paired)
    text += R"(,
  "paired": { "baseline": { "origin": "http://127.0.0.1:${BASE_PORT}", "commit": "0ld",
      "service": )" +
            service("BASE_PORT", "BASE_ROUNDS") +
            R"( }, "leg_warmup": "0s", "disturbance": "100%" })";
  if (!cost.empty()) text += ",\n  \"cost\": " + cost;
  return text + "\n}";
}

const char* kCost = R"({ "instrument": "callgrind", "requests": 200, "warmup_requests": 40 })";
// Work rounds of a baseline launch that counts about 1 % more than one of
// 2000, and of a candidate between them.
constexpr int kOtherRounds = 2030;
const char* kMiddleRounds = "2015";

// Debian's CPython where it is installed (ci/install-deps.sh installs it): a
// python3 found on PATH may be a version manager's shim, which perfgate warns
// about and under Valgrind takes minutes where Debian's takes seconds, and a
// build whose counts are not the ones these tests' numbers were measured on.
std::string python3() {
  return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

// A stored-mode profile of the same short timed part around any service and cost.
std::string service_profile(const std::string& service, const std::string& cost) {
  return R"({ "name": "cost-test",
  "target": { "url": "http://127.0.0.1:${PORT}/" },
  "load": { "threads": 1, "connections": 2, "duration": "150ms", "warmup": "0s" },
  "repeat": { "count": 2, "discard": 0 },
  "saturation": )" +
         std::string(kQuiet) + R"(,
  "thresholds": { "error_rate": { "max": "1%" } },
  "service": )" +
         service + R"(,
  "cost": )" +
         cost + "\n}";
}

class CostCliTest : public ::testing::Test {
 protected:
  CommandResult run(std::map<std::string, std::string> env, std::vector<std::string> extra = {}) {
    env.emplace("PORT", std::to_string(testing::unused_port()));
    env.emplace("BASE_PORT", std::to_string(testing::unused_port()));
    std::vector<std::string> args = {testing::perfgate_binary(),
                                     "run",
                                     profile_.string(),
                                     "--store",
                                     store_.string(),
                                     "--json",
                                     json_.string(),
                                     "--junit",
                                     junit_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = testing::run_command(args, env, {}, 240);
    last_ = fs::exists(json_) ? json::parse(testing::read_file(json_)) : json();
    return r;
  }
  const json& metric(const std::string& key) { return last_["metrics"][key]; }
  // `compare` of the last run, which failed on its counts: the same verdict and
  // change from the store.
  void expect_compare_fails_the_count_again() {
    auto id = std::to_string(last_["run_id"].get<int64_t>());
    auto again = testing::run_command({testing::perfgate_binary(), "compare", id, "--store",
                                       store_.string(), "--json", (dir_ / "again.json").string()});
    EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
    auto rejudged = json::parse(testing::read_file(dir_ / "again.json"));
    EXPECT_EQ(rejudged["metrics"]["instructions_per_request"]["verdict"], "fail") << again.out;
    EXPECT_EQ(rejudged["metrics"]["instructions_per_request"]["change_pct"],
              metric("instructions_per_request")["change_pct"]);
  }

  TempDir dir_;
  fs::path profile_ = dir_ / "cost.json";
  fs::path store_ = dir_ / "perfgate.db";
  fs::path json_ = dir_ / "result.json";
  fs::path junit_ = dir_ / "junit.xml";
  json last_;
};

// Stored mode: two launches count the same instructions to the last one, a
// second run of the same build passes against the first, and a build doing
// 10 % more rounds per request fails on its counts alone.
TEST_F(CostCliTest, StoredModeCountsExactlyAndCatchesARegression) {
  testing::write_file(profile_, profile(kCost, false));
  auto first = run({{"ROUNDS", "2000"}});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const auto& launches = last_["cost"]["launches"];
  ASSERT_EQ(launches.size(), 2u) << last_["cost"].dump();
  double instructions = launches[0]["instructions_per_request"];
  EXPECT_GT(instructions, 2000);  // the loop alone is several instructions a round
  EXPECT_EQ(launches[1]["instructions_per_request"], instructions) << "counts moved";
  EXPECT_GT(launches[0]["syscalls_per_request"].get<double>(), 0);
  EXPECT_EQ(last_["cost"]["spread_pct"]["instructions_per_request"], 0);
  EXPECT_EQ(last_["cost"]["requests"], 200);
  EXPECT_EQ(testing::validate_result_json(json_).exit_code, 0);

  auto again = run({{"ROUNDS", "2000"}});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "pass");
  EXPECT_EQ(metric("instructions_per_request")["change_pct"], 0);

  auto slower = run({{"ROUNDS", "2200"}});
  EXPECT_EQ(slower.exit_code, 1) << slower.out << slower.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "fail");
  EXPECT_GT(metric("instructions_per_request")["change_pct"].get<double>(), 2);
  EXPECT_NE(testing::read_file(junit_).find("instructions_per_request"), std::string::npos);
  // Judged again from the store: the counts against the baseline runs' of the
  // same key, as the gate judged them (they went unjudged there before).
  expect_compare_fails_the_count_again();
}

// requests "auto": the first launch's warm-up pace picks the count whose
// requests take about cost.count_time, from a ladder, and says so; the next run
// of the profile (requests left out: "auto" is the default) keeps that count,
// its key with it, so its counts compare and pass. A run whose pace is unknown
// (no warm-up) keeps the count the store's newest run took, off the ladder too.
TEST_F(CostCliTest, AnAutomaticCountFitsItsTimeAndKeepsItsSeries) {
  testing::write_file(profile_, profile(R"({ "instrument": "callgrind", "requests": "auto",
      "count_time": "60ms" })",
                                        false));
  auto first = run({{"ROUNDS", "2000"}});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  int requests = last_["cost"]["requests"].get<int>();
  // A request under callgrind takes well over 60 us: fewer than the 1000 ceiling.
  EXPECT_LT(requests, 1000) << first.err;
  EXPECT_TRUE(requests == 500 || requests == 200 || requests == 100 || requests == 50 ||
              requests == 20)
      << requests;
  auto said = "cost phase: " + std::to_string(requests) + " requests a launch after " +
              std::to_string(std::max(30, requests / 5)) + " to warm up (requests \"auto\": ";
  EXPECT_NE(first.err.find(said), std::string::npos) << first.err;
  EXPECT_NE(first.out.find(std::to_string(requests) + " requests x 1 connection each"),
            std::string::npos)
      << first.out;

  testing::write_file(profile_,
                      profile(R"({ "instrument": "callgrind", "count_time": "60ms" })", false));
  auto again = run({{"ROUNDS", "2000"}});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(last_["cost"]["requests"].get<int>(), requests) << again.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "pass")
      << metric("instructions_per_request");
  EXPECT_TRUE(metric("instructions_per_request").contains("test"));

  // The series' count without a pace: a pinned 70 stored, then "auto" with no
  // warm-up counts 70 again (the ceiling, 1000, without the store's word).
  store_ = dir_ / "series.db";
  testing::write_file(profile_, profile(R"({ "instrument": "callgrind", "requests": 70,
      "warmup_requests": 0 })",
                                        false));
  ASSERT_EQ(run({{"ROUNDS", "2000"}}).exit_code, 0);
  testing::write_file(profile_,
                      profile(R"({ "instrument": "callgrind", "warmup_requests": 0 })", false));
  auto unpaced = run({{"ROUNDS", "2000"}});
  ASSERT_EQ(unpaced.exit_code, 0) << unpaced.out << unpaced.err;
  EXPECT_EQ(last_["cost"]["requests"].get<int>(), 70) << unpaced.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "pass")
      << metric("instructions_per_request");
}

// A service that forks a child per request (Python's ForkingHTTPServer) does
// its work in children that exit during the count: their final dumps are
// counted, and nothing twice (each process dumps before it forks, so no child
// inherits its parent's counts). It counts what its twin that serves the same
// requests in one process counts, within 1 %; ten times the work per request
// in the children fails (issue 47: that passed when only live processes were read).
TEST_F(CostCliTest, ChildrenThatExitDuringTheCountAreCountedOnce) {
  testing::write_file(
      profile_, profile(R"({ "instrument": "callgrind", "requests": 40, "warmup_requests": 5 })",
                        false, "${MODE}"));
  auto twin = run({{"ROUNDS", "100000"}, {"MODE", "--close"}});
  ASSERT_EQ(twin.exit_code, 0) << twin.out << twin.err;
  double one_process = last_["cost"]["launches"][0]["instructions_per_request"];
  EXPECT_GT(one_process, 100000 * 4.0);  // the loop: several instructions a round

  auto forked = run({{"ROUNDS", "100000"}, {"MODE", "--fork"}});
  ASSERT_EQ(forked.exit_code, 0) << forked.out << forked.err;
  const auto& launches = last_["cost"]["launches"];
  ASSERT_EQ(launches.size(), 2u) << last_["cost"].dump();
  double children = launches[0]["instructions_per_request"];
  EXPECT_NEAR(children / one_process, 1.0, 0.01) << children << " vs " << one_process;
  // A child's few instructions of its own may differ by launch (its PID's digits).
  EXPECT_NEAR(launches[1]["instructions_per_request"].get<double>() / children, 1.0, 1e-4);
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "pass");
  EXPECT_NE(forked.err.find("children that exited during the count"), std::string::npos)
      << forked.err;

  auto heavier = run({{"ROUNDS", "1000000"}, {"MODE", "--fork"}});
  EXPECT_EQ(heavier.exit_code, 1) << heavier.out << heavier.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "fail");
  EXPECT_GT(metric("instructions_per_request")["change_pct"].get<double>(), 500);
}

// A real runtime with a JIT: Node, started as a user writes it (`node app.js`).
// By default the phase runs it with V8's predictable flags and says so, and its
// version joins the cost key: an unchanged service passes on its counts, and
// 2.5 % more work per request fails (issue 47: with the JIT on, A/A gates were
// inconclusive on a launch spread of 2.6-4.1 %).
TEST_F(CostCliTest, ANodeServiceIsCountedSteadilyByDefault) {
  ASSERT_EQ(testing::run_command({"/bin/sh", "-c", "command -v node"}, {}, {}, 30).exit_code, 0)
      << "no node on PATH (ci/install-deps.sh --test installs it)";
  testing::write_file(
      profile_,
      service_profile(R"({ "command": ["node", ")" + std::string(PERFGATE_SOURCE_DIR) +
                          R"(/tests/tools/node_server.js", "${PORT}", "${ROUNDS}"],
               "ready_url": "http://127.0.0.1:${PORT}/health" })",
                      R"({ "instrument": "callgrind", "requests": 60, "warmup_requests": 20 })"));
  auto first = run({{"ROUNDS", "20000"}});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_NE(first.err.find("cost phase: runtime v"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("node with V8's predictable flags"), std::string::npos) << first.err;
  EXPECT_LT(last_["cost"]["spread_pct"]["instructions_per_request"].get<double>(), 0.5)
      << last_["cost"].dump();
  auto again = run({{"ROUNDS", "20000"}});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "pass") << again.out;
  auto more = run({{"ROUNDS", "20600"}});  // +2.6 % instructions per request here
  EXPECT_EQ(more.exit_code, 1) << more.out << more.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "fail") << more.out;
}

// CPython as users run it (http.server, a thread per connection), in paired
// mode as the pull-request recipe runs it: the cost phase sets its hash seed,
// and 2.5 % more work per request in the handler fails on the counts (issue
// 47: the runtimes users run).
TEST_F(CostCliTest, APythonServicePairedFailsTwoAndAHalfPercentMoreOnSteadyCounts) {
  auto python = [](const std::string& port, const std::string& rounds) {
    return R"({ "command": [")" + python3() + R"(", ")" + std::string(PERFGATE_SOURCE_DIR) +
           R"(/tests/tools/python_server.py", "${)" + port + R"(}", "${)" + rounds + R"(}"],
      "ready_url": "http://127.0.0.1:${)" +
           port + R"(}/health" })";
  };
  std::string text =
      profile(R"({ "instrument": "callgrind", "requests": 40, "warmup_requests": 10 })", true);
  for (auto [port, rounds] : {std::pair{"PORT", "ROUNDS"}, std::pair{"BASE_PORT", "BASE_ROUNDS"}}) {
    std::string counted = service(port, rounds);
    text.replace(text.find(counted), counted.size(), python(port, rounds));
  }
  testing::write_file(profile_, text);
  // One run (CPython's start under Valgrind is about 20 s a launch): the
  // regression fails, and both builds' launches agree to well within a quarter
  // of the 2 % limit, which an unchanged build's pass rests on.
  auto more = run({{"ROUNDS", "4100"}, {"BASE_ROUNDS", "4000"}});
  EXPECT_EQ(more.exit_code, 1) << more.out << more.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "fail") << more.out;
  EXPECT_GT(metric("instructions_per_request")["change_pct"].get<double>(), 2) << more.out;
  EXPECT_NE(more.err.find("PYTHONHASHSEED=0"), std::string::npos) << more.err;
  EXPECT_LT(last_["cost"]["spread_pct"]["instructions_per_request"].get<double>(), 0.25)
      << last_["cost"].dump();
  const auto& base = last_["cost"]["baseline_launches"];
  ASSERT_EQ(base.size(), 2u) << last_["cost"].dump();
  double a = base[0]["instructions_per_request"], b = base[1]["instructions_per_request"];
  EXPECT_LT(std::abs(a - b) / std::min(a, b) * 100, 0.25) << last_["cost"].dump();
}

// CPython forking a child per connection (socketserver's ForkingMixIn), as a
// user's ForkingHTTPServer does: the handler's work is done in the child and
// counted there, so the count is its threaded twin's plus what forking costs
// (CPython's after-fork hooks and the child's exit: +2.1 % at 20 requests of
// 8000 rounds with Debian's 3.11.2, +1.7 to +3.6 % with a pyenv-built 3.11.7);
// three times the handler's work fails (issue 47: a fork-per-connection
// service counted a tenth of its work, and a 10x regression passed).
TEST_F(CostCliTest, APythonServiceForkingPerConnectionCountsWhatItsThreadedTwinCounts) {
  auto with_mode = [](const std::string& mode) {
    return service_profile(
        R"({ "command": [")" + python3() + R"(", ")" + std::string(PERFGATE_SOURCE_DIR) +
            R"(/tests/tools/python_server.py", "${PORT}", "${ROUNDS}")" + mode +
            R"(], "ready_url": "http://127.0.0.1:${PORT}/health" })",
        R"({ "instrument": "callgrind", "requests": 20, "warmup_requests": 5 })");
  };
  testing::write_file(profile_, with_mode(""));
  auto main_store = store_;
  store_ = dir_ / "twin.db";  // the twin is no baseline of the forking server
  auto twin = run({{"ROUNDS", "8000"}});
  ASSERT_EQ(twin.exit_code, 0) << twin.out << twin.err;
  double threaded = last_["cost"]["launches"][0]["instructions_per_request"];

  store_ = main_store;
  testing::write_file(profile_, with_mode(R"(, "--fork")"));
  auto forked = run({{"ROUNDS", "8000"}});
  ASSERT_EQ(forked.exit_code, 0) << forked.out << forked.err;
  double children = last_["cost"]["launches"][0]["instructions_per_request"];
  // Not a tenth (the children's work lost), and not what a child inherited
  // counted again (the parent's work, each connection): forking's own cost only.
  EXPECT_GT(children / threaded, 0.999) << children << " vs " << threaded;
  EXPECT_LT(children / threaded, 1.06) << children << " vs " << threaded;
  EXPECT_LT(last_["cost"]["spread_pct"]["instructions_per_request"].get<double>(), 0.25)
      << last_["cost"].dump();

  auto heavier = run({{"ROUNDS", "24000"}});
  EXPECT_EQ(heavier.exit_code, 1) << heavier.out << heavier.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "fail") << heavier.out;
  EXPECT_GT(metric("instructions_per_request")["change_pct"].get<double>(), 150) << heavier.out;
}

// cost.steady_runtime as a user meets it, with a stand-in `python3` on PATH (a
// script that says its version, notes the hash seed it got and execs the
// counted server): by default the phase sets PYTHONHASHSEED=0 and says so; the
// runtime's version is in the cost key, so a second run of that version is
// judged against the first and one of another version starts a new series;
// `"steady_runtime": false` starts it as written.
TEST_F(CostCliTest, AKnownRuntimeIsMadeSteadyAndItsVersionKeysTheCounts) {
  auto bin = dir_ / "bin";
  fs::create_directories(bin);
  auto seed = dir_ / "seed";
  testing::write_file(bin / "python3",
                      "#!/bin/sh\n"
                      "case \"$1\" in --version) echo \"Python $FAKE_VERSION\"; "
                      "exit 0;; esac\n"
                      "echo \"${PYTHONHASHSEED-unset}\" > \"$SEED_FILE\"\n"
                      "exec \"" +
                          std::string(PERFGATE_COUNTED_SERVER) +
                          "\" --port \"$1\" --work-rounds 2000\n");
  fs::permissions(bin / "python3", fs::perms::owner_all);
  auto with_cost = [](const std::string& cost) {
    return service_profile(
        R"({ "command": ["python3", "${PORT}"], "ready_url": "http://127.0.0.1:${PORT}/health" })",
        cost);
  };
  std::string path = bin.string() + ":" + std::getenv("PATH");
  auto env = [&](const std::string& version) {
    return std::map<std::string, std::string>{
        {"PATH", path}, {"FAKE_VERSION", version}, {"SEED_FILE", seed.string()}};
  };
  const char* cost = R"({ "instrument": "callgrind", "requests": 50, "warmup_requests": 5 })";
  testing::write_file(profile_, with_cost(cost));
  auto first = run(env("3.99.0"));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(testing::read_file(seed), "0\n");
  EXPECT_NE(first.err.find("cost phase: runtime Python 3.99.0; python with PYTHONHASHSEED=0"),
            std::string::npos)
      << first.err;
  auto again = run(env("3.99.0"));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "pass") << again.out;
  EXPECT_TRUE(metric("instructions_per_request")["change_pct"].is_number()) << again.out;
  auto upgraded = run(env("3.99.1"));
  ASSERT_EQ(upgraded.exit_code, 0) << upgraded.out << upgraded.err;
  EXPECT_FALSE(metric("instructions_per_request")["change_pct"].is_number())
      << "judged across runtime versions:\n"
      << upgraded.out;

  testing::write_file(profile_, with_cost(R"({ "instrument": "callgrind", "requests": 50,
      "warmup_requests": 5, "steady_runtime": false })"));
  auto as_written = run(env("3.99.0"));
  ASSERT_EQ(as_written.exit_code, 0) << as_written.out << as_written.err;
  EXPECT_EQ(testing::read_file(seed), "unset\n");
  EXPECT_NE(as_written.err.find("as started (cost.steady_runtime: false)"), std::string::npos)
      << as_written.err;
}

// Paired mode counts both builds in the same job: the same build passes, a
// slower one fails, whatever the timed windows said.
TEST_F(CostCliTest, PairedModeCountsBothSides) {
  testing::write_file(profile_, profile(kCost, true));
  auto same = run({{"ROUNDS", "2000"}, {"BASE_ROUNDS", "2000"}});
  ASSERT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_EQ(metric("instructions_per_request")["change_pct"], 0);
  EXPECT_NE(same.out.find("baseline side: instructions_per_request"), std::string::npos)
      << same.out;
  auto slower = run({{"ROUNDS", "2200"}, {"BASE_ROUNDS", "2000"}});
  EXPECT_EQ(slower.exit_code, 1) << slower.out << slower.err;
  EXPECT_EQ(metric("instructions_per_request")["verdict"], "fail");
  EXPECT_EQ(testing::validate_result_json(json_).exit_code, 0);
  // Judged again from the store, against its baseline side's own counts: the
  // same verdict (it came back warn when the baseline side's launches were lost).
  expect_compare_fails_the_count_again();
}

// A paired profile whose baseline build does `rounds` work on even launches
// and `other` on odd ones (its launches counted in the file $LAUNCHES).
std::string alternating_baseline(const std::string& cost, int rounds, int other) {
  std::string text = profile(cost, true);
  std::string steady = service("BASE_PORT", "BASE_ROUNDS");
  std::string alternating = R"({ "command": ["/bin/sh", "-c",
        "n=$(cat \"$LAUNCHES\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$LAUNCHES\"; r=)" +
                            std::to_string(rounds) +
                            "; [ $((n % 2)) = 1 ] && r=" + std::to_string(other) +
                            R"(; exec \"$0\" --port \"$1\" --work-rounds $r",
        ")" + std::string(PERFGATE_COUNTED_SERVER) +
                            R"(", "${BASE_PORT}"],
      "ready_url": "http://127.0.0.1:${BASE_PORT}/health" })";
  text.replace(text.find(steady), steady.size(), alternating);
  return text;
}

// Issue 47: two agreeing candidate launches were taken as an exact count while
// the baseline side's launches disagreed. Here the baseline build does 5 % more
// work on every other launch: the count is inconclusive and says which side
// (with cost.max_launches at 2: no launches added).
TEST_F(CostCliTest, ABaselineSideWhoseLaunchesDisagreeMakesTheCountInconclusive) {
  testing::write_file(profile_,
                      alternating_baseline(R"({ "instrument": "callgrind", "requests": 200,
          "warmup_requests": 40, "max_launches": 2 })",
                                           2000, 2100));
  auto r = run({{"ROUNDS", "2000"}, {"LAUNCHES", (dir_ / "launches").string()}});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const auto& count = metric("instructions_per_request");
  EXPECT_EQ(count["verdict"], "warn") << count.dump(2);
  EXPECT_NE(count["message"].get<std::string>().find("the baseline's launches differ by"),
            std::string::npos)
      << count["message"];
  // Both sides' launches are in the JSON, so that a reader can judge them again.
  ASSERT_EQ(last_["cost"]["baseline_launches"].size(), 2u) << last_["cost"].dump(2);
  EXPECT_NE(last_["cost"]["baseline_launches"][0]["instructions_per_request"],
            last_["cost"]["baseline_launches"][1]["instructions_per_request"]);
  EXPECT_EQ(testing::validate_result_json(json_).exit_code, 0);
}

// Issue 47: a count that two launches a side leave undecided adds launches in
// turns until it decides. The baseline build's launches alternate between two
// amounts of work (their counts about 1 % apart: more than a quarter of the
// 2 % fail limit), the candidate's sits between them. Two launches a side
// cannot pass; at four the t interval carries the spread, and passes. Then the
// store's earlier launches do what the added ones did.
TEST_F(CostCliTest, AnUndecidedCountAddsLaunchesUntilItDecides) {
  // A run with these cost keys beside 200 requests after 40; `launches`: its counter file.
  auto alternating = [&](const std::string& keys, const std::string& launches) {
    testing::write_file(profile_, alternating_baseline(R"({ "instrument": "callgrind",
        "requests": 200, "warmup_requests": 40, )" + keys + " }",
                                                       2000, kOtherRounds));
    return run({{"ROUNDS", kMiddleRounds}, {"LAUNCHES", (dir_ / launches).string()}});
  };
  auto r = alternating(R"("max_launches": 4)", "launches");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto& count = metric("instructions_per_request");
  EXPECT_EQ(count["verdict"], "pass") << count.dump(2);
  EXPECT_EQ(last_["cost"]["launches"].size(), 4u) << last_["cost"].dump(2);
  EXPECT_EQ(last_["cost"]["baseline_launches"].size(), 4u);
  EXPECT_NE(r.err.find("cost phase: counts undecided after 2 launches a side; up to 2 more"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("cost phase: counts undecided after 2 launches a side; 2 more a side "
                       "counted (cost.max_launches 4)"),
            std::string::npos)
      << r.out;
  // Each of the phase's two looks judged at half the count's share of the
  // budget (a timed metric judged once is at the whole share).
  double share = metric("throughput_rps")["test"]["confidence_pct"].get<double>();
  EXPECT_NEAR(count["test"]["confidence_pct"].get<double>(), 100 - (100 - share) / 2, 1e-9)
      << count.dump(2);
  EXPECT_EQ(testing::validate_result_json(json_).exit_code, 0);

  // The next run of the same cost key reads that run's launches from the store
  // (both sides: 6 degrees of freedom, as four launches a side would give):
  // two launches a side, none added (max_launches 2), now decide what they
  // could not alone; the test's method says what joined it.
  auto pooled = alternating(R"("max_launches": 2)", "launches3");
  EXPECT_EQ(pooled.exit_code, 0) << pooled.out << pooled.err;
  const auto& with_pool = metric("instructions_per_request");
  EXPECT_EQ(with_pool["verdict"], "pass") << with_pool.dump(2);
  EXPECT_EQ(last_["cost"]["launches"].size(), 2u);
  EXPECT_NE(with_pool["test"]["method"].get<std::string>().find(
                "with the launch noise of 2 earlier runs (8 df in all)"),
            std::string::npos)
      << with_pool.dump(2);

  // A budget the first launches already spent adds none, and says so (a new
  // store: no earlier runs' launches to lean on).
  store_ = dir_ / "fresh.db";
  auto spent = alternating(R"("max_launches": 4, "budget": "1s")", "launches2");
  EXPECT_EQ(spent.exit_code, 2) << spent.out << spent.err;
  EXPECT_TRUE(metric("instructions_per_request")["inconclusive"].get<bool>());
  EXPECT_EQ(last_["cost"]["launches"].size(), 2u);
  EXPECT_NE(spent.out.find("none added, the next pair would end past cost.budget 1s"),
            std::string::npos)
      << spent.out;

  // cost.max_launches below cost.launches: one line naming the key, exit 3,
  // the store's runs untouched.
  auto runs_before = testing::read_file(store_);
  testing::write_file(profile_, profile(R"({ "instrument": "callgrind", "launches": 4,
      "max_launches": 3 })",
                                        true));
  auto bad = run({{"ROUNDS", kMiddleRounds}, {"BASE_ROUNDS", kMiddleRounds}});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_NE(bad.err.find("cost.max_launches: must be at least cost.launches (4), got 3"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  EXPECT_EQ(testing::read_file(store_), runs_before);
}

// No Valgrind on the runner: one line says so, the phase is a skipped JUnit
// case and the timed verdict stands; a profile that requires it exits 3 before
// any load, in stored and in paired mode (issue 47: after the whole timed phase).
TEST_F(CostCliTest, WithoutValgrindTheCountIsSkippedOrRequired) {
  TempDir empty_path;
  testing::write_file(profile_, profile(kCost, false));
  auto skipped = run({{"ROUNDS", "10"}, {"PATH", empty_path.path().string()}});
  ASSERT_EQ(skipped.exit_code, 0) << skipped.out << skipped.err;
  EXPECT_NE(skipped.out.find("cost phase skipped: valgrind is not installed"), std::string::npos)
      << skipped.out;
  auto junit = testing::read_file(junit_);
  EXPECT_NE(junit.find("name=\"cost\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<skipped"), std::string::npos);
  EXPECT_EQ(last_["cost"]["skipped"],
            "valgrind is not installed (Debian: apt-get install valgrind)");

  testing::write_file(profile_,
                      profile(R"({ "instrument": "callgrind", "required": true })", false));
  auto required = run({{"ROUNDS", "10"}, {"PATH", empty_path.path().string()}});
  EXPECT_EQ(required.exit_code, 3);
  EXPECT_NE(required.err.find("cost phase required (cost.required), and it cannot count here: "
                              "valgrind is not installed"),
            std::string::npos)
      << required.err;
  EXPECT_EQ(required.err.find("load: "), std::string::npos) << "measured first:\n" << required.err;

  testing::write_file(profile_,
                      profile(R"({ "instrument": "callgrind", "required": true })", true));
  auto paired =
      run({{"ROUNDS", "10"}, {"BASE_ROUNDS", "10"}, {"PATH", empty_path.path().string()}});
  EXPECT_EQ(paired.exit_code, 3);
  EXPECT_NE(paired.err.find("nothing was measured"), std::string::npos) << paired.err;
  EXPECT_EQ(paired.err.find("starting service"), std::string::npos) << "measured first:\n"
                                                                    << paired.err;
}

// A service that does not come up under Valgrind (here a wrapper that refuses
// to, as an ASan build it execs would fail): under "auto" the phase is skipped
// with Valgrind's last words and the timed verdict stands; named, it is exit 3.
TEST_F(CostCliTest, AServiceThatCannotRunUnderValgrindSkipsAutoAndFailsNamed) {
  auto with_cost = [](const std::string& cost) {
    return service_profile(R"({ "command": ["/bin/sh", "-c",
        "case \"$LD_PRELOAD\" in *vgpreload*) [ -z \"$HANG\" ] || exec sleep 60; echo 'this build refuses Valgrind' >&2; exit 1;; esac; exec \"$0\" --port \"$1\" --work-rounds 10",
        ")" + std::string(PERFGATE_COUNTED_SERVER) +
                               R"(", "${PORT}"], "ready_url": "http://127.0.0.1:${PORT}/health" })",
                           cost);
  };
  testing::write_file(profile_, with_cost(R"({ "instrument": "auto", "requests": 50 })"));
  auto skipped = run({});
  ASSERT_EQ(skipped.exit_code, 0) << skipped.out << skipped.err;
  if (last_["cost"].value("instrument", "") == "perf") GTEST_SKIP() << "this runner has a PMU";
  EXPECT_NE(skipped.out.find("cost phase skipped:"), std::string::npos) << skipped.out;
  EXPECT_NE(skipped.out.find("service \"/bin/sh\" under valgrind exited with status 1 before it "
                             "was ready; the timed verdict stands"),
            std::string::npos)
      << skipped.out;
  // The service's own words are on stderr, where its chatter always goes.
  EXPECT_NE(skipped.err.find("this build refuses Valgrind"), std::string::npos) << skipped.err;
  EXPECT_NE(testing::read_file(junit_).find("<skipped"), std::string::npos);

  testing::write_file(profile_, with_cost(R"({ "instrument": "callgrind", "requests": 50 })"));
  auto named = run({});
  EXPECT_EQ(named.exit_code, 3) << named.out << named.err;
  EXPECT_NE(named.err.find("service \"/bin/sh\" under valgrind exited"), std::string::npos)
      << named.err;

  // One that never answers under Valgrind: the phase's own timeout is named.
  testing::write_file(
      profile_,
      with_cost(R"({ "instrument": "callgrind", "requests": 50, "ready_timeout": "2s" })"));
  auto slow = run({{"HANG", "1"}});
  EXPECT_EQ(slow.exit_code, 3) << slow.out << slow.err;
  EXPECT_NE(slow.err.find("cost.ready_timeout waits longer"), std::string::npos) << slow.err;
  EXPECT_EQ(slow.err.find("service.ready_timeout"), std::string::npos) << slow.err;
}

// Issue 50 item 4: the cost phase's client waited per read, not per response:
// a service that, under Valgrind, dribbles its headers, sends 100 Continue for
// ever or never ends a chunked body held perfgate for good. Each response must
// now come whole within cost.timeout.
TEST_F(CostCliTest, AServiceThatNeverFinishesAnAnswerUnderTheCountEndsTheRun) {
  for (const std::string mode : {"headers", "continue", "chunks"}) {
    SCOPED_TRACE(mode);
    testing::write_file(
        profile_,
        service_profile(R"({ "command": [")" + python3() + R"(", ")" +
                            std::string(PERFGATE_SOURCE_DIR) +
                            R"(/tests/tools/stalling_server.py", "${PORT}", ")" + mode +
                            R"("], "ready_url": "http://127.0.0.1:${PORT}/health" })",
                        R"({ "instrument": "callgrind", "requests": 20, "warmup_requests": 5,
                             "timeout": "3s" })"));
    auto r = run({});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find("cost phase: no complete response within 3s"), std::string::npos) << r.err;
  }
}

// Issue 50 item 9: perfgate killed by SIGKILL during the cost phase left its
// perfgate-cost-* folder (dumps, Valgrind's log, vgdb's FIFOs) in $TMPDIR.
// The service's keeper, which outlives perfgate to end the service, removes it.
TEST_F(CostCliTest, ASigkilledCostPhaseLeavesNoFolderBehind) {
  auto tmp = dir_ / "tmp";
  fs::create_directory(tmp);
  testing::write_file(profile_, profile(kCost, false));
  // Once Valgrind's log is in the phase's folder, perfgate is killed.
  std::string script =
      "\"$0\" run \"$1\" --no-record & pid=$!; n=0; "
      "while ! ls \"$TMPDIR\"/perfgate-cost-*/valgrind.* >/dev/null 2>&1 && [ $n -lt 1200 ]; do "
      "sleep 0.05; n=$((n+1)); done; kill -KILL $pid; wait $pid; "
      "n=0; while ls -d \"$TMPDIR\"/perfgate-cost-* >/dev/null 2>&1 && [ $n -lt 400 ]; do "
      "sleep 0.05; n=$((n+1)); done; ls -A \"$TMPDIR\"";
  auto r =
      testing::run_command({"/bin/sh", "-c", script, testing::perfgate_binary(), profile_.string()},
                           {{"TMPDIR", tmp.string()},
                            {"PORT", std::to_string(testing::unused_port())},
                            {"ROUNDS", "2000"}},
                           {}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;  // ls's: the folder listing
  EXPECT_EQ(r.out, "") << "left in $TMPDIR: " << r.out;
}

// Issue 50 item 11: SIGINT during the first launch of an "auto" cost phase
// was taken for a service that cannot run under Valgrind: the phase was
// skipped, the run judged on its timed figures and stored (exit 2), while the
// line said "nothing stored". A stop ends the run, and nothing is stored.
TEST_F(CostCliTest, SigintDuringTheFirstLaunchOfAnAutoCostPhaseStoresNothing) {
  auto tmp = dir_ / "tmp";
  fs::create_directory(tmp);
  testing::write_file(profile_, profile(R"({ "instrument": "auto", "requests": 200 })", false));
  std::string script =
      "\"$0\" run \"$1\" --store \"$2\" & pid=$!; n=0; "
      "while ! ls \"$TMPDIR\"/perfgate-cost-*/valgrind.* >/dev/null 2>&1 && [ $n -lt 1200 ]; do "
      "sleep 0.05; n=$((n+1)); done; kill -INT $pid; wait $pid";
  auto r = testing::run_command(
      {"/bin/sh", "-c", script, testing::perfgate_binary(), profile_.string(), store_.string()},
      {{"TMPDIR", tmp.string()},
       {"PORT", std::to_string(testing::unused_port())},
       {"ROUNDS", "2000"}},
      {}, 120);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("interrupted by SIGINT or SIGTERM during the cost phase; the service was "
                       "stopped, nothing stored"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("cost phase skipped"), std::string::npos) << r.err;
  if (fs::exists(store_)) {
    auto store = BaselineStore::open(store_, BaselineStore::Mode::kReadOnly);
    EXPECT_TRUE(store.runs().empty()) << "an interrupted run was stored";
  }
}

// Issue 50 item 14: a required count that cannot run here was found only
// after the whole timed load: a $TMPDIR Valgrind cannot use, an https target
// (the phase's client speaks plain HTTP). Both are said before any load.
TEST_F(CostCliTest, ARequiredCountThatCannotRunIsSaidBeforeTheLoad) {
  testing::write_file(profile_,
                      profile(R"({ "instrument": "callgrind", "required": true })", false));
  auto r = run({{"ROUNDS", "2000"}, {"TMPDIR", (dir_ / "missing").string()}});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("cost phase required (cost.required), and it cannot count here: TMPDIR (" +
                       (dir_ / "missing").string() + ") is not a folder"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("starting service"), std::string::npos) << "a load ran: " << r.err;

  auto https = profile(R"({ "instrument": "callgrind", "required": true })", false);
  https.replace(https.find("http://127.0.0.1:${PORT}/\""), 7, "https://");
  testing::write_file(profile_, https);
  auto tls = run({{"ROUNDS", "2000"}});
  EXPECT_EQ(tls.exit_code, 3) << tls.out << tls.err;
  EXPECT_NE(tls.err.find("the cost phase sends plain http:// requests only"), std::string::npos)
      << tls.err;
  EXPECT_EQ(tls.err.find("starting service"), std::string::npos) << "a load ran: " << tls.err;
  EXPECT_FALSE(fs::exists(store_) &&
               BaselineStore::open(store_, BaselineStore::Mode::kReadOnly).run_count() > 0);
}

// Issue 50 item 15: a valgrind that does not answer `--version` was "not
// installed" after 10 s. It is said as it is.
TEST_F(CostCliTest, AValgrindThatHangsIsNotSaidToBeMissing) {
  auto bin = dir_ / "bin";
  fs::create_directories(bin);
  testing::write_file(bin / "valgrind", "#!/bin/sh\nexec /bin/sleep 300\n");
  fs::permissions(bin / "valgrind", fs::perms::owner_all);
  testing::write_file(profile_,
                      profile(R"({ "instrument": "callgrind", "required": true })", false));
  auto r = run({{"ROUNDS", "2000"}, {"PATH", bin.string() + ":/usr/bin:/bin"}});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("valgrind --version did not answer within 10s"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not installed"), std::string::npos) << r.err;
}

// A service perfgate only watches cannot be restarted under an instrument.
TEST_F(CostCliTest, AWatchedServiceIsNotCounted) {
  testing::DemoServerProcess server;
  testing::write_file(profile_, R"({ "name": "watched",
    "target": { "url": ")" + server.url() +
                                    R"(" },
    "load": { "threads": 1, "connections": 2, "duration": "150ms", "warmup": "0s" },
    "repeat": { "count": 2, "discard": 0 },
    "saturation": )" + std::string(kQuiet) +
                                    R"(,
    "thresholds": { "error_rate": { "max": "1%" } },
    "cost": "callgrind" })");
  auto r = run({});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("counts a service that perfgate starts"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace perfgate
