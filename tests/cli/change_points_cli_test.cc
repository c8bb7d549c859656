// `perfgate history` marks the change points of the default branch's history
// (issue 27): a store written with a +10 % throughput step on main, read by the
// real binary.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "perfgate/store/baseline_store.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::TempDir;

class ChangePointsCliTest : public ::testing::Test {
 protected:
  // Ten runs at 1000 req/s, then eight at 1100, on main; two feature-branch runs
  // at 700 between them are no part of main's history.
  void SetUp() override {
    auto store = BaselineStore::open(store_);
    for (int n = 1; n <= 18; ++n) {
      ids_.push_back(store.record(testing::synthetic_run(n, n <= 10 ? 1000 : 1100, 2.0)));
      if (n == 12) store.record(testing::synthetic_run(19, 700, 2.0, "feature"));
    }
  }

  testing::CommandResult history(std::vector<std::string> args) {
    args.insert(args.begin(), {testing::perfgate_binary(), "history", "--store", store_.string()});
    return testing::run_command(args);
  }

  TempDir dir_;
  std::filesystem::path store_ = dir_ / "perfgate.db";
  std::vector<int64_t> ids_;  // of the main runs, oldest first
};

TEST_F(ChangePointsCliTest, HistoryListsTheStepOfTheDefaultBranch) {
  auto listed = history({"--change-points"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  // Run 11 opened the new level: commit c0ffee1011, +10 %.
  std::string run = std::to_string(ids_[10]);
  EXPECT_NE(
      listed.out.find("change point: run " + run + " (commit c0ffee1) throughput_rps +10.0% p="),
      std::string::npos)
      << listed.out;
  EXPECT_EQ(listed.out.find("latency_p99_ms"), std::string::npos) << listed.out;  // no step
  EXPECT_EQ(std::count(listed.out.begin(), listed.out.end(), '\n'), 1) << listed.out;

  auto table = history({"--limit", "0"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("baseline,change-point"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("change point: run " + run), std::string::npos) << table.out;
}

TEST_F(ChangePointsCliTest, HistoryJsonCarriesTheChangePoints) {
  auto only = history({"--change-points", "--json"});
  ASSERT_EQ(only.exit_code, 0) << only.err;
  auto points = nlohmann::json::parse(only.out);
  ASSERT_EQ(points.size(), 1u) << points.dump(2);
  EXPECT_EQ(points[0]["metric"], "throughput_rps");
  EXPECT_EQ(points[0]["run_id"], ids_[10]);
  EXPECT_EQ(points[0]["commit"], "c0ffee1011");
  EXPECT_EQ(points[0]["index"], 10);  // the eleventh run of main's history
  EXPECT_NEAR(points[0]["size_pct"].get<double>(), 10.0, 1e-6);
  EXPECT_LE(points[0]["p"].get<double>(), 0.005);

  auto all = history({"--json", "--limit", "0"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  auto runs = nlohmann::json::parse(all.out);
  ASSERT_EQ(runs.size(), 19u);
  int marked = 0;
  for (const auto& r : runs) {
    ASSERT_TRUE(r["change_points"].is_array()) << r.dump(2);
    if (r["change_points"].empty()) continue;
    ++marked;
    EXPECT_EQ(r["run_id"], ids_[10]);
    EXPECT_EQ(r["change_points"][0], points[0]);
  }
  EXPECT_EQ(marked, 1);
}

TEST_F(ChangePointsCliTest, ReportDrawsTheChangePoint) {
  auto html = dir_ / "report.html";
  auto r = testing::run_command({testing::perfgate_binary(), "report", "--html", html.string(),
                                 "--store", store_.string(), "--branch", "main"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto text = testing::read_file(html);
  EXPECT_NE(text.find("<line class=\"change-point\""), std::string::npos);
  EXPECT_NE(text.find("change point: run " + std::to_string(ids_[10]) + " commit c0ffee1 +10.0%"),
            std::string::npos);
}

// The default-branch runs themselves say when one confirms a new level: ten
// runs of a fast service, then runs of one 3 ms slower; the run after which the
// step is significant says so in its notes, once, naming the step's first run.
TEST(NewLevelCliTest, TheRunThatConfirmsAStepSaysSo) {
  TempDir dir;
  testing::DemoServerProcess fast;
  testing::DemoServerProcess slow({"--delay", "3ms"});
  testing::write_file(dir / "profile.json", R"({
    "name": "new-level", "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
    "load": { "threads": 1, "connections": 2, "duration": "150ms", "warmup": "0s" },
    "repeat": { "count": 2, "discard": 0 },
    "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                    "steal": "100%", "memory_available": "0%" } })");
  auto run = [&](const testing::DemoServerProcess& server) {
    return testing::run_command({testing::perfgate_binary(), "run", (dir / "profile.json").string(),
                                 "--store", (dir / "p.db").string(), "--any-placement"},
                                {{"TARGET_PORT", std::to_string(server.port())}});
  };
  for (int i = 0; i < 10; ++i) {
    auto r = run(fast);
    ASSERT_LE(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.out.find("new level:"), std::string::npos) << r.out;
  }
  // Each metric's step is said once, by the run that confirmed it (the service's
  // CPU per request may step too, at its own run).
  std::map<std::string, std::vector<int>> saying;  // metric: the slow runs (1-based) that said it
  std::map<std::string, std::string> said;
  for (int i = 1; i <= 7; ++i) {
    auto r = run(slow);
    ASSERT_LE(r.exit_code, 2) << r.out << r.err;
    for (size_t at = r.out.find("note: new level: "); at != std::string::npos;
         at = r.out.find("note: new level: ", at + 1)) {
      std::string line = r.out.substr(at, r.out.find('\n', at) - at);
      std::string metric = line.substr(17, line.find(' ', 17) - 17);
      saying[metric].push_back(i);
      said[metric] = line;
    }
  }
  ASSERT_EQ(saying["throughput_rps"].size(), 1u) << said["throughput_rps"];
  EXPECT_GE(saying["throughput_rps"][0], 5) << "a level rests on five runs";
  const std::string& line = said["throughput_rps"];
  EXPECT_NE(line.find("new level: throughput_rps -"), std::string::npos) << line;
  EXPECT_NE(line.find("since run 11"), std::string::npos) << line;
  // 3 ms slower is a regression: no new baseline until someone accepts it.
  EXPECT_NE(line.find("a regression: later runs are still judged against the runs before it, "
                      "until a run of it is accepted (perfgate accept)"),
            std::string::npos)
      << line;
  for (const auto& [metric, runs] : saying) EXPECT_EQ(runs.size(), 1u) << said[metric];
}

}  // namespace
}  // namespace perfgate
