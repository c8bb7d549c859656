// `perfgate bench`, `validate`, `--help` and `--version` through the real binary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>

#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::DemoServerProcess;
using testing::TempDir;

TEST(BenchCliTest, PrintsWrkShapedReportAndCountsMatchTheServer) {
  DemoServerProcess server;
  auto r = testing::run_command(
      {testing::perfgate_binary(), "bench", server.url(), "-t1", "-c50", "-d2s", "--latency"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Running 2s test @ " + server.url()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 threads and 50 connections"), std::string::npos);
  EXPECT_NE(r.out.find("Latency Distribution"), std::string::npos);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n\s+99%\s+[0-9.]+(us|ms|s))")));
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(Requests/sec:\s+[0-9]+\.[0-9]{2})")));
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(Transfer/sec:\s+[0-9.]+[KMG]?B)")));
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.out, m, std::regex(R"((\d+) requests in 2\.00s, [0-9.]+[KMG]?B read)")))
      << r.out;
  auto counted = std::stoull(m[1]);
  auto served = server.requests_served();
  // The server also answered the probe and requests still in flight at the stop.
  EXPECT_GT(counted, 0u);
  EXPECT_LE(counted, served);
  EXPECT_LE(served - counted, 50u + 1u);
}

TEST(BenchCliTest, ReportsNon2xxAndWritesMetricsJson) {
  DemoServerProcess server({"--error-every", "4"});
  TempDir dir;
  auto json_path = dir / "bench.json";
  auto r = testing::run_command({testing::perfgate_binary(), "bench", server.url(), "-t1", "-c4",
                                 "-d500ms", "--json", json_path.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Non-2xx or 3xx responses:"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(testing::read_file(json_path));
  EXPECT_NEAR(j["metrics"]["error_rate_pct"]["value"].get<double>(), 25.0, 1.0);
  EXPECT_TRUE(j["metrics"]["throughput_rps"]["baseline"].is_null());
}

TEST(BenchCliTest, UnreachableUrlExits3) {
  auto url = "http://127.0.0.1:" + std::to_string(testing::unused_port()) + "/";
  auto r = testing::run_command({testing::perfgate_binary(), "bench", url, "-d1s"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("cannot reach " + url), std::string::npos) << r.err;
}

TEST(BenchCliTest, BadFlagsExit3WithOneLine) {
  auto bad_duration = testing::run_command(
      {testing::perfgate_binary(), "bench", "http://127.0.0.1:1/", "-d", "soon"});
  EXPECT_EQ(bad_duration.exit_code, 3);
  EXPECT_NE(bad_duration.err.find("-d: must be a duration"), std::string::npos);
  auto unknown = testing::run_command({testing::perfgate_binary(), "bench", "--frobnicate"});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_EQ(std::count(unknown.err.begin(), unknown.err.end(), '\n'), 1) << unknown.err;
}

TEST(ValidateCliTest, ExampleProfileIsValid) {
  auto example = testing::source_dir() / "ci" / "profiles" / "hello.json";
  auto r = testing::run_command({testing::perfgate_binary(), "validate", example.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok"), std::string::npos);
}

TEST(ValidateCliTest, ReportsEveryProblemWithItsLine) {
  TempDir dir;
  testing::write_file(dir / "p.json", R"({
  "name": "x",
  "target": { "url": "ftp://example/" },
  "load": { "conections": 5 }
})");
  auto r =
      testing::run_command({testing::perfgate_binary(), "validate", (dir / "p.json").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("p.json:3: target.url"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("p.json:4: load.conections: unknown key; did you mean \"connections\"?"),
            std::string::npos)
      << r.err;
}

TEST(ValidateCliTest, MissingFileExits3) {
  auto r = testing::run_command({testing::perfgate_binary(), "validate", "/nonexistent.json"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("/nonexistent.json"), std::string::npos);
}

TEST(HelpCliTest, HelpAndVersionExit0) {
  auto version = testing::run_command({testing::perfgate_binary(), "--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("perfgate 0."), std::string::npos);
  for (auto sub : {"run", "bench", "validate"}) {
    auto help = testing::run_command({testing::perfgate_binary(), sub, "--help"});
    EXPECT_EQ(help.exit_code, 0) << sub;
    EXPECT_NE(help.out.find("Usage"), std::string::npos) << sub;
  }
  auto run_help = testing::run_command({testing::perfgate_binary(), "run", "--help"});
  for (auto flag : {"--store", "--junit", "--json", "--summary", "--commit", "--branch",
                    "--baseline-branch", "--no-record"})
    EXPECT_NE(run_help.out.find(flag), std::string::npos) << flag;
}

}  // namespace
}  // namespace perfgate
