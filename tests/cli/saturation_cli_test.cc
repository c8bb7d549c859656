// End-to-end: the real binary, a real local server, and CPU burners the test
// starts on every core, so that the load machine is saturated on purpose.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "perfgate/store/baseline_store.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::DemoServerProcess;
using testing::TempDir;

// One busy-looping child per core, each ending by itself after `limit` and
// killed by its PID on destruction, whichever comes first.
class CpuBurners {
 public:
  explicit CpuBurners(std::chrono::seconds limit) {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < cores; ++i) {
      pid_t pid = fork();
      if (pid == 0) burn(limit);
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~CpuBurners() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  CpuBurners(const CpuBurners&) = delete;
  CpuBurners& operator=(const CpuBurners&) = delete;

 private:
  [[noreturn]] static void burn(std::chrono::seconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < end)
      for (int i = 0; i < 100000; ++i) x = x + 1;
    _exit(0);
  }
  std::vector<pid_t> pids_;
};

// `saturation` limits as profile text; "" keeps the defaults (foreign CPU 25%).
std::string profile_text(const std::string& saturation, const std::string& service = "") {
  return R"({
  "name": "saturation-cli-test",
  "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
  "load": { "threads": 1, "connections": 8, "duration": "1s", "warmup": "200ms" },
  "repeat": { "count": 3, "discard": 1 },
  "thresholds": {
    "throughput": { "warn": "30%", "fail": "50%" },
    "latency_p99": { "warn": "50%", "fail": "100%" }
  })" + saturation +
         service + R"(
})";
}

// A profile that never calls the host saturated: for runs that must be judged
// on their figures on a shared, busy machine.
const std::string kNeverSaturated = R"(,
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" })";

class SaturationCliTest : public ::testing::Test {
 protected:
  testing::CommandResult run(uint16_t port, const std::string& profile,
                             std::vector<std::string> extra = {}) {
    testing::write_file(profile_, profile);
    std::vector<std::string> args = {testing::perfgate_binary(), "run", profile_.string(),
                                     "--store", store_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_command(args, {{"TARGET_PORT", std::to_string(port)}});
  }

  TempDir dir_;
  std::filesystem::path profile_ = dir_ / "profile.json";
  std::filesystem::path store_ = dir_ / "perfgate.db";
};

TEST_F(SaturationCliTest, BurnedHostIsSaturatedExitsWarnAndNeverBecomesBaseline) {
  {
    DemoServerProcess fast({"--delay", "5ms", "--delay-every", "1"});
    auto first = run(fast.port(), profile_text(kNeverSaturated));
    ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  }
  // 60 ms per response against a 5 ms baseline: a sure fail, were the host quiet.
  DemoServerProcess slow({"--delay", "60ms", "--delay-every", "1"});
  auto json_path = dir_ / "result.json";
  testing::CommandResult r;
  {
    CpuBurners burners(std::chrono::seconds(60));
    r = run(slow.port(), profile_text(""), {"--json", json_path.string()});
  }
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  auto result = nlohmann::json::parse(testing::read_file(json_path));
  EXPECT_TRUE(result["saturation"]["saturated"].get<bool>()) << result.dump(2);
  bool foreign = false;
  for (const auto& reason : result["saturation"]["reasons"])
    foreign = foreign || reason.get<std::string>().starts_with("foreign CPU");
  EXPECT_TRUE(foreign) << result["saturation"].dump();
  // And what to do about it (a newcomer's laptop met the limit and no way out).
  EXPECT_NE(r.out.find("what to do: other processes used the CPU: stop them for the run"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("saturation.foreign_cpu is the limit"), std::string::npos) << r.out;

  auto store = BaselineStore::open(store_, BaselineStore::Mode::kReadOnly);
  auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& run : runs)
    if (run.saturation.saturated) {
      EXPECT_FALSE(run.eligible_as_baseline());
    }
  int eligible = 0;
  for (const auto& run : runs) eligible += run.eligible_as_baseline();
  EXPECT_EQ(eligible, 1);  // the quiet first run only
}

double service_cpu_us_per_request(const nlohmann::json& result) {
  const auto& metric = result["metrics"]["service_cpu_us_per_request"];
  return metric.is_object() ? metric["value"].get<double>() : -1;
}

TEST_F(SaturationCliTest, ServiceCpuPerRequestGrowsWithTheWorkPerResponse) {
  auto service = [](const std::string& work) {
    return R"(,
  "service": { "command": ["${PERFGATE}", "demo-server", "--port", "${TARGET_PORT}",
                           "--work", ")" +
           work + R"("] })";
  };
  std::map<std::string, double> cost;
  for (const std::string work : {"0s", "200us"}) {
    auto json_path = dir_ / ("result-" + work + ".json");
    auto r = run(testing::unused_port(), profile_text(kNeverSaturated, service(work)),
                 {"--json", json_path.string(), "--no-record"});
    ASSERT_NE(r.exit_code, 3) << r.out << r.err;
    cost[work] = service_cpu_us_per_request(nlohmann::json::parse(testing::read_file(json_path)));
  }
  EXPECT_GT(cost["0s"], 0) << "no service cost measured";
  // 200 µs of CPU per response dwarfs what parsing a request costs.
  EXPECT_GT(cost["200us"], cost["0s"] + 100) << cost["0s"] << " vs " << cost["200us"];
}

