// The CI files in ci/github and ci/gitlab: valid YAML, and running the commands
// the README and scripts use, with flags perfgate has.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "perfgate/host/shared_executable.h"
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

json step_named(const json& action, const std::string& name) {
  for (const json& step : action["runs"]["steps"])
    if (step.value("name", "") == name) return step;
  ADD_FAILURE() << "no step named " << name;
  return json::object();
}

TEST(CiTemplatesTest, TheActionInstallsTheDebAndGatesInPairedOrStoredMode) {
  require_pyyaml();
  json action = load_yaml(ci_dir() / "github/action.yml");
  EXPECT_EQ(action["runs"]["using"], "composite");
  std::string run = commands_of(action);
  for (const char* needle :
       {"apt-get install", "$RELEASES/v$VERSION/", "--junit", "--json", "report --html",
        "git merge-base HEAD", "git worktree add", "$BUILD_COMMAND", "store prune --policy"})
    EXPECT_NE(run.find(needle), std::string::npos) << needle;
  EXPECT_TRUE(std::regex_search(run, std::regex(R"(perfgate run "\$PROFILE" --store )")));
  EXPECT_TRUE(uses_prefix(used_actions(action), "actions/upload-artifact@"));
  for (const char* input : {"version", "build-command", "service-command", "mode"})
    EXPECT_TRUE(action["inputs"].contains(input)) << input;
  // The pull-request recipe's contract (ci/profiles/pr-paired.json).
  json gate_env = step_named(action, "Run perfgate")["env"];
  for (const char* name :
       {"PERFGATE_SERVICE_COMMAND", "PERFGATE_BASELINE_DIR", "PERFGATE_BASELINE_COMMIT"})
    EXPECT_TRUE(gate_env.contains(name)) << name;
  EXPECT_NE(run.find("PERFGATE_CANDIDATE_DIR=$PWD"), std::string::npos);
  // Both profiles default to the recipes built into perfgate, so that the
  // action needs no file of this repository at the user's side.
  EXPECT_NE(run.find("${PAIRED_PROFILE:-recipe:pr-paired}"), std::string::npos);
  EXPECT_EQ(action["inputs"]["profile"]["default"], "recipe:default-branch");
  EXPECT_FALSE(action["inputs"]["profile"].value("required", false));
}

// In `container: debian:12` there is neither python3 nor a compiler, and the
// action may be used from any repository: it needs nothing of this one's build.
TEST(CiTemplatesTest, TheGithubFilesNeedNoPythonNoCompilerAndNoBuildOfThisRepository) {
  require_pyyaml();
  for (const char* file : {"action.yml", "perfgate-example.yml", "perfgate-sharded.yml"}) {
    std::string run = commands_of(load_yaml(ci_dir() / "github" / file));
    for (const char* needle :
         {"python", "annotate.py", "package.sh", "build.sh", "install-deps.sh", "build/perfgate"})
      EXPECT_EQ(run.find(needle), std::string::npos) << file << ": " << needle;
  }
  EXPECT_FALSE(fs::exists(ci_dir() / "github/annotate.py"));
}

// Keys unique per job, profile and run attempt; a pull request restores its base
// branch's newest store by prefix; only the default branch prunes and saves (the
// Plan step's save output: below, per event), never a pull request or a merge group.
TEST(CiTemplatesTest, TheActionSavesTheStoreOnlyFromTheDefaultBranch) {
  require_pyyaml();
  json action = load_yaml(ci_dir() / "github/action.yml");
  bool restored = false, saved = false;
  for (const json& step : action["runs"]["steps"]) {
    std::string uses = step.value("uses", "");
    if (uses.starts_with("actions/cache/restore@")) {
      restored = true;
      std::string key = step["with"]["key"];
      for (const char* part :
           {"steps.plan.outputs.store-key", "github.run_id", "github.run_attempt"})
        EXPECT_NE(key.find(part), std::string::npos) << part;
      std::string restore_keys = step["with"]["restore-keys"];
      EXPECT_NE(restore_keys.find("steps.plan.outputs.default-branch }}-\n"), std::string::npos);
    }
    if (uses.starts_with("actions/cache/save@")) {
      saved = true;
      EXPECT_NE(step["if"].get<std::string>().find("steps.prune.outcome == 'success'"),
                std::string::npos);
      EXPECT_NE(step["with"]["key"].get<std::string>().find("github.run_attempt"),
                std::string::npos);
    }
  }
  EXPECT_TRUE(restored && saved);
  std::string prune_if = step_named(action, "Prune the baseline store")["if"];
  EXPECT_NE(prune_if.find("steps.plan.outputs.save == 'true'"), std::string::npos);
  EXPECT_NE(prune_if.find("github.event_name != 'pull_request'"), std::string::npos);
  EXPECT_NE(prune_if.find("github.event_name != 'merge_group'"), std::string::npos);
  // The job id and the profile name the store: a matrix of profiles keeps them apart.
  std::string plan = step_named(action, "Plan")["run"];
  EXPECT_NE(plan.find("key=${CACHE_KEY:-$JOB-$PROFILE}"), std::string::npos);
}

