// The CI files in ci/github and ci/gitlab: valid YAML, and running the commands
// the README and scripts use, with flags perfgate has.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Debian's python3-yaml; JSON out so that the assertions below walk a tree.
constexpr const char* kYamlToJson = R"(
import json, sys, yaml
print(json.dumps(yaml.safe_load(open(sys.argv[1], encoding="utf-8")), default=str))
)";

fs::path ci_dir() {
  return testing::source_dir() / "ci";
}

std::vector<fs::path> yaml_files() {
  std::vector<fs::path> files;
  for (const char* sub : {"github", "gitlab"})
    for (const auto& entry : fs::recursive_directory_iterator(ci_dir() / sub))
      if (entry.path().extension() == ".yml" || entry.path().extension() == ".yaml")
        files.push_back(entry.path());
  return files;
}

void require_pyyaml() {
  auto check = testing::run_command({"/usr/bin/python3", "-c", "import yaml"});
  ASSERT_EQ(check.exit_code, 0) << "python3-yaml is missing: apt-get install python3-yaml\n"
                                << check.err;
}

json load_yaml(const fs::path& path) {
  auto result = testing::run_command({"/usr/bin/python3", "-c", kYamlToJson, path.string()});
  if (result.exit_code != 0) ADD_FAILURE() << path << " is not valid YAML:\n" << result.err;
  return result.exit_code == 0 ? json::parse(result.out) : json();
}

// Every shell line a file runs: `run:` of the action's steps, `script:` of GitLab jobs.
std::string commands_of(const json& node) {
  std::string text;
  for (const auto& [key, value] : node.items()) {
    bool commands = node.is_object() && (key == "run" || key == "script");
    if (commands && value.is_string()) {
      text += value.get<std::string>() + "\n";
    } else if (commands && value.is_array()) {
      for (const json& line : value) text += line.get<std::string>() + "\n";
    } else if (value.is_structured()) {
      text += commands_of(value);
    }
  }
  return text;
}

std::vector<std::string> used_actions(const json& action) {
  std::vector<std::string> uses;
  for (const json& step : action["runs"]["steps"])
    if (step.contains("uses")) uses.push_back(step["uses"]);
  return uses;
}

bool uses_prefix(const std::vector<std::string>& uses, const std::string& prefix) {
  for (const auto& u : uses)
    if (u.starts_with(prefix)) return true;
  return false;
}

// `perfgate run` as the templates call it (a variable holding the binary, then `run`).
bool runs_perfgate_run(const std::string& commands) {
  return std::regex_search(commands, std::regex(R"(\"\$PERFGATE(_BIN)?\" run )"));
}

TEST(CiTemplatesTest, EveryFileIsValidYaml) {
  require_pyyaml();
  auto files = yaml_files();
  ASSERT_GE(files.size(), 3u);
  for (const fs::path& file : files) EXPECT_FALSE(load_yaml(file).is_null()) << file;
}

TEST(CiTemplatesTest, TheActionInstallsBuildsGatesAndPublishes) {
  require_pyyaml();
  json action = load_yaml(ci_dir() / "github/action.yml");
  EXPECT_EQ(action["runs"]["using"], "composite");
  std::string run = commands_of(action);
  for (const char* needle :
       {"package.sh", "apt-get install", "$RELEASES/v$VERSION/", "--junit", "--json", "--summary",
        "GITHUB_STEP_SUMMARY", "annotate.py", "report --html"})
    EXPECT_NE(run.find(needle), std::string::npos) << needle;
  EXPECT_TRUE(runs_perfgate_run(run));
  EXPECT_TRUE(uses_prefix(used_actions(action), "actions/upload-artifact@"));
  EXPECT_TRUE(action["inputs"].contains("version"));
}

