// shared_installed_executable: when both paired sides run one installed file.
#include "perfgate/host/shared_executable.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

ServiceSpec service(std::vector<std::string> command, const fs::path& cwd) {
  ServiceSpec s;
  s.command = std::move(command);
  s.cwd = cwd.string();
  return s;
}

class SharedExecutableTest : public ::testing::Test {
 protected:
  SharedExecutableTest() {
    fs::create_directories(a_);
    fs::create_directories(b_);
    fs::create_directories(bin_);
    testing::write_file(bin_ / "app", "#!/bin/sh\n");
    fs::permissions(bin_ / "app", fs::perms::owner_all, fs::perm_options::add);
  }
  TempDir dir_;
  fs::path a_ = dir_ / "a", b_ = dir_ / "b", bin_ = dir_ / "bin";
};

TEST_F(SharedExecutableTest, OneFileOutsideBothCheckoutsThroughPathOrShell) {
  auto app = fs::canonical(bin_ / "app").string();
  EXPECT_EQ(shared_installed_executable(service({"app", "--port", "1"}, a_),
                                        service({"app", "--port", "2"}, b_), bin_.string()),
            app);
  // The recipes' sh -c "$PERFGATE_SERVICE_COMMAND" is looked through.
  EXPECT_EQ(shared_installed_executable(service({"sh", "-c", "exec " + app + " --port 1"}, a_),
                                        service({"sh", "-c", "X=1 exec app --port 2"}, b_),
                                        bin_.string()),
            app);
}

TEST_F(SharedExecutableTest, OwnFilesOrOneCheckoutAreNotFlagged) {
  auto path = bin_.string();
  // python app.py: the shared program runs each checkout's own file.
  testing::write_file(a_ / "main.py", "");
  testing::write_file(b_ / "main.py", "");
  EXPECT_FALSE(shared_installed_executable(service({"app", "main.py"}, a_),
                                           service({"app", "main.py"}, b_), path));
  EXPECT_FALSE(shared_installed_executable(service({"app", "--config=main.py"}, a_),
                                           service({"app", "--config=main.py"}, b_), path));
  // One working directory for both: not a checkout each.
  EXPECT_FALSE(shared_installed_executable(service({"app"}, a_), service({"app"}, a_), path));
  // Each side's own build.
  for (const auto& dir : {a_, b_}) {
    testing::write_file(dir / "server", "#!/bin/sh\n");
    fs::permissions(dir / "server", fs::perms::owner_all, fs::perm_options::add);
  }
  EXPECT_FALSE(shared_installed_executable(service({"sh", "-c", "exec ./server"}, a_),
                                           service({"sh", "-c", "exec ./server"}, b_), path));
  EXPECT_FALSE(shared_installed_executable(service({}, a_), service({"app"}, b_), path));
}

}  // namespace
}  // namespace perfgate