// The Plan step's script, run by bash as the runner runs it, for one event.
struct Plan {
  int exit_code = -1;
  std::string out;
  std::map<std::string, std::string> outputs;
};

Plan plan_for(const std::map<std::string, std::string>& event) {
  json action = load_yaml(ci_dir() / "github/action.yml");
  testing::TempDir dir;
  std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"},
                                            {"MODE", "auto"},
                                            {"PROFILE", "recipe:default-branch"},
                                            {"VERSION", "1.2.3"},
                                            {"JOB", "perfgate"},
                                            {"DEFAULT_BRANCH", "main"},
                                            {"BASE_REF", ""},
                                            {"ACCEPT", ""},
                                            {"CACHE_KEY", ""},
                                            {"PAIRED_PROFILE", ""},
                                            {"GITHUB_OUTPUT", (dir / "output").string()},
                                            {"GITHUB_ACTION_PATH", (ci_dir() / "github").string()}};
  for (const auto& [name, value] : event) env[name] = value;
  auto result = testing::run_command({"/bin/bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                                      step_named(action, "Plan")["run"].get<std::string>()},
                                     env, dir.path());
  Plan plan{result.exit_code, result.out, {}};
  if (fs::exists(dir / "output")) {
    std::string text = testing::read_file(dir / "output");
    for (std::size_t at = 0, end; at < text.size(); at = end + 1) {
      end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(at, end - at);
      if (auto eq = line.find('='); eq != std::string::npos)
        plan.outputs[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return plan;
}

// Every event a repository sends: whose store judges it, and whether it saves.
// A merge group or another branch judged with no --baseline-branch would find
// no baseline of its own and pass; a schedule's event has no repository.
TEST(CiTemplatesTest, ThePlanJudgesEveryEventAgainstTheRightBranchAndSavesOnlyTheDefaults) {
  require_pyyaml();
  struct Case {
    std::map<std::string, std::string> event;
    std::string mode, baseline, save;
  };
  const std::vector<Case> cases = {
      {{{"EVENT", "push"}, {"REF_NAME", "main"}}, "stored", "main", "true"},
      {{{"EVENT", "push"}, {"REF_NAME", "release-1"}}, "stored", "main", "false"},
      // A merge queue is a change too: paired, against the commit it builds on.
      {{{"EVENT", "merge_group"}, {"REF_NAME", "gh-readonly-queue/main/pr-5-abc"}},
       "paired",
       "main",
       "false"},
      {{{"EVENT", "merge_group"},
        {"REF_NAME", "gh-readonly-queue/release-1/pr-6-abc"},
        {"QUEUE_BASE_REF", "refs/heads/release-1"}},
       "paired",
       "release-1",
       "false"},
      {{{"EVENT", "merge_group"},
        {"REF_NAME", "gh-readonly-queue/main/pr-5-abc"},
        {"MODE", "stored"}},
       "stored",
       "main",
       "false"},
      {{{"EVENT", "pull_request"}, {"REF_NAME", "5/merge"}, {"BASE_REF", "release-1"}},
       "paired",
       "release-1",
       "false"},
      {{{"EVENT", "schedule"}, {"REF_NAME", "main"}, {"DEFAULT_BRANCH", ""}},
       "stored",
       "main",
       "true"},
      {{{"EVENT", "workflow_dispatch"}, {"REF_NAME", "main"}, {"ACCEPT", "latest"}},
       "stored",
       "main",
       "true"},
  };
  for (const Case& c : cases) {
    Plan plan = plan_for(c.event);
    std::string what = c.event.at("EVENT") + " on " + c.event.at("REF_NAME");
    ASSERT_EQ(plan.exit_code, 0) << what << ": " << plan.out;
    EXPECT_EQ(plan.outputs["mode"], c.mode) << what;
    EXPECT_EQ(plan.outputs["baseline-branch"], c.baseline) << what;
    EXPECT_EQ(plan.outputs["save"], c.save) << what;
    EXPECT_EQ(plan.outputs["default-branch"], "main") << what;
    EXPECT_TRUE(std::regex_match(plan.outputs["comment-key"], std::regex("[A-Za-z0-9._-]{1,100}")))
        << what << ": " << plan.outputs["comment-key"];
  }
  // Two perfgate jobs on one pull request keep a sticky comment each.
  std::map<std::string, std::string> pr = {
      {"EVENT", "pull_request"}, {"REF_NAME", "5/merge"}, {"BASE_REF", "main"}};
  std::string first = plan_for(pr).outputs["comment-key"];
  pr["JOB"] = "perfgate-api";
  EXPECT_NE(first, plan_for(pr).outputs["comment-key"]);
  EXPECT_EQ(first, "perfgate-recipe_pr-paired");
}

// Refused with one line, exit 3: pull_request_target (the base commit, a store
// saved as main's), accepting off the default branch, an event with no default branch.
TEST(CiTemplatesTest, ThePlanRefusesPullRequestTargetAndAcceptOffTheDefaultBranch) {
  require_pyyaml();
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> refused = {
      {{{"EVENT", "pull_request_target"}, {"REF_NAME", "main"}, {"BASE_REF", "main"}},
       "::error title=perfgate::pull_request_target measures the base commit"},
      {{{"EVENT", "workflow_dispatch"}, {"REF_NAME", "release-1"}, {"ACCEPT", "7"}},
       "::error title=perfgate::accept changes the default branch's store"},
      {{{"EVENT", "workflow_dispatch"}, {"REF_NAME", "main"}, {"DEFAULT_BRANCH", ""}},
       "::error title=perfgate::no default branch in this workflow_dispatch event"},
  };
  for (const auto& [event, line] : refused) {
    Plan plan = plan_for(event);
    EXPECT_EQ(plan.exit_code, 3) << event.at("EVENT") << ": " << plan.out;
    EXPECT_NE(plan.out.find(line), std::string::npos) << plan.out;
    EXPECT_TRUE(plan.outputs.empty()) << event.at("EVENT");
  }
  json action = load_yaml(ci_dir() / "github/action.yml");
  EXPECT_EQ(step_named(action, "Comment on the pull request")["if"].get<std::string>().find(
                "pull_request_target"),
            std::string::npos);
}

// A comment that cannot be written (here: nothing listens at the API's address)
// is one warning with perfgate's reason, never perfgate's own ::error
// annotation on a run whose verdict stands.
TEST(CiTemplatesTest, AFailedPullRequestCommentIsAWarningNotAnError) {
  require_pyyaml();
  json step = step_named(load_yaml(ci_dir() / "github/action.yml"), "Comment on the pull request");
  testing::TempDir dir;
  fs::create_directories(dir / "out");
  testing::write_file(dir / "out/summary.md", "## perfgate hello: PASS\n");
  testing::write_file(dir / "event.json", R"({"pull_request": {"number": 7}})");
  std::string bin_dir = fs::path(testing::perfgate_binary()).parent_path().string();
  auto result = testing::run_command(
      {"/bin/bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]},
      {{"PATH", bin_dir + ":/usr/bin:/bin"},
       {"GITHUB_ACTIONS", "true"},
       {"GITHUB_API_URL", "http://127.0.0.1:" + std::to_string(testing::unused_port())},
       {"GITHUB_REPOSITORY", "owner/repo"},
       {"GITHUB_EVENT_PATH", (dir / "event.json").string()},
       {"GITHUB_TOKEN", "not-a-token"},
       {"OUT", (dir / "out").string()},
       {"FORK", "false"},
       {"KEY", "perfgate-hello"},
       {"RUNNER_TEMP", dir.path().string()}});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("::warning title=perfgate::the pull request comment could not be "
                            "written: GET http://127.0.0.1:"),
            std::string::npos)
      << result.out;
  EXPECT_EQ(result.out.find("::error"), std::string::npos) << result.out;
  EXPECT_EQ(result.err.find("::error"), std::string::npos) << result.err;
}

TEST(CiTemplatesTest, TheReleaseWorkflowPublishesTheDebAndTheImage) {
  require_pyyaml();
  json workflow = load_yaml(ci_dir() / "github/perfgate-release.yml");
  std::string text = workflow.dump();
  for (const char* needle :
       {"ci/package.sh", "docker build", "docker push", "ghcr.io", "softprops/action-gh-release@"})
    EXPECT_NE(text.find(needle), std::string::npos) << needle;
}

// One job creates the release; the .deb and image jobs need it and only upload
// (two jobs creating one release race: one of them fails).
TEST(CiTemplatesTest, TheReleaseIsCreatedOnceBeforeTheJobsThatUploadToIt) {
  require_pyyaml();
  json jobs = load_yaml(ci_dir() / "github/perfgate-release.yml")["jobs"];
  ASSERT_TRUE(jobs.contains("release"));
  EXPECT_NE(
      commands_of(jobs["release"]).find("gh release create \"$GITHUB_REF_NAME\" --verify-tag"),
      std::string::npos);
  EXPECT_FALSE(jobs["release"].contains("needs"));
  for (const auto& [name, job] : jobs.items()) {
    if (name == "release") continue;
    EXPECT_EQ(job.value("needs", json()), "release") << name;
    EXPECT_EQ(commands_of(job).find("release create"), std::string::npos) << name;
    // The stamped tag, not github.sha (the commit before it).
    for (const json& step : job["steps"]) {
      if (step.value("uses", "").starts_with("actions/checkout@")) {
        EXPECT_EQ(step["with"]["ref"], "${{ github.ref }}") << name;
      }
    }
  }
  for (const json& step : jobs["deb"]["steps"]) {
    if (step.value("uses", "").starts_with("softprops/action-gh-release@")) {
      EXPECT_EQ(step["with"]["tag_name"], "${{ github.ref_name }}");
    }
  }
}

// The release stamps its version and download location into the tag's
// ci/github/action.yml: the release job's stamp step, run here against a
// throwaway origin, moves the tag to a commit whose action installs that version
// from that repository.
TEST(CiTemplatesTest, TheReleaseStampsItsVersionAndDownloadLocationIntoTheAction) {
  require_pyyaml();
  json action = load_yaml(ci_dir() / "github/action.yml");
  EXPECT_EQ(step_named(action, "Plan")["env"]["PERFGATE_RELEASE_VERSION"], "");
  EXPECT_EQ(step_named(action, "Install perfgate")["env"]["PERFGATE_RELEASES"], "");
  std::string plan = commands_of(step_named(action, "Plan"));
  std::string install = commands_of(step_named(action, "Install perfgate"));
  EXPECT_NE(plan.find("[ -n \"$version\" ] || version=$PERFGATE_RELEASE_VERSION"),
            std::string::npos);
  EXPECT_NE(install.find("RELEASES=${PERFGATE_RELEASES:-$RELEASES}"), std::string::npos);

  std::string stamp;
  json release = load_yaml(ci_dir() / "github/perfgate-release.yml");
  for (const json& step : release["jobs"]["release"]["steps"])
    if (step.value("id", "") == "stamp") stamp = step["run"];
  ASSERT_FALSE(stamp.empty()) << "no stamp step in the release job";
  std::string cmake = testing::read_file(testing::source_dir() / "CMakeLists.txt");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cmake, m, std::regex(R"(project\(perfgate VERSION ([^ )]+))")));
  std::string version = m[1];

  testing::TempDir dir;
  fs::create_directories(dir / "work/ci/github");
  fs::copy_file(testing::source_dir() / "CMakeLists.txt", dir / "work/CMakeLists.txt");
  fs::copy_file(ci_dir() / "github/action.yml", dir / "work/ci/github/action.yml");
  testing::write_file(dir / "stamp.sh", stamp);
  std::string setup = R"(set -e
git init -q --bare -b main origin.git
cd work && git init -q -b main && git add -A
git -c user.name=t -c user.email=t@example.invalid commit -qm release
git -c user.name=t -c user.email=t@example.invalid tag -a "v$V" -m "v$V"
git remote add origin ../origin.git && git push -q origin main "v$V"
bash -e ../stamp.sh
git -C ../origin.git show "v$V:ci/github/action.yml"
)";
  auto result = testing::run_command({"/bin/bash", "-c", setup},
                                     {{"V", version},
                                      {"GITHUB_REF_NAME", "v" + version},
                                      {"GITHUB_SERVER_URL", "https://github.com"},
                                      {"GITHUB_REPOSITORY", "someone/perfgate"},
                                      {"GITHUB_OUTPUT", (dir / "output").string()}},
                                     dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("PERFGATE_RELEASE_VERSION: \"" + version + "\""), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find(
                "PERFGATE_RELEASES: \"https://github.com/someone/perfgate/releases/download\""),
            std::string::npos);
  EXPECT_EQ(testing::read_file(dir / "output"), "version=" + version + "\n");
}

