// Runtimes the cost phase makes steady: found in the program a command starts
// (through `sh -c` too), their version asked of them, and the settings that
// make their counts repeat added without touching what the command sets itself.
#include "perfgate/host/runtime.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace perfgate {
namespace {

using Words = std::vector<std::string>;

TEST(RuntimeTest, PythonIsFoundDirectlyAndBehindAShellWithItsVersion) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  auto direct = detect_runtime({"/usr/bin/python3", "app.py"}, {});
  ASSERT_TRUE(direct);
  EXPECT_EQ(direct->name, "python");
  EXPECT_EQ(direct->version.rfind("Python 3.", 0), 0u) << direct->version;
  auto wrapped = detect_runtime({"sh", "-c", "PORT=1 exec /usr/bin/python3 -m http.server"}, {});
  ASSERT_TRUE(wrapped);
  EXPECT_EQ(wrapped->name, "python");
  EXPECT_FALSE(detect_runtime({"/bin/true"}, {}));
  EXPECT_FALSE(detect_runtime({}, {}));
}

// A script named like the runtime (pyenv's shim) is found, and marked: under
// Valgrind it starts every program it runs traced (18 s a start, issue 47).
TEST(RuntimeTest, AShimScriptIsMarked) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  auto dir = std::filesystem::temp_directory_path() / ("perfgate-shim-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream shim(dir / "python3");
    shim << "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n";
  }
  std::filesystem::permissions(dir / "python3", std::filesystem::perms::owner_all);
  auto found = detect_runtime({(dir / "python3").string(), "app.py"}, {});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name, "python");
  EXPECT_EQ(found->shim, "#!/bin/sh");
  EXPECT_EQ(found->version.rfind("Python 3.", 0), 0u) << found->version;
  EXPECT_EQ(detect_runtime({"/usr/bin/python3", "app.py"}, {})->shim, "");
  std::filesystem::remove_all(dir);
}

TEST(RuntimeTest, PythonGetsAFixedHashSeedUnlessTheServiceSetsOne) {
  Runtime python{"python", "Python 3.11.2", "/usr/bin/python3", ""};
  auto s = steady_settings(python, {"python3", "app.py"}, {});
  EXPECT_EQ(s.command, (Words{"python3", "app.py"}));
  ASSERT_EQ(s.env.size(), 1u);
  EXPECT_EQ(s.env.at("PYTHONHASHSEED"), "0");
  EXPECT_NE(s.said.find("PYTHONHASHSEED=0"), std::string::npos);
  auto own = steady_settings(python, {"python3", "app.py"}, {{"PYTHONHASHSEED", "7"}});
  EXPECT_TRUE(own.env.empty());
  EXPECT_EQ(own.said, "");
}

TEST(RuntimeTest, NodeGetsV8sPredictableFlagsAfterTheNodeWordEvenInAScript) {
  Runtime node{"node", "v20.20.2", "/usr/bin/node", ""};
  auto direct = steady_settings(node, {"node", "server.js", "8080"}, {});
  EXPECT_EQ(direct.command,
            (Words{"node", "--predictable", "--predictable-gc-schedule", "--hash-seed=1",
                   "--random-seed=1", "--no-opt", "server.js", "8080"}));
  EXPECT_NE(direct.said.find("predictable"), std::string::npos);
  // The recipe's wrapper: the flags go after the program's word, not inside a path.
  auto wrapped = steady_settings(node, {"sh", "-c", "exec node ./node/server.js \"$PORT\""}, {});
  EXPECT_EQ(wrapped.command[2],
            "exec node --predictable --predictable-gc-schedule --hash-seed=1 --random-seed=1 "
            "--no-opt ./node/server.js \"$PORT\"");
  auto own = steady_settings(node, {"node", "--no-opt", "server.js"}, {});
  EXPECT_EQ(own.command, (Words{"node", "--no-opt", "server.js"}));
  EXPECT_EQ(own.said, "");
}

TEST(RuntimeTest, JavaIsNamedNotChanged) {
  Runtime java{"java", "openjdk version \"17.0.15\"", "/usr/bin/java", ""};
  auto s = steady_settings(java, {"java", "-jar", "app.jar"}, {});
  EXPECT_EQ(s.command, (Words{"java", "-jar", "app.jar"}));
  EXPECT_TRUE(s.env.empty());
  EXPECT_NE(s.said.find("-Xint"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
