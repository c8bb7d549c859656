// schemas/profile.schema.json against the example profiles and against
// perfgate's own parser: the schema an editor shows must say what perfgate accepts.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "perfgate/profile/profile.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using testing::run_command;
using testing::source_dir;

fs::path schema_path() {
  return source_dir() / "schemas" / "profile.schema.json";
}

testing::CommandResult validate(const std::vector<fs::path>& files) {
  std::vector<std::string> argv = {"/usr/bin/python3",
                                   (source_dir() / "tests/tools/validate_json_schema.py").string(),
                                   schema_path().string()};
  for (const auto& file : files) argv.push_back(file.string());
  return run_command(argv);
}

/// docs/ may hold JSON for other schemas (a result example): those declare
/// their own "$schema" and are left to their own tests.
bool declares_other_schema(const fs::path& file) {
  auto doc = nlohmann::json::parse(testing::read_file(file), nullptr, false, true);
  if (!doc.is_object() || !doc.contains("$schema") || !doc["$schema"].is_string()) return false;
  return !doc["$schema"].get<std::string>().ends_with("profile.schema.json");
}

std::vector<fs::path> example_profiles() {
  std::vector<fs::path> out;
  for (const char* folder : {"ci/profiles", "docs"}) {
    fs::path root = source_dir() / folder;
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const fs::path& file = entry.path();
      if (!entry.is_regular_file() || file.extension() != ".json") continue;
      if (std::string(folder) == "docs" && declares_other_schema(file)) continue;
      out.push_back(file);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// What the CLI supplies: the running binary as ${PERFGATE}; nothing else set.
EnvLookup example_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    if (name == "PERFGATE") return "/usr/local/bin/perfgate";
    // What the pull-request recipes export (ci/profiles/pr-paired.json).
    if (name == "PERFGATE_SERVICE_COMMAND") return "exec ./server --port \"$PORT\"";
    if (name == "PERFGATE_BASELINE_DIR") return "/tmp/base";
    return std::nullopt;
  };
}

std::vector<fs::path> write_all(const testing::TempDir& dir,
                                const std::vector<std::string>& texts) {
  std::vector<fs::path> files;
  for (size_t i = 0; i < texts.size(); ++i) {
    files.push_back(dir / ("profile-" + std::to_string(i) + ".json"));
    testing::write_file(files.back(), texts[i]);
  }
  return files;
}

TEST(SchemaTest, ExampleProfilesAreValid) {
  auto files = example_profiles();
  ASSERT_NE(std::find(files.begin(), files.end(), source_dir() / "ci/profiles/hello.json"),
            files.end());
  auto result = validate(files);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const auto& file : files)
    EXPECT_NE(result.out.find(file.string() + ": valid"), std::string::npos) << file;
}

TEST(SchemaTest, ExampleProfilesPassPerfgatesOwnParser) {
  for (const auto& file : example_profiles()) {
    try {
      Profile profile = load_profile(file, example_env());
      EXPECT_FALSE(profile.name.empty()) << file;
    } catch (const ProfileError& e) {
      ADD_FAILURE() << ::testing::PrintToString(e.lines());
    }
  }
}

TEST(SchemaTest, WrongProfileFailsValidation) {
  testing::TempDir dir;
  auto files = write_all(dir, {R"({"name": "x", "target": {"url": "http://h/"},
                                   "load": {"connections": "ten", "conections": 5}})"});
  auto result = validate(files);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("load/connections: 'ten' is not of type 'integer'"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("'conections' was unexpected"), std::string::npos) << result.err;
}