// A CPU-bound service (a thread per connection, 20 of them) and perfgate's load on
// a small runner keep each other waiting in every run alike. Only the cpu_pressure
// rule is on: it must judge the waiting that is not the run's own, so such a run
// is not saturated by itself, and the stored windows show the pressure, the
// run's own waits and what was judged.
TEST_F(SaturationCliTest, ACpuBoundServiceWaitingForItsOwnLoadIsNotPressureFromOthers) {
  if (!std::filesystem::exists("/proc/pressure/cpu"))
    GTEST_SKIP() << "no PSI on this kernel: the cpu_pressure rule has nothing to judge";
  const std::string only_pressure = R"(,
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "steal": "100%",
                  "memory_available": "0%", "cpu_pressure": "20%" },
  "service": { "command": ["${PERFGATE}", "demo-server", "--port", "${TARGET_PORT}",
                           "--work", "100us"] })";
  auto text = profile_text(only_pressure);
  const std::string eight = "\"connections\": 8";
  text.replace(text.find(eight), eight.size(), "\"connections\": 20");
  auto json_path = dir_ / "result.json";
  auto r = run(testing::unused_port(), text, {"--json", json_path.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto result = nlohmann::json::parse(testing::read_file(json_path));
  EXPECT_FALSE(result["saturation"]["saturated"].get<bool>()) << result["saturation"].dump();

  auto store = BaselineStore::open(store_, BaselineStore::Mode::kReadOnly);
  auto stored = store.run(result["run_id"].get<int64_t>());
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->eligible_as_baseline());
  auto doc = nlohmann::json::parse(stored->host_samples_json);
  double judged_max = 0;
  int windows = 0;
  for (const auto& w : doc["windows"]) {
    if (w["samples"].get<int>() == 0) continue;
    ++windows;
    ASSERT_TRUE(w["cpu_pressure_pct"].is_number()) << w.dump();
    double raw = w["cpu_pressure_pct"].get<double>();
    double judged = w["foreign_cpu_pressure_pct"].get<double>();
    EXPECT_LE(judged, raw) << w.dump();
    judged_max = std::max(judged_max, judged);
    if (!w["run_cpu_wait_pct"].is_number()) continue;  // a kernel without schedstat
    // 21 threads or more on a runner's few cores: the service and load wait.
    if (std::thread::hardware_concurrency() <= 4) {
      EXPECT_GT(w["run_cpu_wait_pct"].get<double>(), 0.0) << w.dump();
    }
  }
  EXPECT_GE(windows, 2);
  EXPECT_DOUBLE_EQ(result["load_machine"]["cpu_pressure_max_pct"].get<double>(), judged_max);
}

