// No output of any command is ever written over the store, its SQLite journals
// or an input, and every output is written whole or not at all. Each command
// that writes a file is tried with that file pointed at the store.
#include <gtest/gtest.h>

#include "perfgate/store/baseline_store.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

class OutputGuardCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = BaselineStore::open(store_);
    for (int n = 1; n <= 2; ++n) store.record(testing::synthetic_run(n, 20000, 2.0));
  }

  // Runs perfgate; the store must come out byte-identical and the command exit 3
  // with one line that names the flag.
  void expect_refused(std::vector<std::string> args, const std::string& flag,
                      const std::map<std::string, std::string>& env = {}) {
    auto before = testing::read_file(store_);
    args.insert(args.begin(), testing::perfgate_binary());
    auto r = testing::run_command(args, env);
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find(flag + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is the store"), std::string::npos) << r.err;
    EXPECT_EQ(testing::read_file(store_), before);
  }

  TempDir dir_;
  fs::path store_ = dir_ / "perfgate.db";
};

TEST_F(OutputGuardCliTest, ReportHtmlOverTheStoreIsRefused) {
  expect_refused({"report", "--html", store_.string(), "--store", store_.string()}, "--html");
}

TEST_F(OutputGuardCliTest, ExportOutputOverTheStoreIsRefused) {
  expect_refused({"export", "--output", store_.string(), "--store", store_.string()}, "--output");
}

TEST_F(OutputGuardCliTest, StoreExportOutputOverTheStoreIsRefused) {
  expect_refused({"store", "export", "--output", store_.string(), "--store", store_.string()},
                 "--output");
}

TEST_F(OutputGuardCliTest, CompareJsonAndJunitOverTheStoreAreRefused) {
  expect_refused({"compare", "2", "--json", store_.string(), "--store", store_.string()}, "--json");
  expect_refused({"compare", "2", "--junit", store_.string(), "--store", store_.string()},
                 "--junit");
}

TEST_F(OutputGuardCliTest, RunJsonOverTheStoreIsRefusedBeforeTheLoad) {
  testing::write_file(dir_ / "p.json", R"({"name": "x", "target": {"url": "http://127.0.0.1:)" +
                                           std::to_string(testing::unused_port()) + R"(/"}})");
  expect_refused(
      {"run", (dir_ / "p.json").string(), "--store", store_.string(), "--json", store_.string()},
      "--json");
  expect_refused({"run", (dir_ / "p.json").string(), "--store", store_.string()},
                 "GITHUB_STEP_SUMMARY",
                 {{"GITHUB_ACTIONS", "true"}, {"GITHUB_STEP_SUMMARY", store_.string()}});
}

TEST_F(OutputGuardCliTest, ExportToAFileWritesItWhole) {
  auto out = dir_ / "sub" / "export.jsonl";
  auto r = testing::run_command({testing::perfgate_binary(), "store", "export", "--output",
                                 out.string(), "--store", store_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto text = testing::read_file(out);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  for (const auto& entry : fs::directory_iterator(dir_ / "sub"))
    EXPECT_EQ(entry.path().filename(), "export.jsonl");  // no temporary left behind
}

// A folder given as the store, in the user's words, not SQLite's.
TEST_F(OutputGuardCliTest, FolderGivenAsTheStoreIsNamedSo) {
  auto r = testing::run_command(
      {testing::perfgate_binary(), "history", "--store", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("is a folder, not a store file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace perfgate