TEST(CiTemplatesTest, TheExampleWorkflowUsesTheActionOneRunPerRef) {
  require_pyyaml();
  json workflow = load_yaml(ci_dir() / "github/perfgate-example.yml");
  std::string text = workflow.dump();
  // A copy in the user's repository has no ./ci/github: it names the released action.
  EXPECT_NE(text.find("\"uses\":\"OWNER/perfgate/ci/github@vX.Y.Z\""), std::string::npos);
  EXPECT_EQ(text.find("./ci/github"), std::string::npos);
  EXPECT_EQ(text.find("\"profile\""), std::string::npos) << "the recipes are the defaults";
  EXPECT_NE(text.find("\"fetch-depth\":0"), std::string::npos);
  EXPECT_NE(workflow["concurrency"]["group"].get<std::string>().find("github.ref"),
            std::string::npos);
  // comment: true writes a pull request comment: the token must be allowed to.
  json with;
  for (const json& step : workflow["jobs"]["perfgate"]["steps"])
    if (step.value("uses", "").starts_with("OWNER/perfgate/ci/github@")) with = step["with"];
  EXPECT_EQ(with["comment"], "true");
  EXPECT_EQ(workflow["permissions"]["pull-requests"], "write");
  EXPECT_EQ(workflow["permissions"]["contents"], "read");
}