// A neighbour's burst in one or two windows of five, timed by the run's own
// progress: as soon as perfgate logs iteration 3, every core burns for 0.6 s
// (`timeout` ends each burner by itself). Those windows are dropped from the
// verdict and named; the run is neither saturated nor judged on them.
TEST_F(SaturationCliTest, ABurstInAMinorityOfWindowsIsDroppedNotJudged) {
  const std::string only_foreign = R"(,
  "saturation": { "foreign_cpu": "25%", "generator_cpu": "100%", "steal": "100%",
                  "memory_available": "0%", "cpu_pressure": "100%" })";
  auto text = profile_text(only_foreign);
  const std::string three = "\"repeat\": { \"count\": 3, \"discard\": 1 }";
  text.replace(text.find(three), three.size(), "\"repeat\": { \"count\": 6, \"discard\": 1 }");
  testing::write_file(profile_, text);
  DemoServerProcess server({"--delay", "2ms", "--delay-every", "1"});
  auto json_path = dir_ / "result.json";
  auto log = dir_ / "stderr.log";
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string script =
      "\"$0\" run \"$1\" --store \"$2\" --json \"$3\" 2>\"$4\" & pid=$!; "
      "while ! grep -q 'iteration 3/6:' \"$4\" && kill -0 $pid 2>/dev/null; do sleep 0.02; done; "
      "i=0; while [ $i -lt \"$5\" ]; do timeout 0.6 sh -c 'while :; do :; done' & i=$((i+1)); "
      "done; wait $pid";
  auto r = testing::run_command(
      {"/bin/sh", "-c", script, testing::perfgate_binary(), profile_.string(), store_.string(),
       json_path.string(), log.string(), std::to_string(cores)},
      {{"TARGET_PORT", std::to_string(server.port())}});
  std::string err = testing::read_file(log);
  ASSERT_EQ(r.exit_code, 0) << r.out << err;
  auto result = nlohmann::json::parse(testing::read_file(json_path));
  EXPECT_FALSE(result["saturation"]["saturated"].get<bool>()) << result["saturation"].dump();
  std::string notes = result["notes"].dump();
  EXPECT_TRUE(notes.find("1 of 5 windows dropped as disturbed, not judged (iteration ") !=
                  std::string::npos ||
              notes.find("2 of 5 windows dropped as disturbed, not judged (iteration ") !=
                  std::string::npos)
      << notes << err;
  EXPECT_NE(notes.find(": foreign CPU "), std::string::npos) << notes;

  auto store = BaselineStore::open(store_, BaselineStore::Mode::kReadOnly);
  auto run = store.run(result["run_id"].get<int64_t>());
  ASSERT_TRUE(run);
  ASSERT_EQ(run->iterations.size(), 6u);
  // Before the burst: judged. The burst began with iteration 4 and lasted 0.6 s.
  EXPECT_FALSE(run->iterations[1].discarded);
  EXPECT_FALSE(run->iterations[2].discarded);
  EXPECT_TRUE(run->iterations[3].discarded || run->iterations[4].discarded) << notes;
  EXPECT_FALSE(run->iterations[5].discarded) << notes;
  EXPECT_TRUE(run->eligible_as_baseline());

  // compare judges the stored run as it ran, and says why windows are missing.
  auto compared = testing::run_command(
      {testing::perfgate_binary(), "compare", std::to_string(run->id), "--store", store_.string()});
  EXPECT_EQ(compared.exit_code, 0) << compared.out << compared.err;
  EXPECT_NE(compared.out.find(" windows were dropped as disturbed when it ran, not judged "
                              "(iteration"),
            std::string::npos)
      << compared.out;
}

