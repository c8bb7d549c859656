// ci/k8s/perfgate-shards.yaml run as Kubernetes would run it, minus
// Kubernetes: its shard and merge commands, taken from the manifest, each in a
// process of its own sharing one folder (the volume), the merge started first.
// A watcher reads every shard file the moment it appears: none is ever seen
// empty or half-written. Also: a failed shard is named by the merge, a missing
// one ends the wait with the count, and the manifest passes a schema check.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CommandResult;
using testing::DemoServerProcess;
using testing::TempDir;

constexpr const char* kProfile = R"({
  "name": "k8s-shards",
  "target": { "url": "${PERFGATE_TARGET_URL}" },
  "load": { "threads": 3, "connections": 6, "duration": "300ms", "warmup": "0s" },
  "repeat": { "count": 2, "discard": 0 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" }
})";

constexpr const char* kAllDocs = R"(
import json, sys, yaml
print(json.dumps(list(yaml.safe_load_all(sys.stdin.read()))))
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

using Env = std::map<std::string, std::string>;

// One container of the manifest: its shell command and its environment.
struct Container {
  std::string command;
  Env env;
};

class K8sShardsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto python = testing::run_command({"/usr/bin/python3", "-c", "import yaml"});
    ASSERT_EQ(python.exit_code, 0) << "python3-yaml is missing: apt-get install python3-yaml";
    start_at_ = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count() +
                               3);
    // What the documented `sed "s/@START_AT@/$RUN/g"` does.
    auto manifest =
        replaced(testing::read_file(testing::source_dir() / "ci/k8s/perfgate-shards.yaml"),
                 "@START_AT@", start_at_);
    testing::write_file(dir_ / "manifest.yaml", manifest);
    auto parsed = testing::run_command({"/bin/sh", "-c", "/usr/bin/python3 -c \"$0\" < \"$1\"",
                                        kAllDocs, (dir_ / "manifest.yaml").string()});
    ASSERT_EQ(parsed.exit_code, 0) << parsed.err;
    for (const json& doc : json::parse(parsed.out))
      if (doc["kind"] == "Job")
        (doc["spec"].contains("completionMode") ? shards_job_ : merge_job_) = doc;
    ASSERT_TRUE(shards_job_.is_object());
    ASSERT_TRUE(merge_job_.is_object());
    fs::create_directories(dir_ / "profile");
    fs::create_directories(dir_ / "data");
    testing::write_file(dir_ / "profile" / "profile.json", kProfile);
  }

  // The container's command with the volumes' mount points moved into the test's folder.
  Container container(const json& job) const {
    const json& c = job["spec"]["template"]["spec"]["containers"][0];
    Container out;
    out.command = c["args"][0].get<std::string>();
    out.command = replaced(out.command, "/data/", (dir_ / "data").string() + "/");
    out.command = replaced(out.command, "/profile/", (dir_ / "profile").string() + "/");
    for (const json& e : c["env"])
      out.env[e["name"].get<std::string>()] = e["value"].get<std::string>();
    std::string bin = fs::path(testing::perfgate_binary()).parent_path().string();
    out.env["PATH"] = bin + ":/usr/bin:/bin";
    for (const char* ci : {"GITHUB_ACTIONS", "GITHUB_EVENT_NAME", "GITLAB_CI",
                           "CI_MERGE_REQUEST_IID", "GITHUB_STEP_SUMMARY"})
      out.env[ci] = "";
    return out;
  }

  CommandResult shard(int index, const std::string& target) const {
    auto c = container(shards_job_);
    c.env["JOB_COMPLETION_INDEX"] = std::to_string(index - 1);
    c.env["PERFGATE_TARGET_URL"] = target;
    return testing::run_command({"/bin/sh", "-c", c.command}, c.env, {}, 60);
  }

  CommandResult merge(const std::string& wait = "") const {
    auto c = container(merge_job_);
    if (!wait.empty()) c.command = replaced(c.command, "--wait 30m", "--wait " + wait);
    return testing::run_command({"/bin/sh", "-c", c.command}, c.env, {}, 120);
  }

  fs::path shards_dir() const { return dir_ / "data" / "shards" / start_at_; }
  fs::path out_dir() const { return dir_ / "data" / "out" / start_at_; }

  TempDir dir_;
  DemoServerProcess server_;
  std::string start_at_;
  json shards_job_, merge_job_;
};

