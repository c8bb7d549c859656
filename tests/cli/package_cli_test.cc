// What the Debian package ships beside the binary, made from the binary:
// `perfgate --version` and the man page written from its own help.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <regex>
#include <sstream>

#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

TEST(VersionCliTest, NamesTheVersionAndTheLibrariesItRunsWith) {
  auto r = testing::run_command({testing::perfgate_binary(), "--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  // A build from a checkout adds `git describe` (cmake/packaging.cmake).
  std::string prefix = std::string("perfgate ") + PERFGATE_VERSION;
  ASSERT_EQ(first.rfind(prefix, 0), 0u) << first;
  EXPECT_TRUE(std::regex_match(first.substr(prefix.size()), std::regex("( \\(git [^ ()]+\\))?")))
      << first;
  bool checkout = fs::exists(testing::source_dir() / ".git") &&
                  testing::run_command({"/bin/sh", "-c", "command -v git"}).exit_code == 0;
  if (checkout) {
    EXPECT_NE(first.find(" (git "), std::string::npos) << first;
  }
  EXPECT_EQ(second, std::string("libcurl ") + curl_version_info(CURLVERSION_NOW)->version +
                        ", SQLite " + sqlite3_libversion());
}

// The man page is cmake/manpage.sh run on the built binary: every subcommand
// (and the store's own subcommands) gets a section holding its --help verbatim.
TEST(ManPageCliTest, HoldsEverySubcommandsHelp) {
  testing::TempDir dir;
  auto page = dir / "perfgate.1";
  auto r = testing::run_command({"/bin/sh", (testing::source_dir() / "cmake/manpage.sh").string(),
                                 testing::perfgate_binary(), "9.9.9", page.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string text = testing::read_file(page);
  EXPECT_EQ(text.rfind(".TH PERFGATE 1 \"\" \"perfgate 9.9.9\"", 0), 0u) << text.substr(0, 80);
  for (const char* command : {"run", "bench", "validate", "demo-server", "doctor", "store",
                              "store check", "report", "history", "calibrate", "merge"})
    EXPECT_NE(text.find(std::string(".SS \"perfgate ") + command + "\"\n"), std::string::npos)
        << command;
  auto run_help = testing::run_command({testing::perfgate_binary(), "run", "--help"});
  for (const char* flag : {"--store", "--junit", "--baseline-branch", "--no-record"}) {
    ASSERT_NE(run_help.out.find(flag), std::string::npos) << flag;
    EXPECT_NE(text.find(flag), std::string::npos) << flag;
  }
  // No line of help text may start a roff request by accident.
  std::istringstream page_lines(text);
  bool in_verbatim = false;
  for (std::string line; std::getline(page_lines, line);) {
    if (line == ".nf" || line == ".fi") {
      in_verbatim = line == ".nf";
    } else if (in_verbatim) {
      EXPECT_FALSE(line.starts_with(".") || line.starts_with("'")) << line;
    }
  }
}

}  // namespace
}  // namespace perfgate
