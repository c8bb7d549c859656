// `repeat.max_count` as a user sets it: a paired run that may measure more
// while its verdict is undecided, and a stored run, which never does. Only what
// cannot flake is asserted: how many iterations it may take, and that it says
// why it stopped.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::CommandResult;
using testing::DemoServerProcess;
using testing::TempDir;

constexpr const char* kProfile = R"({
  "name": "sequential-cli",
  "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
  "load": { "threads": 1, "connections": 4, "duration": "150ms", "warmup": "50ms" },
  "repeat": { "count": 3, "discard": 1, "max_count": 7 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { "throughput": { "warn": "3%", "fail": "5%" } }
})";

class SequentialCliTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_file(profile_, kProfile); }

  CommandResult run(std::vector<std::string> extra) {
    std::vector<std::string> args = {testing::perfgate_binary(),
                                     "run",
                                     profile_.string(),
                                     "--store",
                                     store_.string(),
                                     "--json",
                                     json_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_command(args, {{"TARGET_PORT", std::to_string(server_.port())}});
  }
  nlohmann::json result() { return nlohmann::json::parse(testing::read_file(json_)); }

  TempDir dir_;
  std::filesystem::path profile_ = dir_ / "profile.json";
  std::filesystem::path store_ = dir_ / "perfgate.db";
  std::filesystem::path json_ = dir_ / "result.json";
  DemoServerProcess server_{{"--delay", "2ms", "--delay-every", "1"}};
};

// A stored-mode profile with max_count, as a user may have written it before
// issue 39: the run takes its count, is judged once at baseline.confidence,
// and says why the key took no effect; compare agrees with it.
TEST_F(SequentialCliTest, AStoredRunTakesItsCountAndSaysMaxCountExtendsPairedRunsOnly) {
  auto seed = run({"--commit", "aaa", "--branch", "main"});
  ASSERT_NE(seed.exit_code, 3) << seed.out << seed.err;
  EXPECT_FALSE(result().contains("sequential"));
  EXPECT_EQ(result()["load"]["iterations_total"], 3);

  auto r = run({"--commit", "bbb", "--branch", "feature", "--baseline-branch", "main"});
  ASSERT_NE(r.exit_code, 3) << r.out << r.err;
  auto ran = result();
  EXPECT_FALSE(ran.contains("sequential"));
  EXPECT_EQ(ran["load"]["iterations_total"], 3);
  EXPECT_EQ(ran["baseline"]["confidence_pct"], 95);
  EXPECT_NE(r.out.find("repeat.max_count 7 extends paired runs only"), std::string::npos) << r.out;
  auto valid = testing::validate_result_json(json_);
  EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;

  auto again = testing::run_command({testing::perfgate_binary(), "compare",
                                     std::to_string(ran["run_id"].get<int64_t>()), "--store",
                                     store_.string(), "--json", json_.string()});
  ASSERT_NE(again.exit_code, 3) << again.out << again.err;
  auto judged = result();
  EXPECT_EQ(judged["baseline"]["confidence_pct"], 95);
  EXPECT_EQ(judged["metrics"]["throughput_rps"]["verdict"],
            ran["metrics"]["throughput_rps"]["verdict"]);
  EXPECT_EQ(again.exit_code, r.exit_code);
  EXPECT_EQ(again.out.find("sequential run (repeat.max_count)"), std::string::npos) << again.out;
}

// Paired mode against two local demo servers of the same build (an A/A run):
// the looks judge at the Pocock boundary's levels, and the JSON says which look
// stopped, at what level, and whether for futility.
constexpr const char* kPairedProfile = R"({
  "name": "sequential-paired-cli",
  "target": { "url": "http://127.0.0.1:${CAND_PORT}/" },
  "load": { "threads": 1, "connections": 4, "duration": "150ms", "warmup": "0s" },
  "repeat": { "count": 6, "discard": 0, "max_count": 12 },
  "paired": { "baseline": { "origin": "http://127.0.0.1:${BASE_PORT}", "commit": "0ld" },
              "leg_warmup": "0s", "disturbance": "100%" },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { "throughput": { "warn": "3%", "fail": "5%" } }
})";

// An A/A paired run of `profile_text` against two demo servers of one build.
CommandResult run_paired_aa(const std::string& profile_text, const TempDir& dir) {
  auto profile = dir / "paired.json";
  testing::write_file(profile, profile_text);
  DemoServerProcess cand{{"--delay", "2ms", "--delay-every", "1"}};
  DemoServerProcess base{{"--delay", "2ms", "--delay-every", "1"}};
  std::map<std::string, std::string> env{{"CAND_PORT", std::to_string(cand.port())},
                                         {"BASE_PORT", std::to_string(base.port())}};
  return testing::run_command(
      {testing::perfgate_binary(), "run", profile.string(), "--store",
       (dir / "perfgate.db").string(), "--json", (dir / "result.json").string()},
      env);
}