// The .deb is built at most once per version and OS: the Actions cache keeps it.
TEST(CiTemplatesTest, TheActionCachesThePackageByVersionAndOs) {
  require_pyyaml();
  json action = load_yaml(ci_dir() / "github/action.yml");
  bool cached = false;
  for (const json& step : action["runs"]["steps"]) {
    if (!step.value("uses", "").starts_with("actions/cache@")) continue;
    std::string key = step["with"]["key"];
    EXPECT_NE(key.find("steps.which.outputs.version"), std::string::npos) << key;
    EXPECT_NE(key.find("steps.which.outputs.os"), std::string::npos) << key;
    cached = step["with"]["path"] == "perfgate-deb";
  }
  EXPECT_TRUE(cached);
}

TEST(CiTemplatesTest, TheReleaseWorkflowPublishesTheDebAndTheImage) {
  require_pyyaml();
  json workflow = load_yaml(ci_dir() / "github/perfgate-release.yml");
  std::string text = workflow.dump();
  for (const char* needle :
       {"ci/package.sh", "docker build", "docker push", "ghcr.io", "softprops/action-gh-release@"})
    EXPECT_NE(text.find(needle), std::string::npos) << needle;
}

// Pull requests restore (by prefix), only default-branch runs save.
TEST(CiTemplatesTest, TheActionSavesTheStoreOnlyFromTheDefaultBranch) {
  require_pyyaml();
  json action = load_yaml(ci_dir() / "github/action.yml");
  for (const json& step : action["runs"]["steps"]) {
    std::string uses = step.value("uses", "");
    if (uses.starts_with("actions/cache/restore@")) {
      EXPECT_TRUE(step["with"].contains("restore-keys"));
    }
    if (uses.starts_with("actions/cache/save@")) {
      std::string condition = step["if"];
      EXPECT_NE(condition.find("inputs.default-branch"), std::string::npos);
      EXPECT_NE(condition.find("pull_request"), std::string::npos);
    }
  }
  auto uses = used_actions(action);
  EXPECT_TRUE(uses_prefix(uses, "actions/cache/restore@"));
  EXPECT_TRUE(uses_prefix(uses, "actions/cache/save@"));
}

TEST(CiTemplatesTest, TheExampleWorkflowUsesTheAction) {
  require_pyyaml();
  json workflow = load_yaml(ci_dir() / "github/perfgate-example.yml");
  std::string text = workflow.dump();
  EXPECT_NE(text.find("\"uses\":\"./ci/github\""), std::string::npos);
  EXPECT_NE(text.find("ci/profiles/hello.json"), std::string::npos);
  EXPECT_TRUE(fs::exists(testing::source_dir() / "ci/profiles/hello.json"));
}

TEST(CiTemplatesTest, TheGitlabTemplateReportsAndAllowsWarnings) {
  require_pyyaml();
  json job = load_yaml(ci_dir() / "gitlab/perfgate.gitlab-ci.yml")[".perfgate"];
  EXPECT_EQ(job["allow_failure"]["exit_codes"], json::array({2}));
  json reports = job["artifacts"]["reports"];
  EXPECT_EQ(reports["junit"], "perfgate-out/junit.xml");
  EXPECT_EQ(reports["load_performance"], "perfgate-out/load-performance.json");
  EXPECT_EQ(reports["metrics"], "perfgate-out/metrics.txt");
  EXPECT_EQ(job["cache"]["key"], "perfgate-$PERFGATE_CACHE_BRANCH");
  std::string script = commands_of(job);
  // It runs in perfgate's image: it installs and compiles nothing.
  EXPECT_EQ(job["image"]["name"], "$PERFGATE_IMAGE");
  EXPECT_NE(job["variables"]["PERFGATE_IMAGE"].get<std::string>().find("perfgate:"),
            std::string::npos);
  for (const char* needle : {"install-deps.sh", "build.sh"})
    EXPECT_EQ(script.find(needle), std::string::npos) << needle;
  for (const char* needle : {"--junit perfgate-out/junit.xml",
                             "--gitlab-load-performance perfgate-out/load-performance.json",
                             "--openmetrics perfgate-out/metrics.txt", "report --html"})
    EXPECT_NE(script.find(needle), std::string::npos) << needle;
  EXPECT_TRUE(runs_perfgate_run(script));
}

