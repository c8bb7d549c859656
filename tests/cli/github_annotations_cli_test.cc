// perfgate speaks GitHub itself: with GITHUB_ACTIONS=true, `run`, `merge` and
// `compare` print workflow commands for what the checks page should show, and
// every error becomes an ::error annotation besides its line on stderr.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::CommandResult;

// A latency limit no 10 ms response can meet: a fail from the first run on.
constexpr const char* kFailingProfile = R"({
  "name": "gh",
  "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
  "load": { "threads": 1, "connections": 4, "duration": "300ms", "warmup": "100ms" },
  "repeat": { "count": 2, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { "latency_p50": { "max": "1ms" } }
})";

class GithubAnnotationsCliTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_file(profile_, kFailingProfile); }

  CommandResult perfgate(std::vector<std::string> args, const std::string& github_actions,
                         uint16_t port = 1) {
    args.insert(args.begin(), testing::perfgate_binary());
    return testing::run_command(args, {{"GITHUB_ACTIONS", github_actions},
                                       {"GITHUB_STEP_SUMMARY", ""},
                                       {"TARGET_PORT", std::to_string(port)}});
  }

  testing::TempDir dir_;
  std::string profile_ = (dir_ / "profile.json").string();
  std::string store_ = (dir_ / "perfgate.db").string();
};

TEST_F(GithubAnnotationsCliTest, AFailedCheckIsAnErrorAnnotationThenCompareSaysItAgain) {
  testing::DemoServerProcess server({"--delay", "10ms", "--delay-every", "1"});
  auto run = perfgate({"run", profile_, "--store", store_}, "true", server.port());
  ASSERT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("\n::error title=perfgate gh%3A latency_p50_ms::latency_p50_ms "),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("\n::notice title=perfgate gh%3A note::no baseline yet"),
            std::string::npos);

  auto compare = perfgate({"compare", "1", "--store", store_}, "true");
  EXPECT_EQ(compare.exit_code, 1) << compare.err;
  EXPECT_NE(compare.out.find("::error title=perfgate gh%3A latency_p50_ms::"), std::string::npos)
      << compare.out;
  // Off GitHub Actions, no workflow command at all.
  EXPECT_EQ(perfgate({"compare", "1", "--store", store_}, "").out.find("\n::"), std::string::npos);
}

TEST_F(GithubAnnotationsCliTest, AnErrorIsAnErrorAnnotationAndStillOneLineOnStderr) {
  // Port 1 on the loopback: nothing listens there, so the run cannot measure.
  auto run = perfgate({"run", profile_, "--store", store_}, "true");
  ASSERT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_NE(run.out.find("::error title=perfgate error::"), std::string::npos) << run.out;
  EXPECT_EQ(run.err.rfind("perfgate: error: "), 0u) << run.err;

  auto missing = perfgate({"run", (dir_ / "nope.json").string()}, "true");
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_EQ(missing.out.rfind("::error title=perfgate error::"), 0u) << missing.out;
  EXPECT_EQ(perfgate({"run", (dir_ / "nope.json").string()}, "false").out, "");
}

}  // namespace
}  // namespace perfgate