// Issue 42, item 14: the example's demo started `perfgate demo-server` from
// PATH on both sides, and every pull request warned that both run one
// installed program. Its build and service commands, run as the action runs
// them in two checkouts (perfgate on PATH as the .deb installs it), give each
// side its own copy; the old ones are still caught.
TEST(CiTemplatesTest, TheExampleWorkflowsDemoRunsEachCheckoutsOwnCopy) {
  require_pyyaml();
  json workflow = load_yaml(ci_dir() / "github/perfgate-example.yml");
  json with;
  for (const json& step : workflow["jobs"]["perfgate"]["steps"])
    if (step.value("uses", "").starts_with("OWNER/perfgate/ci/github@")) with = step["with"];
  ASSERT_TRUE(with.contains("build-command") && with.contains("service-command")) << with;
  testing::TempDir dir;
  std::string path = fs::path(testing::perfgate_binary()).parent_path().string() + ":/usr/bin:/bin";
  auto side = [&](const std::string& name, const std::string& build, const std::string& service) {
    fs::create_directories(dir / name);
    auto built = testing::run_command({"/bin/bash", "-eo", "pipefail", "-c", build},
                                      {{"PATH", path}}, dir / name);
    EXPECT_EQ(built.exit_code, 0) << build << ": " << built.err;
    ServiceSpec spec;
    spec.command = {"sh", "-c", service};
    spec.cwd = (dir / name).string();
    return spec;
  };
  std::string build = with["build-command"], service = with["service-command"];
  auto shared = shared_installed_executable(side("candidate", build, service),
                                            side("baseline", build, service), path);
  EXPECT_FALSE(shared) << "the example's demo warns: " << shared_executable_warning(*shared);
  EXPECT_NE(service.find("demo-server"), std::string::npos) << service;
  // What the example did before: one installed program, and the warning.
  std::string installed = R"(exec perfgate demo-server --port "$PORT" --delay 2ms)";
  EXPECT_TRUE(shared_installed_executable(side("old-candidate", "true", installed),
                                          side("old-baseline", "true", installed), path));
}