// A wrong path on a saturated load machine (issue 46): every request answered
// 404, and every window saturated by the memory rule alone (no host has all its
// memory available, so no shared runner's steal decides which rule is named).
// A busy load machine can time requests out, reset or refuse them; it cannot
// make the service answer 404: the run fails, and the console names the 404s.
TEST_F(SaturationCliTest, AWrongPathFailsEvenOnASaturatedMachine) {
  auto text = profile_text(R"(,
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "100%" })");
  const std::string thresholds = "\"thresholds\": {";
  text.replace(text.find(thresholds), thresholds.size(),
               thresholds + "\n    \"error_rate\": { \"max\": \"0.1%\" },");
  DemoServerProcess wrong_path({"--error-every", "1", "--error-status", "404"});
  auto json_path = dir_ / "result.json";
  auto r = run(wrong_path.port(), text, {"--json", json_path.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(" with a status not counted as success (4xx x "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("saturated: memory available "), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("error_rate_pct .* 100\\.000 .* fail"))) << r.out;
  auto result = nlohmann::json::parse(testing::read_file(json_path));
  EXPECT_TRUE(result["saturation"]["saturated"].get<bool>()) << result["saturation"].dump();
  const auto& error_rate = result["metrics"]["error_rate_pct"];
  EXPECT_EQ(error_rate["verdict"], "fail") << error_rate.dump();
  auto message = error_rate["message"].get<std::string>();
  EXPECT_TRUE(
      message.starts_with("fails although the load machine was saturated (memory available "))
      << message;
  EXPECT_NE(message.find("; failed: 4xx x "), std::string::npos) << message;

  // Failed or not, a saturated run never becomes a baseline.
  auto store = BaselineStore::open(store_, BaselineStore::Mode::kReadOnly);
  auto run = store.run(result["run_id"].get<int64_t>());
  ASSERT_TRUE(run);
  EXPECT_FALSE(run->eligible_as_baseline());
}

}  // namespace
}  // namespace perfgate

namespace perfgate {
namespace {

// 8 connections to a server taking 10 ms each can carry about 800 req/s: asked for
// 4000 in the open model, the run measured another load than the profile's.
TEST(OpenModelSaturationCliTest, RateNotAchievedIsASaturationReason) {
  TempDir dir;
  DemoServerProcess slow({"--delay", "10ms", "--delay-every", "1"});
  auto text = profile_text(kNeverSaturated);
  text.replace(text.find("\"warmup\": \"200ms\""), 17, "\"warmup\": \"200ms\", \"rate\": 4000");
  testing::write_file(dir / "profile.json", text);
  auto json_path = dir / "result.json";
  auto r = testing::run_command(
      {testing::perfgate_binary(), "run", (dir / "profile.json").string(), "--store",
       (dir / "perfgate.db").string(), "--json", json_path.string()},
      {{"TARGET_PORT", std::to_string(slow.port())}});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  auto result = nlohmann::json::parse(testing::read_file(json_path));
  bool rate = false;
  for (const auto& reason : result["saturation"]["reasons"])
    rate = rate || reason.get<std::string>().starts_with("open model: ");
  EXPECT_TRUE(rate) << result["saturation"].dump();
}

// A window without one response or error: the target hung (every request takes
// 3 s, under the 5 s timeout, so the first kept window of 1 s has nothing), or
// the load machine stalled. Which of the two, the saturation rules tell.
testing::CommandResult run_against_hung_target(const std::string& saturation) {
  TempDir dir;
  DemoServerProcess hung({"--delay", "3s", "--delay-every", "1"});
  testing::write_file(dir / "profile.json", profile_text(saturation));
  return testing::run_command({testing::perfgate_binary(), "run", (dir / "profile.json").string(),
                               "--store", (dir / "perfgate.db").string()},
                              {{"TARGET_PORT", std::to_string(hung.port())}});
}

TEST(StalledWindowCliTest, AnEmptyWindowOnAQuietMachineIsAnError) {
  auto r = run_against_hung_target(kNeverSaturated);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("in iteration 2 (0 socket errors): the target hung, or the load machine "
                       "stalled through the window (that window: host CPU "),
            std::string::npos)
      << r.err;
}

TEST(StalledWindowCliTest, AnEmptyWindowOnASaturatedMachineIsInconclusive) {
  // No host has all its memory available: every window is saturated, by that
  // rule alone (a shared runner's steal must not decide which rule is named).
  auto r = run_against_hung_target(R"(,
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "100%" })");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("saturated: no response from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on a load machine saturated in that window: memory available "),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace perfgate
