// Row 10: nothing the user typed reaches the terminal raw, on stdout or in log
// lines: a store path with ESC and BEL in it (paths are not checked, unlike
// names, URLs and headers) is printed with visible escapes everywhere.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "perfgate/store/baseline_store.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::TempDir;

// Control bytes other than line feeds and tabs, as "\xHH " for the message.
std::string raw_controls(const std::string& text) {
  std::string found;
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) found += std::to_string(c) + " ";
  return found;
}

// The service's command is logged at info ("starting service: ..."); a
// program whose file name holds ESC and BEL (a link to /bin/sh here) is a
// legal command, so the log line must escape it.
TEST(PrintableCliTest, Row10_AHostileServiceCommandIsPrintableInLogLines) {
  TempDir dir;
  auto shell = dir / ("sh\x1b[2J\x07"
                      "ell");
  std::filesystem::create_symlink("/bin/sh", shell);
  auto port = testing::unused_port();
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
  nlohmann::json profile = {
      {"name", "printable"},
      {"target", {{"url", url}}},
      {"load", {{"threads", 1}, {"connections", 1}, {"duration", "200ms"}, {"warmup", "0s"}}},
      {"repeat", {{"count", 2}, {"discard", 0}}},
      {"service",
       {{"command",
         {shell.string(), "-c",
          "exec '" + testing::perfgate_binary() + "' demo-server --port " + std::to_string(port)}},
        {"ready_timeout", "20s"}}}};
  testing::write_file(dir / "profile.json", profile.dump(2));
  auto run = testing::run_command(
      {testing::perfgate_binary(), "run", (dir / "profile.json").string(), "--no-record"});
  EXPECT_LE(run.exit_code, 2) << run.out << run.err;
  EXPECT_EQ(raw_controls(run.out), "") << run.out;
  EXPECT_EQ(raw_controls(run.err), "") << run.err;
  // Its program's file name alone: a pasted log shows no machine's folders.
  EXPECT_NE(run.err.find("starting service: sh\\x1b[2J\\x07ell\n"), std::string::npos) << run.err;
}

// Store paths are printed on stdout by the store commands.
TEST(PrintableCliTest, Row10_AHostileStorePathIsPrintableOnStdout) {
  TempDir dir;
  auto store = dir / "s\x1b[2J\x07tore.db";
  BaselineStore::open(store);  // a fresh store, for the commands to read
  auto migrate = testing::run_command(
      {testing::perfgate_binary(), "store", "migrate", "--store", store.string()});
  auto check = testing::run_command(
      {testing::perfgate_binary(), "store", "check", "--store", store.string()});
  for (const auto* r : {&migrate, &check}) {
    EXPECT_EQ(raw_controls(r->out), "") << r->out;
    EXPECT_EQ(raw_controls(r->err), "") << r->err;
  }
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("s\\x1b[2J\\x07tore.db: ok"), std::string::npos) << check.out;
}

// A line of stdout that starts with "::" is a workflow command on GitHub
// Actions: a file name holding "\n::error::" must not start one.
bool forges_a_workflow_command(const std::string& out) {
  return out.starts_with("::") || out.find("\n::") != std::string::npos;
}

TEST(PrintableCliTest, APathWithALineBreakForgesNoWorkflowCommand) {
  TempDir dir;
  const std::string forged = "\n::error title=forged::pwned\n";
  auto profile = dir / ("p" + forged + "x.json");
  testing::write_file(profile, R"({"name": "n",
    "target": {"url": "http://127.0.0.1:1/"}})");
  auto store = dir / ("s" + forged + "x.db");
  auto html = dir / ("r" + forged + "x.html");
  BaselineStore::open(store);
  std::vector<std::vector<std::string>> commands = {
      {"validate", profile.string()},
      {"store", "check", "--store", store.string()},
      {"store", "prune", "--keep", "5", "--store", store.string()},
      {"store", "migrate", "--store", store.string()},
  };
  for (auto args : commands) {
    args.insert(args.begin(), testing::perfgate_binary());
    auto r = testing::run_command(args, {{"GITHUB_ACTIONS", "true"}});
    EXPECT_EQ(r.exit_code, 0) << args[1] << " " << args[2] << ": " << r.out << r.err;
    EXPECT_FALSE(forges_a_workflow_command(r.out)) << args[1] << " " << args[2] << ":\n" << r.out;
    EXPECT_FALSE(forges_a_workflow_command(r.err)) << r.err;
    EXPECT_NE(r.out.find("\\x0a::error title=forged::pwned\\x0a"), std::string::npos) << r.out;
  }
  // report --html needs a run in the store.
  testing::DemoServerProcess demo;
  testing::write_file(dir / "ok.json", R"({"name": "n", "target": {"url": ")" + demo.url() +
                                           R"("}, "load": {"threads": 1,
    "connections": 1, "duration": "100ms", "warmup": "0s"}, "repeat": {"count": 1, "discard": 0}})");
  auto run = testing::run_command(
      {testing::perfgate_binary(), "run", (dir / "ok.json").string(), "--store", store.string()});
  ASSERT_LE(run.exit_code, 2) << run.err;
  auto report = testing::run_command(
      {testing::perfgate_binary(), "report", "--html", html.string(), "--store", store.string()});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_FALSE(forges_a_workflow_command(report.out)) << report.out;
  EXPECT_NE(report.out.find("r\\x0a::error title=forged::pwned\\x0ax.html"), std::string::npos)
      << report.out;
}

}  // namespace
}  // namespace perfgate