TEST(CiTemplatesTest, TheGitlabTemplateReportsAndAllowsWarnings) {
  require_pyyaml();
  json job = load_yaml(ci_dir() / "gitlab/perfgate.gitlab-ci.yml")[".perfgate"];
  EXPECT_EQ(job["allow_failure"]["exit_codes"], json::array({2}));
  json reports = job["artifacts"]["reports"];
  EXPECT_EQ(reports["junit"], "perfgate-out/junit.xml");
  EXPECT_EQ(reports["load_performance"], "perfgate-out/load-performance.json");
  EXPECT_EQ(reports["metrics"], "perfgate-out/metrics.txt");
  std::string script = commands_of(job);
  // It runs in perfgate's image: it installs and compiles nothing.
  EXPECT_EQ(job["image"]["name"], "$PERFGATE_IMAGE");
  EXPECT_NE(job["variables"]["PERFGATE_IMAGE"].get<std::string>().find("perfgate:"),
            std::string::npos);
  for (const char* needle : {"install-deps.sh", "build.sh"})
    EXPECT_EQ(script.find(needle), std::string::npos) << needle;
  // Nothing of this repository at the user's side: the profiles are the recipes
  // built into perfgate.
  EXPECT_EQ(job["variables"]["PERFGATE_PAIRED_PROFILE"], "recipe:pr-paired");
  EXPECT_EQ(job["variables"]["PERFGATE_PROFILE"], "recipe:default-branch");
  for (const char* needle : {"--junit perfgate-out/junit.xml",
                             "--gitlab-load-performance perfgate-out/load-performance.json",
                             "--openmetrics perfgate-out/metrics.txt", "report --html"})
    EXPECT_NE(script.find(needle), std::string::npos) << needle;
  EXPECT_TRUE(runs_perfgate_run(script));
}

// What a copied template meets in a real project: a cache key GitLab refuses
// when a branch name holds a `/` (release/1), a newer pipeline unable to cancel
// a superseded one, a header example whose $PORT GitLab expands (to nothing)
// before the job starts, and no word on the GitLab it needs.
TEST(CiTemplatesTest, TheGitlabTemplatesCacheKeysHoldNoBranchNameAndJobsAreInterruptible) {
  require_pyyaml();
  for (const char* file : {"perfgate.gitlab-ci.yml", "perfgate-sharded.gitlab-ci.yml"}) {
    json pipeline = load_yaml(ci_dir() / "gitlab" / file);
    for (const auto& [name, job] : pipeline.items()) {
      if (!job.is_object() || !job.contains("cache")) continue;
      std::string key = job["cache"]["key"];
      // The manual accept job writes into the gating job's cache: its key names
      // that job (PERFGATE_GATE_JOB), whose slug is what CI_JOB_NAME_SLUG gives there.
      if (key.find("$PERFGATE_GATE_JOB") != std::string::npos) {
        EXPECT_EQ(key, "perfgate-store-$PERFGATE_GATE_JOB") << file << " " << name;
        EXPECT_TRUE(pipeline.contains(job["variables"]["PERFGATE_GATE_JOB"].get<std::string>()))
            << file << " " << name << ": PERFGATE_GATE_JOB names no job";
      } else {
        EXPECT_NE(key.find("$CI_JOB_NAME_SLUG"), std::string::npos) << file << " " << name;
      }
      for (const char* branchy : {"BRANCH", "REF_NAME"})
        EXPECT_EQ(key.find(branchy), std::string::npos) << file << " " << name << ": " << key;
    }
  }
  std::string text = testing::read_file(ci_dir() / "gitlab/perfgate.gitlab-ci.yml");
  json job = load_yaml(ci_dir() / "gitlab/perfgate.gitlab-ci.yml")[".perfgate"];
  EXPECT_EQ(job["interruptible"], true);
  EXPECT_NE(text.find("--port $$PORT"), std::string::npos);
  EXPECT_FALSE(std::regex_search(text, std::regex(R"(--port \$PORT)")));
  EXPECT_NE(text.find("GitLab 16.1"), std::string::npos);
  // Stored mode judges against the default branch's runs, the only ones cached.
  EXPECT_NE(commands_of(job).find("--baseline-branch $CI_DEFAULT_BRANCH"), std::string::npos);
}