// --- Sharded runs: the CI's own fan-out runs the shards, one job merges.

// Every --shard the commands pass, as "I/N" text.
std::vector<std::string> shard_args(const std::string& commands) {
  std::vector<std::string> out;
  std::regex shard(R"(--shard \"?([^ \"]+)\"?)");
  for (std::sregex_iterator it(commands.begin(), commands.end(), shard), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

bool merges(const std::string& commands) {
  return std::regex_search(commands,
                           std::regex(R"(perfgate\"? merge .*shard-\*\.json)", std::regex::icase));
}

TEST(CiTemplatesTest, TheShardedWorkflowRunsAMatrixOfShardsThenMerges) {
  require_pyyaml();
  json workflow = load_yaml(ci_dir() / "github/perfgate-sharded.yml");
  json load = workflow["jobs"]["load"];
  int shards = std::stoi(workflow["env"]["SHARDS"].get<std::string>());
  EXPECT_EQ(load["strategy"]["matrix"]["shard"].size(), static_cast<size_t>(shards));
  std::string load_run = commands_of(load);
  EXPECT_EQ(shard_args(load_run), std::vector<std::string>{"$SHARD/$SHARDS"});
  for (const char* needle :
       {"--start-at \"$START_AT\"", "--json \"perfgate-out/shard-$SHARD.json\""})
    EXPECT_NE(load_run.find(needle), std::string::npos) << needle;
  EXPECT_NE(load.dump().find("needs.build.outputs.start-at"), std::string::npos);
  json merge = workflow["jobs"]["merge"];
  EXPECT_EQ(merge["needs"], json::array({"build", "load"}));
  std::string merge_run = commands_of(merge);
  EXPECT_TRUE(merges(merge_run)) << merge_run;
  for (const char* needle : {"--store", "--junit", "--json", "--summary"})
    EXPECT_NE(merge_run.find(needle), std::string::npos) << needle;
  EXPECT_TRUE(fs::exists(testing::source_dir() / workflow["env"]["PROFILE"].get<std::string>()));
}

TEST(CiTemplatesTest, TheShardedGitlabPipelineRunsParallelShardsThenMerges) {
  require_pyyaml();
  json pipeline = load_yaml(ci_dir() / "gitlab/perfgate-sharded.gitlab-ci.yml");
  json load = pipeline["perfgate-load"];
  EXPECT_GE(load["parallel"].get<int>(), 2);
  std::string load_script = commands_of(load);
  EXPECT_EQ(shard_args(load_script), std::vector<std::string>{"$CI_NODE_INDEX/$CI_NODE_TOTAL"});
  EXPECT_NE(load_script.find("--start-at \"$PERFGATE_START_AT\""), std::string::npos);
  EXPECT_EQ(pipeline["perfgate-build"]["artifacts"]["reports"]["dotenv"], "schedule.env");
  json merge = pipeline["perfgate-merge"];
  EXPECT_NE(merge["needs"].dump().find("perfgate-load"), std::string::npos);
  EXPECT_TRUE(merges(commands_of(merge)));
  EXPECT_EQ(merge["artifacts"]["reports"]["junit"], "perfgate-out/junit.xml");
  EXPECT_EQ(merge["allow_failure"]["exit_codes"], json::array({2}));
}

TEST(CiTemplatesTest, TheKubernetesIndexedJobRunsShardsAndAMergeJob) {
  require_pyyaml();
  constexpr const char* kAllDocs = R"(
import json, sys, yaml
print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1], encoding="utf-8")))))
)";
  auto path = ci_dir() / "k8s/perfgate-shards.yaml";
  auto result = testing::run_command({"/usr/bin/python3", "-c", kAllDocs, path.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json docs = json::parse(result.out);
  json shards, merge;
  for (const json& doc : docs)
    if (doc["kind"] == "Job") (doc["spec"].contains("completionMode") ? shards : merge) = doc;
  ASSERT_FALSE(shards.is_null());
  ASSERT_FALSE(merge.is_null());
  EXPECT_EQ(shards["spec"]["completionMode"], "Indexed");
  EXPECT_EQ(shards["spec"]["completions"], shards["spec"]["parallelism"]);
  json container = shards["spec"]["template"]["spec"]["containers"][0];
  std::string count;
  for (const json& env : container["env"])
    if (env["name"] == "SHARDS") count = env["value"];
  EXPECT_EQ(count, std::to_string(shards["spec"]["completions"].get<int>()));
  std::string shard_command = commands_of(json{{"run", container["args"]}});
  EXPECT_NE(shard_command.find("JOB_COMPLETION_INDEX + 1"), std::string::npos);
  EXPECT_EQ(shard_args(shard_command), std::vector<std::string>{"$shard/$SHARDS"});
  EXPECT_NE(shard_command.find("--start-at"), std::string::npos);
  std::string merge_command =
      commands_of(json{{"run", merge["spec"]["template"]["spec"]["containers"][0]["args"]}});
  // The shards' folder, waited for: a glob would expand before the files exist.
  EXPECT_NE(merge_command.find("perfgate merge --wait 30m --expect \"$SHARDS\" "
                               "\"/data/shards/$START_AT\""),
            std::string::npos)
      << merge_command;
}

std::string help_of(const std::string& subcommand) {
  return testing::run_command({testing::perfgate_binary(), subcommand, "--help"}).out;
}

TEST(CiTemplatesTest, TheTemplatesPassOnlyFlagsPerfgateHas) {
  std::string run_help = help_of("run");
  for (const char* flag : {"--store", "--junit", "--json", "--summary"})
    EXPECT_NE(run_help.find(flag), std::string::npos) << flag;
  std::string report_help = help_of("report");
  for (const char* flag : {"--html", "--store"})
    EXPECT_NE(report_help.find(flag), std::string::npos) << flag;
  for (const char* flag : {"--shard", "--start-at"})
    EXPECT_NE(run_help.find(flag), std::string::npos) << flag;
  std::string merge_help = help_of("merge");
  for (const char* flag :
       {"--store", "--junit", "--json", "--summary", "--gitlab-load-performance", "--openmetrics"})
    EXPECT_NE(merge_help.find(flag), std::string::npos) << flag;
}

// The GitLab template already passes the two report flags that
// `perfgate run` is to get; this turns green once they exist.
TEST(CiTemplatesTest, TheGitlabReportFlagsExist) {
  std::string run_help = help_of("run");
  for (const char* flag : {"--gitlab-load-performance", "--openmetrics"})
    if (run_help.find(flag) == std::string::npos)
      GTEST_SKIP() << "perfgate run has no " << flag << " yet (the GitLab template uses it)";
}

testing::CommandResult annotate(const std::string& golden) {
  return testing::run_command({"/usr/bin/python3", (ci_dir() / "github/annotate.py").string(),
                               (testing::source_dir() / "tests/golden" / golden).string()});
}

TEST(CiTemplatesTest, AnnotationsComeFromTheJsonResult) {
  auto fail = annotate("result_fail.json");
  ASSERT_EQ(fail.exit_code, 0) << fail.err;
  EXPECT_NE(fail.out.find("::error title=perfgate hello%3A throughput_rps::"), std::string::npos)
      << fail.out;
  EXPECT_NE(fail.out.find("::warning title=perfgate hello%3A latency_p99_ms::"), std::string::npos);
  EXPECT_NE(annotate("result_saturated.json").out.find("saturated::inconclusive"),
            std::string::npos);
  EXPECT_EQ(annotate("result_error.json").out.rfind("::error ", 0), 0u);
  EXPECT_EQ(annotate("result_pass.json").out, "");
}

// One workflow command per line, whatever the names hold.
TEST(CiTemplatesTest, AnnotationsSurviveHostileText) {
  auto hostile = annotate("result_hostile.json");
  ASSERT_EQ(hostile.exit_code, 0) << hostile.err;
  std::regex command_line("^::(error|warning) title=[^\\n]*::[^\\n]*$");
  for (size_t start = 0; start < hostile.out.size();) {
    size_t end = hostile.out.find('\n', start);
    EXPECT_TRUE(std::regex_match(hostile.out.substr(start, end - start), command_line));
    start = end + 1;
  }
}

// The action's own steps, run as GitHub runs them (bash -eo pipefail), with
// the variables GitHub would set, against the demo server: the commands the
// action runs are the commands this test runs.
class CiTemplatesCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_file(dir_ / "profile.json", R"({
  "name": "ci-template",
  "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
  "load": { "threads": 1, "connections": 4, "duration": "300ms", "warmup": "100ms" },
  "repeat": { "count": 3, "discard": 1 },
  "thresholds": { "throughput": { "warn": "50%", "fail": "90%" } }
})");
  }

  std::string step_script(const std::string& name) {
    json action = load_yaml(ci_dir() / "github/action.yml");
    for (const json& step : action["runs"]["steps"])
      if (step.value("name", "") == name) return step["run"];
    ADD_FAILURE() << "no step named " << name;
    return "exit 99";
  }

  testing::CommandResult run_step(const std::string& name, uint16_t port) {
    std::map<std::string, std::string> env = {
        {"PERFGATE", testing::perfgate_binary()},
        {"PROFILE", (dir_ / "profile.json").string()},
        {"STORE", (dir_ / "baselines/perfgate.db").string()},
        {"OUT", (dir_ / "perfgate-out").string()},
        {"GITHUB_OUTPUT", (dir_ / "github_output").string()},
        {"GITHUB_STEP_SUMMARY", (dir_ / "step_summary.md").string()},
        {"GITHUB_ACTION_PATH", (ci_dir() / "github").string()},
        {"TARGET_PORT", std::to_string(port)}};
    return testing::run_command(
        {"/bin/bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step_script(name)}, env,
        dir_.path());
  }

  testing::TempDir dir_;
};

