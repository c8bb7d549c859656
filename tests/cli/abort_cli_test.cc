// SIGINT and SIGTERM during `perfgate run`: the load stops, the service perfgate
// started is stopped, the run is stored as aborted (never a baseline), reports say
// so, and the exit code is 3.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "perfgate/store/baseline_store.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::TempDir;

// Twenty one-second iterations: far longer than the test waits before the signal.
std::string long_profile(uint16_t port) {
  std::string p = std::to_string(port);
  return R"({
  "name": "abort-test",
  "target": { "url": "http://127.0.0.1:)" +
         p + R"(/" },
  "load": { "threads": 1, "connections": 4, "duration": "1s", "warmup": "100ms" },
  "repeat": { "count": 20, "discard": 0 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "service": {
    "command": [")" +
         testing::perfgate_binary() + R"(", "demo-server", "--port", ")" + p +
         R"(", "--delay", "5ms"],
    "ready_url": "http://127.0.0.1:)" +
         p + R"(/health"
  }
})";
}

class AbortCliTest : public ::testing::TestWithParam<const char*> {};

TEST_P(AbortCliTest, SignalStoresAnAbortedRunAndStopsTheService) {
  TempDir dir;
  auto port = testing::unused_port();
  testing::write_file(dir / "profile.json", long_profile(port));
  auto store = dir / "perfgate.db";
  auto junit = dir / "junit.xml";
  // The shell waits for the load to be under way (the service answers, then two
  // more seconds), signals perfgate by its PID and reports perfgate's exit code.
  std::string script =
      "\"$0\" run \"$1\" --store \"$2\" --junit \"$3\" --json \"$4\" & pid=$!; "
      "sleep 3; kill -" +
      std::string(GetParam()) + " $pid; wait $pid";
  auto r = testing::run_command(
      {"/bin/sh", "-c", script, testing::perfgate_binary(), (dir / "profile.json").string(),
       store.string(), junit.string(), (dir / "result.json").string()},
      {}, {}, 60);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("perfgate: error: aborted: interrupted"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("never a baseline"), std::string::npos) << r.err;
  // The service perfgate started is gone with its port.
  EXPECT_EQ(testing::http_get(port, "/health"), "");

  auto s = BaselineStore::open(store, BaselineStore::Mode::kReadOnly);
  ASSERT_EQ(s.run_count(), 1);
  auto run = s.run(1);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, "aborted");
  EXPECT_FALSE(run->eligible_as_baseline());
  EXPECT_LT(run->iterations.size(), 20u);
  auto check = testing::run_command(
      {testing::perfgate_binary(), "store", "check", "--store", store.string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  auto result = nlohmann::json::parse(testing::read_file(dir / "result.json"));
  EXPECT_EQ(result["verdict"], "error");
  EXPECT_NE(result["error"].get<std::string>().find("aborted"), std::string::npos);
  EXPECT_NE(testing::read_file(junit).find("aborted"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Signals, AbortCliTest, ::testing::Values("INT", "TERM"));

// The service's root process exits mid-run (its child still serves, so only the
// watch on the process can tell): the run ends at once with the reason, stores
// nothing, and the rest of the service's process group goes with it.
TEST(ServiceDeathCliTest, ServiceThatDiesMidRunEndsTheRunWithItsExitStatus) {
  TempDir dir;
  auto port = testing::unused_port();
  auto text = long_profile(port);
  std::string p = std::to_string(port);
  auto start = text.find("\"command\": [");
  auto end = text.find("],", start);
  text.replace(start, end - start + 1,
               "\"command\": [\"/bin/sh\", \"-c\", \"'" + testing::perfgate_binary() +
                   "' demo-server --port " + p + " --delay 5ms & sleep 2.5; exit 7\"]");
  testing::write_file(dir / "profile.json", text);
  auto store = dir / "perfgate.db";
  auto r = testing::run_command({testing::perfgate_binary(), "run", (dir / "profile.json").string(),
                                 "--store", store.string()},
                                {}, {}, 60);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("service \"/bin/sh\" exited with status 7 during the load"),
            std::string::npos)
      << r.err;
  size_t errors = 0;
  for (size_t at = r.err.find("perfgate: error:"); at != std::string::npos;
       at = r.err.find("perfgate: error:", at + 1))
    ++errors;
  EXPECT_EQ(errors, 1u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(store));
  EXPECT_EQ(testing::http_get(port, "/health"), "");  // the demo server went with its group
}

}  // namespace
}  // namespace perfgate
