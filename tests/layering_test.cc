#include <gtest/gtest.h>

#include "support/test_support.h"

namespace perfgate::testing {
namespace {

// ci/check-layering.sh over a small tree of the real shape: each case plants
// one include and expects the script's verdict on it.
CommandResult check_tree(const TempDir& tree) {
  return run_command(
      {"/bin/bash", (source_dir() / "ci/check-layering.sh").string(), tree.path().string()});
}

void plant(const TempDir& tree, const std::string& file, const std::string& text) {
  std::filesystem::create_directories((tree / file).parent_path());
  write_file(tree / file, text);
}

TEST(LayeringTest, TheRepositoryPasses) {
  auto r = run_command({"/bin/bash", (source_dir() / "ci/check-layering.sh").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(LayeringTest, ForwardIncludesPass) {
  TempDir tree;
  plant(tree, "include/perfgate/core/units.h", "#pragma once\n");
  plant(tree, "src/store/baseline_store.cc",
        "#include \"perfgate/core/units.h\"\n#include \"perfgate/host/saturation.h\"\n"
        "#include \"sqlite_handle.h\"\n");
  plant(tree, "src/store/sqlite_handle.h", "#pragma once\n");
  auto r = check_tree(tree);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(LayeringTest, ABackwardIncludeFailsAndIsNamed) {
  TempDir tree;
  plant(tree, "src/core/units.cc", "#include <string>\n\n#include \"perfgate/cli/gate.h\"\n");
  auto r = check_tree(tree);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("src/core/units.cc:3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stage core may not include stage cli"), std::string::npos) << r.err;
}

// The gate (the run's pipeline) sits under the commands: a command may call it,
// the pipeline never reaches back into a command.
TEST(LayeringTest, TheGateIncludesNoCommandAndCommandsIncludeTheGate) {
  TempDir tree;
  plant(tree, "src/cli/run_command.cc", "#include \"perfgate/gate/gate.h\"\n");
  EXPECT_EQ(check_tree(tree).exit_code, 0);
  plant(tree, "src/gate/paired_gate.cc",
        "#include \"perfgate/report/junit_report.h\"\n#include \"perfgate/cli/cli.h\"\n");
  auto r = check_tree(tree);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("src/gate/paired_gate.cc:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stage gate may not include stage cli"), std::string::npos) << r.err;
}

TEST(LayeringTest, SiblingStagesIncludeNeitherEachOther) {
  TempDir tree;
  plant(tree, "include/perfgate/load/native_engine.h",
        "#include \"perfgate/host/proc_reader.h\"\n");
  auto r = check_tree(tree);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stage load may not include stage host"), std::string::npos) << r.err;
}

TEST(LayeringTest, AnotherStagesPrivateHeaderFails) {
  TempDir tree;
  plant(tree, "src/report/html_report.cc", "#include \"store/sqlite_handle.h\"\n");
  plant(tree, "src/gate/gate.cc", "#include \"measurement.h\"\n");  // not there
  auto r = check_tree(tree);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("src/report/html_report.cc:1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("src/gate/gate.cc:1"), std::string::npos) << r.err;
}

TEST(LayeringTest, CoreUsesNoThirdPartyLibrary) {
  TempDir tree;
  plant(tree, "src/core/metrics.cc", "#include <spdlog/spdlog.h>\n");
  auto r = check_tree(tree);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("src/core/metrics.cc:1"), std::string::npos) << r.err;
}

TEST(LayeringTest, ASourceBuiltIntoAnotherStagesLibraryFails) {
  TempDir tree;
  plant(tree, "src/profile/ci_context.cc", "#include \"perfgate/profile/ci_context.h\"\n");
  plant(tree, "CMakeLists.txt",
        "perfgate_stage(perfgate_profile\n  SOURCES src/profile/profile.cc\n  DEPS x)\n"
        "perfgate_stage(perfgate_cli\n  SOURCES src/profile/ci_context.cc src/cli/gate.cc\n"
        "  DEPS y)\n");
  auto r = check_tree(tree);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("src/profile/ci_context.cc is built into perfgate_cli"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace perfgate::testing