// A merged-results pipeline or a merge train checks out the merge with the
// target's head: paired mode must build that head as the baseline, not the fork
// point (whose comparison would charge the target's own changes to the merge
// request). gitlab-ci-local has no merged results; the pipeline test fakes one
// (a local merge commit and the variables GitLab sets).
TEST(CiTemplatesTest, TheGitlabPairedBaselineIsTheTargetsHeadInMergedResultsAndMergeTrains) {
  require_pyyaml();
  std::string script =
      commands_of(load_yaml(ci_dir() / "gitlab/perfgate.gitlab-ci.yml")[".perfgate"]);
  EXPECT_TRUE(std::regex_search(
      script, std::regex(R"(case "\$\{CI_MERGE_REQUEST_EVENT_TYPE:-\}" in\s+merged_result \| )"
                         R"(merge_train\) base=\$\{CI_MERGE_REQUEST_TARGET_BRANCH_SHA:-\})")))
      << script;
  // The fork point stays the baseline of a detached merge request pipeline.
  EXPECT_NE(script.find("base=${CI_MERGE_REQUEST_DIFF_BASE_SHA:-}"), std::string::npos);
  std::string docs = testing::read_file(testing::source_dir() / "docs/ci.md");
  EXPECT_NE(docs.find("CI_MERGE_REQUEST_TARGET_BRANCH_SHA"), std::string::npos);
}

// A template's workflow: replaces the project's own choice for every job: with
// the merge-request workflow, a push to a branch with an open merge request got
// no branch pipeline, and the project's branch-only jobs ran nowhere. The
// templates leave workflow: to the project and run in merge request pipelines
// only when told it has them (else a merge request pipeline holding only
// perfgate would appear beside the branch pipeline, and gate the merge alone).
// ci/gitlab-rules-check.js builds the pipelines of both choices.
TEST(CiTemplatesTest, TheGitlabTemplatesLeaveTheWorkflowToTheProject) {
  require_pyyaml();
  for (const char* file : {"perfgate.gitlab-ci.yml", "perfgate-sharded.gitlab-ci.yml"}) {
    json pipeline = load_yaml(ci_dir() / "gitlab" / file);
    EXPECT_FALSE(pipeline.contains("workflow")) << file;
    int merge_request_rules = 0;
    for (const auto& [name, job] : pipeline.items()) {
      if (!job.is_object() || !job.contains("rules")) continue;
      for (const json& rule : job["rules"]) {
        std::string condition = rule.value("if", "");
        if (condition.find("merge_request_event") == std::string::npos) continue;
        ++merge_request_rules;
        EXPECT_NE(condition.find(R"(&& $PERFGATE_MR_PIPELINES == "true")"), std::string::npos)
            << file << " " << name << ": " << condition;
      }
    }
    EXPECT_GE(merge_request_rules, 1) << file;
  }
  std::string docs = testing::read_file(testing::source_dir() / "docs/ci.md");
  EXPECT_NE(docs.find("PERFGATE_MR_PIPELINES"), std::string::npos);
}

// The GitLab job's choice of mode, run by sh as the runner runs it: paired for a
// merge request (its pipeline, or the branch pipeline gating it), stored
// elsewhere; paired on the default branch would judge HEAD against itself and
// is refused, as the GitHub action refuses paired mode without a pull request.
TEST(CiTemplatesTest, TheGitlabJobPairsMergeRequestsAndRefusesPairedOnTheDefaultBranch) {
  require_pyyaml();
  json job = load_yaml(ci_dir() / "gitlab/perfgate.gitlab-ci.yml")[".perfgate"];
  std::string mode_script;
  for (const json& line : job["script"])
    if (line.get<std::string>().find("mode=$PERFGATE_MODE") != std::string::npos)
      mode_script = line;
  ASSERT_FALSE(mode_script.empty());
  using Env = std::map<std::string, std::string>;
  const Env push_main = {{"CI_PIPELINE_SOURCE", "push"}, {"CI_COMMIT_BRANCH", "main"}};
  const Env push_feature = {{"CI_PIPELINE_SOURCE", "push"}, {"CI_COMMIT_BRANCH", "feature"}};
  const Env merge_request = {{"CI_PIPELINE_SOURCE", "merge_request_event"}};
  auto with = [](Env env, const std::string& name, const std::string& value) {
    env[name] = value;
    return env;
  };
  const std::vector<std::tuple<Env, int, std::string>> cases = {
      {push_main, 0, "perfgate: stored mode"},
      {push_feature, 0, "perfgate: stored mode"},
      {merge_request, 0, "perfgate: paired mode"},
      {with(push_feature, "CI_OPEN_MERGE_REQUESTS", "group/p!1"), 0, "perfgate: paired mode"},
      {with(merge_request, "PERFGATE_MODE", "stored"), 0, "perfgate: stored mode"},
      {with(push_feature, "PERFGATE_MODE", "paired"), 0, "perfgate: paired mode"},
      {with(push_main, "PERFGATE_MODE", "paired"), 3,
       "paired on the default branch main would judge its commit against itself"},
      {with(push_main, "PERFGATE_MODE", "pairde"), 3, "PERFGATE_MODE must be paired, stored"},
  };
  for (const auto& [vars, code, line] : cases) {
    Env env = {{"PATH", "/usr/bin:/bin"}, {"CI_DEFAULT_BRANCH", "main"}, {"PERFGATE_MODE", ""}};
    for (const auto& [name, value] : vars) env[name] = value;
    auto result = testing::run_command({"/bin/sh", "-c", mode_script}, env);
    EXPECT_EQ(result.exit_code, code) << line << ": " << result.out;
    EXPECT_NE(result.out.find(line), std::string::npos) << result.out;
  }
}