TEST(SequentialPairedCliTest, LooksJudgeAtTheBoundaryAndTheJsonSaysWhichStopped) {
  TempDir dir;
  auto store = dir / "perfgate.db", json = dir / "result.json";
  auto r = run_paired_aa(kPairedProfile, dir);
  ASSERT_NE(r.exit_code, 3) << r.out << r.err;
  auto ran = nlohmann::json::parse(testing::read_file(json));
  const auto& seq = ran["sequential"];
  EXPECT_EQ(seq["unit"], "pairs");
  EXPECT_EQ(seq["boundary"], "pocock");
  EXPECT_EQ(seq["looks"], 4);  // 6, 8, 10, 12 pairs
  ASSERT_EQ(seq["look_levels_pct"].size(), 4u);
  int look = seq["stop_look"];
  ASSERT_GE(look, 1);
  ASSERT_LE(look, 4);
  EXPECT_EQ(seq["taken"], 6 + 2 * (look - 1));
  EXPECT_EQ(seq["look_confidence_pct"], seq["look_levels_pct"][look - 1]);
  for (const auto& level : seq["look_levels_pct"]) EXPECT_GT(level.get<double>(), 95);
  // One metric: the verdict's level is the stopping look's.
  EXPECT_NEAR(ran["baseline"]["confidence_pct"].get<double>(),
              seq["look_confidence_pct"].get<double>(), 1e-3);
  EXPECT_TRUE(seq["futility"].is_boolean());
  std::string stopped = seq["stopped"];
  EXPECT_EQ(seq["futility"].get<bool>(), stopped.rfind("futility after ", 0) == 0) << stopped;
  EXPECT_NE(r.out.find("pocock alpha-spending boundary"), std::string::npos) << r.out;
  auto valid = testing::validate_result_json(json);
  EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;

  // compare judges the stored run again at the level of the look that stopped it.
  auto again = testing::run_command({testing::perfgate_binary(), "compare",
                                     std::to_string(ran["run_id"].get<int64_t>()), "--store",
                                     store.string(), "--json", json.string()});
  ASSERT_NE(again.exit_code, 3) << again.out << again.err;
  auto judged = nlohmann::json::parse(testing::read_file(json));
  EXPECT_EQ(judged["baseline"]["confidence_pct"], ran["baseline"]["confidence_pct"]);
  EXPECT_EQ(judged["verdict"], ran["verdict"]);
}

// repeat.budget as a user sets it: a max_count no run could reach in the
// budget is lowered to what the pace of the first look allows; the run stops
// there (or earlier, decided), and `compare` judges it again at the same level.
TEST(SequentialPairedCliTest, ATimeBudgetEndsTheRunAndCompareAgrees) {
  TempDir dir;
  auto store = dir / "perfgate.db", json = dir / "result.json";
  std::string text = kPairedProfile;
  auto at = text.find(R"("max_count": 12 })");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 17, R"("max_count": 400, "budget": "4s" })");
  auto r = run_paired_aa(text, dir);
  ASSERT_NE(r.exit_code, 3) << r.out << r.err;
  auto ran = nlohmann::json::parse(testing::read_file(json));
  const auto& seq = ran["sequential"];
  // 400 pairs of two 150 ms windows are two minutes: the budget cut them.
  EXPECT_LT(seq["max_count"].get<int>(), 400) << seq;
  EXPECT_LE(seq["taken"].get<int>(), std::max(6, seq["max_count"].get<int>())) << seq;
  std::string stopped = seq["stopped"];
  EXPECT_TRUE(stopped.rfind("repeat.budget reached after ", 0) == 0 ||
              stopped.rfind("decided after ", 0) == 0 || stopped.rfind("futility after ", 0) == 0)
      << stopped;
  EXPECT_EQ(testing::validate_result_json(json).exit_code, 0);

  auto again = testing::run_command({testing::perfgate_binary(), "compare",
                                     std::to_string(ran["run_id"].get<int64_t>()), "--store",
                                     store.string(), "--json", json.string()});
  ASSERT_NE(again.exit_code, 3) << again.out << again.err;
  auto judged = nlohmann::json::parse(testing::read_file(json));
  EXPECT_NEAR(judged["baseline"]["confidence_pct"].get<double>(),
              ran["baseline"]["confidence_pct"].get<double>(), 1e-9);
  EXPECT_EQ(judged["verdict"], ran["verdict"]);
}

}  // namespace
}  // namespace perfgate
