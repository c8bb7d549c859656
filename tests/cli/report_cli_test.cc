// `perfgate report --html` and `perfgate export` on a store of synthetic runs,
// and the report rendered by headless Chromium when it is installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "perfgate/store/baseline_store.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

constexpr int kRuns = 24;
constexpr int kSaturatedRun = 17;

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The runs as `perfgate run` would have recorded them on main, one of them saturated.
fs::path make_store(const testing::TempDir& dir) {
  fs::path path = dir / "perfgate.db";
  auto store = BaselineStore::open(path);
  for (int n = 1; n <= kRuns; ++n) {
    RunRecord run = testing::synthetic_run(n, 20000 + 50 * (n % 5), 2.0 + 0.05 * (n % 3));
    if (n == kSaturatedRun) run.saturation = {true, {"generator thread 0 at 97% of a core"}, {}};
    store.record(run);
  }
  return path;
}

// Kept next to the test binary, so that CI can upload what Chromium drew.
fs::path artifact_dir() {
  fs::path dir = fs::path(testing::perfgate_binary()).parent_path() / "test-artifacts";
  fs::create_directories(dir);
  return dir;
}

testing::CommandResult chromium(const testing::TempDir& profile, std::vector<std::string> args) {
  std::vector<std::string> argv = {"/usr/bin/chromium",
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--no-first-run",
                                   "--user-data-dir=" + (profile / "chromium").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::run_command(argv, {{"HOME", profile.path().string()}}, {}, 120);
}

// A long history: the report charts a sample of it, one file under 2 MB that
// still marks every failed and saturated run (named in a marker's title).
TEST(ReportCliTest, ALongHistoryIsChartedWholeWithEveryFailedAndSaturatedRun) {
  testing::TempDir dir;
  fs::path path = dir / "perfgate.db";
  constexpr int kLong = 600;
  std::vector<int64_t> marked;
  {
    auto store = BaselineStore::open(path);
    int n = 0;
    store.record_each([&]() -> std::optional<RunRecord> {
      if (++n > kLong) return std::nullopt;
      RunRecord run = testing::synthetic_run(n % 28 + 1, 20000 + 50 * (n % 5), 2.0);
      if (n % 50 == 0) run.verdict = Verdict::kFail;
      if (n % 100 == 37) run.saturation = {true, {"steal 9%"}, {}};
      if (n % 50 == 0 || n % 100 == 37) marked.push_back(n);
      return run;
    });
  }
  fs::path html = dir / "report.html";
  auto report = testing::run_command(
      {testing::perfgate_binary(), "report", "--html", html.string(), "--store", path.string()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("600 runs"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("charted"), std::string::npos) << report.out;
  std::string text = testing::read_file(html);
  EXPECT_LT(text.size(), 2'000'000u);
  for (int64_t id : marked) {
    std::string name = "run " + std::to_string(id);
    bool named = text.find(name + " ") != std::string::npos ||
                 text.find(name + ",") != std::string::npos ||
                 text.find(name + "<") != std::string::npos;
    EXPECT_TRUE(named) << name;
  }
  EXPECT_EQ(count_of(text, "<svg "), 4u);
  EXPECT_GE(count_of(text, "<rect class=\"saturated\""), 4u);
}

TEST(ReportCliTest, WritesAnHtmlReportThatRendersInChromium) {
  testing::TempDir dir;
  fs::path store = make_store(dir);
  fs::path html = artifact_dir() / "report.html";
  auto report = testing::run_command(
      {testing::perfgate_binary(), "report", "--html", html.string(), "--store", store.string()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("24 runs"), std::string::npos) << report.out;
  std::string text = testing::read_file(html);
  EXPECT_EQ(count_of(text, "<svg "), 4u);
  EXPECT_EQ(count_of(text, "<rect class=\"saturated\""), 4u);

  if (!fs::exists("/usr/bin/chromium"))
    GTEST_SKIP() << "/usr/bin/chromium is absent (Debian package `chromium`): report not rendered";
  auto dom = chromium(dir, {"--dump-dom", "file://" + html.string()});
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_EQ(count_of(dom.out, "<svg "), 4u) << dom.out.substr(0, 2000);
  EXPECT_EQ(count_of(dom.out, "<polyline class=\"series\""), 4u);
  EXPECT_EQ(count_of(dom.out, "class=\"saturated\""), 4u);

  fs::path png = artifact_dir() / "report.png";
  fs::remove(png);
  auto shot = chromium(
      dir, {"--screenshot=" + png.string(), "--window-size=1200,2000", "file://" + html.string()});
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(fs::exists(png)) << shot.err;
  EXPECT_GT(fs::file_size(png), 10'000u);  // a blank page is a few kB
}

TEST(ReportCliTest, ReportsOneBranch) {
  testing::TempDir dir;
  fs::path store = make_store(dir);
  auto report = testing::run_command({testing::perfgate_binary(), "report", "--html",
                                      (dir / "r.html").string(), "--store", store.string(),
                                      "--branch", "feature/none"});
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_NE(report.err.find("no runs on branch \"feature/none\""), std::string::npos) << report.err;
}

// Issue 41, item 6: the store's newest run, of another hash on another branch,
// picked the series, and `--branch main` then said "no runs on branch main".
TEST(ReportCliTest, OneBranchIsChartedWhateverTheNewestRunOfAnotherBranch) {
  testing::TempDir dir;
  fs::path store = make_store(dir);
  {
    auto writer = BaselineStore::open(store);
    RunRecord other = testing::synthetic_run(kRuns + 1, 9000, 5.0);
    other.ci.branch = "feature/x";
    other.profile_hash = "another-test";
    writer.record(other);
  }
  auto report = testing::run_command({testing::perfgate_binary(), "report", "--html",
                                      (dir / "r.html").string(), "--store", store.string(),
                                      "--branch", "main"});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find(std::to_string(kRuns) + " runs"), std::string::npos) << report.out;
}

TEST(ReportCliTest, ExportsTheLatestRunForGithubActionBenchmark) {
  testing::TempDir dir;
  fs::path store = make_store(dir);
  fs::path out = dir / "bench.json";
  auto run = testing::run_command({testing::perfgate_binary(), "export", "--format",
                                   "github-action-benchmark", "--tool", "customBiggerIsBetter",
                                   "--store", store.string(), "--output", out.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto entries = nlohmann::json::parse(testing::read_file(out));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0]["name"], "hello throughput_rps");
  EXPECT_DOUBLE_EQ(entries[0]["value"], 20000 + 50 * (kRuns % 5));
  EXPECT_NE(entries[0]["extra"].get<std::string>().find("run 24"), std::string::npos);
}

TEST(ReportCliTest, AMissingStoreIsAnErrorNotAnEmptyReport) {
  testing::TempDir dir;
  auto run = testing::run_command({testing::perfgate_binary(), "report", "--html",
                                   (dir / "r.html").string(), "--store", (dir / "no.db").string()});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_NE(run.err.find("no such store"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir / "no.db"));
}

}  // namespace
}  // namespace perfgate