// Fixed ports collide between jobs on one host: the templates pick free ones at
// job start unless the user set them.
TEST(CiTemplatesTest, TheTemplatesPickFreePortsUnlessSet) {
  require_pyyaml();
  json gitlab = load_yaml(ci_dir() / "gitlab/perfgate.gitlab-ci.yml")[".perfgate"];
  std::string github =
      commands_of(step_named(load_yaml(ci_dir() / "github/action.yml"), "Run perfgate"));
  for (const std::string& script : {commands_of(gitlab), github}) {
    for (
        const char* needle :
        {"free_port() {", "$(od -An -N2 -tu2 /dev/urandom) % 12000 + 20000",
         "/proc/net/tcp /proc/net/tcp6",
         R"([ -n "${PERFGATE_CANDIDATE_PORT:-}" ] || PERFGATE_CANDIDATE_PORT=$(free_port))",
         R"([ -n "${PERFGATE_BASELINE_PORT:-}" ] || PERFGATE_BASELINE_PORT=$(free_port "$PERFGATE_CANDIDATE_PORT"))",
         "export PERFGATE_CANDIDATE_PORT PERFGATE_BASELINE_PORT"})
      EXPECT_NE(script.find(needle), std::string::npos) << needle;
    // Picked before perfgate runs.
    EXPECT_LT(script.find("PERFGATE_CANDIDATE_PORT=$(free_port)"), script.find(" run \""));
  }
  EXPECT_EQ(gitlab["variables"]["PERFGATE_CANDIDATE_PORT"], "");
  EXPECT_EQ(gitlab["variables"]["PERFGATE_BASELINE_PORT"], "");
}

// The template's free_port() function, as written in its script.
std::string free_port_function(const std::string& script) {
  auto start = script.find("free_port() {");
  auto end = script.find("echo \"$p\"", start);
  end = script.find('}', end);
  if (start == std::string::npos || end == std::string::npos) return "";
  return script.substr(start, end + 1 - start);
}

// Both runners run the script with bash -eo pipefail. A port in use (held by a
// listener here) is offered first, then a free one: free_port must skip the
// first, every time. `cat /proc/net/tcp* | grep -q` fails there with SIGPIPE
// when grep finds the port before cat is done, and the loop took that for free.
constexpr const char* kFreePortDriver = R"sh(
python3 -c '
import random, socket, sys, time
s = socket.socket()
while True:
    try:
        s.bind(("127.0.0.1", random.randrange(20000, 32000))); break
    except OSError: pass
s.listen(1)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)' "$DIR/held" &
listener=$!
trap 'kill $listener' EXIT
for _ in $(seq 100); do [ -s "$DIR/held" ] && break; sleep 0.1; done
held=$(cat "$DIR/held")
free=$held
while [ "$free" = "$held" ] || grep -qs "$(printf ':%04X ' "$free")" /proc/net/tcp /proc/net/tcp6; do
  free=$((RANDOM % 12000 + 20000))
done
od() {  # the template's random numbers: the held port first, then the free one
  local n; n=$(cat "$DIR/calls"); echo $((n + 1)) > "$DIR/calls"
  if [ "$n" = 0 ]; then echo $((held - 20000)); else echo $((free - 20000)); fi
}
wrong=0
for _ in $(seq 200); do
  echo 0 > "$DIR/calls"
  [ "$(free_port)" = "$free" ] || wrong=$((wrong + 1))
done
echo "held $held, free $free, wrong $wrong of 200"
)sh";