TEST_F(CiTemplatesCliTest, TheActionsStepsGateAndPublish) {
  require_pyyaml();
  testing::DemoServerProcess server;
  for (int run = 0; run < 2; ++run) {  // the second run has a baseline
    auto gate = run_step("Run perfgate", server.port());
    ASSERT_EQ(gate.exit_code, 0) << gate.out << gate.err;  // the step itself never fails
  }
  std::string outputs = testing::read_file(dir_ / "github_output");
  EXPECT_TRUE(std::regex_search(outputs, std::regex("exit-code=[012]\n")));
  EXPECT_TRUE(std::regex_search(outputs, std::regex("verdict=(pass|fail|warn)\n"))) << outputs;
  for (const char* file : {"junit.xml", "result.json", "summary.md"})
    EXPECT_TRUE(fs::exists(dir_ / "perfgate-out" / file)) << file;

  auto publish = run_step("Publish the summary and annotations", server.port());
  ASSERT_EQ(publish.exit_code, 0) << publish.err;
  // perfgate appends its summary to the step summary itself, --summary or not.
  std::string step = testing::read_file(dir_ / "step_summary.md");
  std::string last = testing::read_file(dir_ / "perfgate-out/summary.md");
  ASSERT_GE(step.size(), last.size());
  EXPECT_EQ(step.substr(step.size() - last.size()), last);

  auto report = run_step("HTML report of the stored runs", server.port());
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(testing::read_file(dir_ / "perfgate-out/report.html").find("<svg "), std::string::npos);
}

}  // namespace
}  // namespace perfgate
