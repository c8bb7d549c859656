// Paired mode whose two sides run one installed program (a build that installs
// outside its checkout): the real binary warns before the load, in the console,
// the JSON notes and a GitHub warning annotation, and leaves the verdict alone.
// Each side's own script inside its checkout is the usual setup: no warning.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

class SharedExecutableCliTest : public ::testing::Test {
 protected:
  SharedExecutableCliTest() {
    fs::create_directories(candidate_);
    fs::create_directories(baseline_);
  }

  // Both sides' service commands are `command` (its first word looked up as
  // written), each started in its own checkout.
  testing::CommandResult run(const std::string& program) {
    auto service = [&](const fs::path& cwd, const std::string& port) {
      return R"({ "command": [")" + program + R"(", "demo-server", "--port", "${)" + port +
             R"(}"], "cwd": ")" + cwd.string() + R"(" })";
    };
    testing::write_file(profile_, R"({
  "name": "shared",
  "target": { "url": "http://127.0.0.1:${CAND_PORT}/" },
  "load": { "threads": 1, "connections": 2, "duration": "100ms", "warmup": "0s" },
  "repeat": { "count": 6, "discard": 0 },
  "paired": { "baseline": { "origin": "http://127.0.0.1:${BASE_PORT}", "service": )" +
                                      service(baseline_, "BASE_PORT") +
                                      R"( }, "leg_warmup": "0s", "disturbance": "100%" },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { "throughput": { "warn": "50%", "fail": "90%" } },
  "service": )" + service(candidate_, "CAND_PORT") +
                                      "\n}");
    return testing::run_command({testing::perfgate_binary(), "run", profile_.string(), "--store",
                                 store_.string(), "--json", json_.string()},
                                {{"CAND_PORT", std::to_string(testing::unused_port())},
                                 {"BASE_PORT", std::to_string(testing::unused_port())},
                                 {"GITHUB_ACTIONS", "true"}});
  }

  static void executable(const fs::path& file) {
    fs::permissions(file, fs::perms::owner_all, fs::perm_options::add);
  }

  TempDir dir_;
  fs::path candidate_ = dir_ / "candidate";  // the pull request's checkout
  fs::path baseline_ = dir_ / "baseline";    // the merge base's
  fs::path profile_ = dir_ / "paired.json";
  fs::path store_ = dir_ / "perfgate.db";
  fs::path json_ = dir_ / "result.json";
};

bool has_note(const json& result, const std::string& text) {
  for (const auto& note : result["notes"])
    if (note.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

TEST_F(SharedExecutableCliTest, OneInstalledProgramOnBothSidesIsWarnedAbout) {
  TempDir prefix;  // /usr/local/bin, as make install would fill it
  auto installed = prefix / "demo-server";
  fs::copy_file(testing::perfgate_binary(), installed);
  executable(installed);
  auto r = run(installed.string());
  ASSERT_NE(r.exit_code, 3) << r.out << r.err;
  auto shown = fs::canonical(installed).string();
  std::string says = "both paired sides run " + shown;
  EXPECT_NE(r.out.find("warning: " + says), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("::warning title=perfgate shared%3A note::" + says), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("its own prefix inside its checkout"), std::string::npos) << r.out;
  auto result = json::parse(testing::read_file(json_));
  EXPECT_TRUE(has_note(result, says)) << result["notes"];
  // Not a verdict of its own: the same verdict as the measurement gives.
  EXPECT_NE(result["verdict"], "error") << result;
}

TEST_F(SharedExecutableCliTest, EachCheckoutsOwnScriptIsNotWarnedAbout) {
  for (const auto& checkout : {candidate_, baseline_}) {
    testing::write_file(checkout / "server.sh",
                        "#!/bin/sh\nexec '" + testing::perfgate_binary() + "' \"$@\"\n");
    executable(checkout / "server.sh");
  }
  auto r = run("./server.sh");
  ASSERT_NE(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(r.out.find("both paired sides run"), std::string::npos) << r.out;
  auto result = json::parse(testing::read_file(json_));
  EXPECT_FALSE(has_note(result, "both paired sides run")) << result["notes"];
}

}  // namespace
}  // namespace perfgate