// Each of these is rejected by perfgate; the schema must reject it too.
TEST(SchemaTest, RejectsWhatPerfgateRejects) {
  const std::string ok_target = R"("name": "x", "target": {"url": "http://h/"})";
  std::vector<std::string> wrong = {
      R"({"target": {"url": "http://h/"}})",
      R"({"name": "a b", "target": {"url": "http://h/"}})",
      R"({"name": "x", "target": {"url": "ftp://h/"}})",
      R"({"name": "x", "target": {"url": "http:///path"}})",
      R"({"name": "x", "target": {"url": "http://h/", "method": "get"}})",
      R"({"name": "x", "target": {"url": "http://h/", "headers": {"A": 1}}})",
      "{" + ok_target + R"(, "load": {"threads": 0}})",
      "{" + ok_target + R"(, "load": {"threads": 2.5}})",
      "{" + ok_target + R"(, "load": {"duration": "10 s"}})",
      "{" + ok_target + R"(, "load": {"rate": -1}})",
      "{" + ok_target + R"(, "load": {"rate": 1e-10}})",
      R"({"name": "x", "target": {"url": "http://h/", "requests": [{"weight": 1e308}]}})",
      "{" + ok_target + R"(, "load": {"engine": "wrk"}})",
      "{" + ok_target + R"(, "repeat": {"count": 0}})",
      "{" + ok_target + R"(, "thresholds": {"latency_p99": {"max": 50}}})",
      "{" + ok_target + R"(, "thresholds": {"latency_p99": {"min": 5}}})",
      "{" + ok_target + R"(, "thresholds": {"throughput": {}}})",
      "{" + ok_target + R"(, "thresholds": {"error_rate": {"max": "1 %"}}})",
      "{" + ok_target + R"(, "service": {"command": []}})",
      "{" + ok_target + R"(, "service": {"command": ["x"], "env": {"1A": "b"}}})",
      "{" + ok_target + R"(, "extra": 1})",
      R"({"name": "x", "target": {"url": "http://127.0.0.1:8080/"}, "repeat": {"count": 9},
          "paired": {"baseline": {"origin": "http://127.0.0.1:8081"}, "schedule": "together"}})",
  };
  testing::TempDir dir;
  auto files = write_all(dir, wrong);
  for (size_t i = 0; i < wrong.size(); ++i)
    EXPECT_THROW(parse_profile(wrong[i], files[i].string(), example_env()), ProfileError)
        << wrong[i];
  auto result = validate(files);
  EXPECT_EQ(result.exit_code, 1);
  for (const auto& file : files)
    EXPECT_NE(result.err.find(file.string() + ": "), std::string::npos)
        << "schema accepts " << file;
}

// Comments are stripped only outside strings: "//" in a URL and "/*" in a
// description are text.
TEST(SchemaTest, AcceptsWhatPerfgateAccepts) {
  std::vector<std::string> right = {
      "// leading comment\n{\"name\": \"x\", /* inline */ \"target\": {\"url\": "
      "\"http://h:8080//x\"},\n\"description\": \"/* not a comment */ // nor this\"}",
      R"({"name": "x", "target": {"url": "http://${HOST:-h}:${PORT:-80}/"},
          "load": {"duration": 1.5, "warmup": 0, "timeout": "${T:-2s}", "engine": "native"}})",
      R"({"name": "x", "target": {"url": "https://u:p@[::1]:8443/a?b#c", "method": "PATCH",
          "headers": {"X-Api-Key": "k"}, "body": "{}"},
          "thresholds": {"throughput": {"min": 10.5, "warn": 5}, "latency_max": {"max": "1.5s"},
                         "error_rate": {"fail": "2%", "max": 0}}})",
      R"({"name": "x", "target": {"url": "http://127.0.0.1:8080/"}, "repeat": {"count": 9},
          "paired": {"baseline": {"origin": "http://127.0.0.1:8081"}, "schedule": "duet"}})",
  };
  testing::TempDir dir;
  auto files = write_all(dir, right);
  for (size_t i = 0; i < right.size(); ++i)
    EXPECT_NO_THROW(parse_profile(right[i], files[i].string(), example_env())) << right[i];
  auto result = validate(files);
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST(SchemaTest, ValidatorExplainsUnreadableInput) {
  testing::TempDir dir;
  testing::write_file(dir / "broken.json", "{\"name\": ");
  auto result = validate({dir / "broken.json"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("broken.json: cannot read as JSON"), std::string::npos) << result.err;
  result = validate({dir / "absent.json"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("absent.json: cannot read as JSON"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace perfgate
