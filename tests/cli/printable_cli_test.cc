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
  EXPECT_NE(run.err.find("starting service: " + dir.path().string() + "/sh\\x1b[2J\\x07ell"),
            std::string::npos)
      << run.err;
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

}  // namespace
}  // namespace perfgate