TEST(CiTemplatesTest, TheFreePortCheckSkipsAPortInUseUnderPipefail) {
  require_pyyaml();
  json gitlab = load_yaml(ci_dir() / "gitlab/perfgate.gitlab-ci.yml")[".perfgate"];
  json action = load_yaml(ci_dir() / "github/action.yml");
  for (const std::string& script :
       {commands_of(gitlab), commands_of(step_named(action, "Run perfgate"))}) {
    std::string function = free_port_function(script);
    ASSERT_FALSE(function.empty()) << script;
    testing::TempDir dir;
    auto result = testing::run_command({"/bin/bash", "--noprofile", "--norc", "-eo", "pipefail",
                                        "-c", function + "\n" + kFreePortDriver},
                                       {{"PATH", "/usr/bin:/bin"}, {"DIR", dir.path().string()}});
    ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_NE(result.out.find(", wrong 0 of 200"), std::string::npos) << function << result.out;
  }
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

// The shards' folder with their count: a shard that wrote nothing is named
// (a glob that matched nothing said only "shard-*.json: cannot read").
bool merges(const std::string& commands) {
  return std::regex_search(
      commands, std::regex(R"(perfgate(_BIN)?\"? merge [a-z-]+ --expect \"\$)", std::regex::icase));
}

// A template's default profile must exist where it is copied to: built in.
void expect_builtin_profile(const std::string& profile) {
  ASSERT_TRUE(profile.starts_with("recipe:")) << profile << " exists only in perfgate's repository";
  EXPECT_TRUE(fs::exists(ci_dir() / "profiles" / (profile.substr(7) + ".json"))) << profile;
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
  EXPECT_NE(load.dump().find("needs.schedule.outputs.start-at"), std::string::npos);
  // A failed shard's result is uploaded too, and the merge runs after it.
  EXPECT_EQ(load["steps"].back()["if"], "always()");
  json merge = workflow["jobs"]["merge"];
  EXPECT_EQ(merge["needs"], json::array({"schedule", "load"}));
  EXPECT_NE(merge["if"].get<std::string>().find("!cancelled()"), std::string::npos);
  std::string merge_run = commands_of(merge);
  EXPECT_TRUE(merges(merge_run)) << merge_run;
  for (const char* needle : {"--store", "--junit", "--json", "--summary", "store prune --policy"})
    EXPECT_NE(merge_run.find(needle), std::string::npos) << needle;
  // perfgate writes the step summary itself, --summary or not.
  EXPECT_EQ(merge_run.find("GITHUB_STEP_SUMMARY"), std::string::npos);
  // One group for every run that loads the shared service, not one per ref: two
  // pull requests' runs would load it at once. Never cancelled in progress, since
  // the run in progress may be another branch's.
  auto group = workflow["concurrency"]["group"].get<std::string>();
  EXPECT_EQ(group.find("github.ref"), std::string::npos) << group;
  EXPECT_EQ(group.find("head_ref"), std::string::npos) << group;
  EXPECT_NE(group.find("vars.PERFGATE_SHARED_SERVICE"), std::string::npos) << group;
  EXPECT_EQ(workflow["concurrency"]["cancel-in-progress"], false);
  expect_builtin_profile(workflow["env"]["PROFILE"]);
  // perfgate's releases, not the copying repository's own.
  EXPECT_EQ(workflow["env"]["PERFGATE_RELEASES"].get<std::string>().find("github.repository"),
            std::string::npos);
}

TEST(CiTemplatesTest, TheShardedGitlabPipelineRunsParallelShardsThenMerges) {
  require_pyyaml();
  json pipeline = load_yaml(ci_dir() / "gitlab/perfgate-sharded.gitlab-ci.yml");
  json load = pipeline["perfgate-load"];
  EXPECT_GE(load["parallel"].get<int>(), 2);
  std::string load_script = commands_of(load);
  EXPECT_EQ(shard_args(load_script), std::vector<std::string>{"$CI_NODE_INDEX/$CI_NODE_TOTAL"});
  EXPECT_NE(load_script.find("--start-at \"$PERFGATE_START_AT\""), std::string::npos);
  EXPECT_EQ(pipeline["perfgate-schedule"]["artifacts"]["reports"]["dotenv"], "schedule.env");
  json merge = pipeline["perfgate-merge"];
  EXPECT_NE(merge["needs"].dump().find("perfgate-load"), std::string::npos);
  EXPECT_TRUE(merges(commands_of(merge))) << commands_of(merge);
  expect_builtin_profile(pipeline[".perfgate-sharded"]["variables"]["PERFGATE_PROFILE"]);
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
    std::string bin_dir = fs::path(testing::perfgate_binary()).parent_path().string();
    std::map<std::string, std::string> env = {
        {"PATH", bin_dir + ":/usr/bin:/bin"},
        {"PROFILE", (dir_ / "profile.json").string()},
        {"STORE", (dir_ / "baselines/perfgate.db").string()},
        {"OUT", (dir_ / "perfgate-out").string()},
        {"GITHUB_ACTIONS", "true"},
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

// perfgate on PATH, as the .deb installs it; the annotations and the step summary
// come from perfgate itself.
TEST_F(CiTemplatesCliTest, TheActionsStepsGateAndPublish) {
  require_pyyaml();
  testing::DemoServerProcess server;
  std::vector<testing::CommandResult> gates;
  for (int run = 0; run < 2; ++run) {  // the second run has a baseline
    gates.push_back(run_step("Run perfgate", server.port()));
    ASSERT_EQ(gates.back().exit_code, 0) << gates.back().out << gates.back().err;  // never fails
  }
  std::string outputs = testing::read_file(dir_ / "github_output");
  EXPECT_TRUE(std::regex_search(outputs, std::regex("exit-code=[012]\n")));
  EXPECT_TRUE(std::regex_search(outputs, std::regex("verdict=(pass|fail|warn)\n"))) << outputs;
  for (const char* file : {"junit.xml", "result.json"})
    EXPECT_TRUE(fs::exists(dir_ / "perfgate-out" / file)) << file;
  EXPECT_NE(testing::read_file(dir_ / "step_summary.md").find("## perfgate ci-template: "),
            std::string::npos);
  // The first run had no baseline: its note is a notice on the run's page.
  EXPECT_NE(gates.front().out.find("::notice title=perfgate ci-template%3A note::no baseline"),
            std::string::npos)
      << gates.front().out;

  auto report = run_step("HTML report of the stored runs", server.port());
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(testing::read_file(dir_ / "perfgate-out/report.html").find("<svg "), std::string::npos);
}

}  // namespace
}  // namespace perfgate