TEST_F(K8sShardsCliTest, MergeWaitsForEveryShardFileAndNoneIsSeenIncomplete) {
  std::atomic<bool> done{false};
  int seen_whole = 0;
  std::vector<std::string> incomplete;
  std::thread watcher([&] {
    while (!done) {
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(shards_dir(), ec)) {
        auto name = entry.path().filename().string();
        if (name.front() == '.') continue;  // a temporary: not a shard file
        auto doc = json::parse(testing::read_file(entry.path()), nullptr, false);
        if (doc.is_discarded() || !doc.contains("shard"))
          incomplete.push_back(name);
        else
          ++seen_whole;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  CommandResult merged;
  std::thread merge_job([&] { merged = merge(); });
  std::vector<CommandResult> shards(3);
  std::vector<std::thread> shard_pods;
  for (int i = 1; i <= 3; ++i)
    shard_pods.emplace_back([&, i] { shards[i - 1] = shard(i, server_.url()); });
  for (auto& t : shard_pods) t.join();
  merge_job.join();
  done = true;
  watcher.join();

  for (const auto& s : shards) EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(merged.exit_code, 0) << merged.err << merged.out;
  EXPECT_NE(merged.err.find("waiting for the shards"), std::string::npos) << merged.err;
  EXPECT_TRUE(incomplete.empty()) << incomplete.front();
  EXPECT_GT(seen_whole, 0);
  auto result = json::parse(testing::read_file(out_dir() / "result.json"));
  EXPECT_EQ(result["shards"].size(), 3u) << result;
  EXPECT_EQ(result["verdict"], "pass");
  EXPECT_TRUE(fs::exists(out_dir() / "junit.xml"));
  EXPECT_TRUE(fs::exists(dir_ / "data" / "baselines" / "perfgate.db"));
}

TEST_F(K8sShardsCliTest, AFailedShardIsNamedByTheMerge) {
  CommandResult merged;
  std::thread merge_job([&] { merged = merge(); });
  auto unreachable = "http://127.0.0.1:" + std::to_string(testing::unused_port()) + "/";
  std::vector<CommandResult> shards(3);
  std::vector<std::thread> shard_pods;
  for (int i = 1; i <= 3; ++i)
    shard_pods.emplace_back(
        [&, i] { shards[i - 1] = shard(i, i == 2 ? unreachable : server_.url()); });
  for (auto& t : shard_pods) t.join();
  merge_job.join();
  EXPECT_EQ(shards[1].exit_code, 3);
  EXPECT_EQ(merged.exit_code, 3) << merged.err;
  EXPECT_NE(merged.err.find("shard-2.json: the shard failed"), std::string::npos) << merged.err;
  auto result = json::parse(testing::read_file(out_dir() / "result.json"));
  EXPECT_EQ(result["verdict"], "error");
}

TEST_F(K8sShardsCliTest, AShardThatNeverWritesEndsTheWaitWithTheCount) {
  for (int i : {1, 3}) ASSERT_EQ(shard(i, server_.url()).exit_code, 0);
  auto merged = merge("1s");
  EXPECT_EQ(merged.exit_code, 3);
  EXPECT_NE(merged.err.find("after --wait 1s, 2 of 3 shard files (found: shard-1.json, "
                            "shard-3.json; missing: shard-2.json)"),
            std::string::npos)
      << merged.err;
}

// No kubeconform in Debian or npm: the manifest is checked against a schema
// written from the Kubernetes API reference for the fields it uses (Job,
// PersistentVolumeClaim), every object closed to unknown keys, so that a
// misspelt or misplaced field fails here as kubeconform would fail it.
TEST_F(K8sShardsCliTest, TheManifestPassesItsSchema) {
  constexpr const char* kCheck = R"(
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
bad = 0
for i, doc in enumerate(yaml.safe_load_all(open(sys.argv[2]))):
    for e in jsonschema.Draft7Validator(schema).iter_errors(doc):
        print(f"document {i} ({doc.get('kind')}): {'/'.join(map(str, e.absolute_path))}: {e.message}")
        bad += 1
sys.exit(1 if bad else 0)
)";
  auto schema = testing::source_dir() / "tests/fixtures/k8s/manifest.schema.json";
  auto r = testing::run_command(
      {"/usr/bin/python3", "-c", kCheck, schema.string(), (dir_ / "manifest.yaml").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The check can fail: a field the API does not have is caught.
  testing::write_file(dir_ / "typo.yaml",
                      replaced(testing::read_file(dir_ / "manifest.yaml"),
                               "ttlSecondsAfterFinished", "ttlSecondAfterFinished"));
  auto typo = testing::run_command(
      {"/usr/bin/python3", "-c", kCheck, schema.string(), (dir_ / "typo.yaml").string()});
  EXPECT_EQ(typo.exit_code, 1) << typo.out << typo.err;
  EXPECT_NE(typo.out.find("ttlSecondAfterFinished"), std::string::npos) << typo.out;
}

}  // namespace
}  // namespace perfgate
