#include "perfgate/host/placement.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

Profile parse(std::string_view text) {
  return parse_profile(text, "p.json", [](std::string_view) { return std::nullopt; });
}

std::string profile_with(const std::string& extra) {
  return R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/"},
             "service": {"command": ["./server"]})" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

PlacementSpec auto_spec() {
  return {};
}

TEST(PlacementTest, AutoOnFourCoresPutsTheLoadOnTheLastAndTheServiceOnTheOthers) {
  auto p = choose_placement(auto_spec(), 1, {0, 1, 2, 3}, true);
  EXPECT_EQ(p.load, (CpuList{3}));
  EXPECT_EQ(p.service, (CpuList{0, 1, 2}));
  EXPECT_EQ(p.describe(), "load 3, service 0-2");
  EXPECT_FALSE(p.pin_watched);
}

TEST(PlacementTest, AutoLeavesTwoOrThreeCoresToTheScheduler) {
  for (const CpuList& allowed : {CpuList{0, 1}, CpuList{0, 1, 2}}) {
    auto p = choose_placement(auto_spec(), 1, allowed, true);
    EXPECT_FALSE(p.pinned()) << format_cpu_list(allowed);
    EXPECT_NE(p.how.find("too few to split"), std::string::npos) << p.how;
  }
}

TEST(PlacementTest, AutoGivesTheLoadAtMostHalfOfTheAllowedCpus) {
  auto p = choose_placement(auto_spec(), 2, {0, 1, 2, 3, 4, 5, 6, 7}, true);
  EXPECT_EQ(p.load, (CpuList{6, 7}));
  EXPECT_EQ(p.service, (CpuList{0, 1, 2, 3, 4, 5}));
  auto many = choose_placement(auto_spec(), 16, {0, 1, 2, 3}, true);
  EXPECT_EQ(many.load, (CpuList{2, 3}));
  EXPECT_EQ(many.service, (CpuList{0, 1}));
}

TEST(PlacementTest, AutoHonoursTheAllowedSetRatherThanTheCoreCount) {
  // A cpuset of cores 2, 5, 6 and 9 (a container's): only those are split.
  auto p = choose_placement(auto_spec(), 1, {2, 5, 6, 9}, true);
  EXPECT_EQ(p.load, (CpuList{9}));
  EXPECT_EQ(p.service, (CpuList{2, 5, 6}));
}

TEST(PlacementTest, AutoPinsNothingOnOneCoreOrForAServiceItDidNotStart) {
  auto one = choose_placement(auto_spec(), 1, {3}, true);
  EXPECT_FALSE(one.pinned());
  EXPECT_EQ(one.describe(), "off");
  EXPECT_NE(one.how.find("nothing to split"), std::string::npos);
  auto watched = choose_placement(auto_spec(), 1, {0, 1, 2, 3}, false);
  EXPECT_FALSE(watched.pinned());
  EXPECT_NE(watched.how.find("does not start the service"), std::string::npos);
}

TEST(PlacementTest, OffPinsNothing) {
  PlacementSpec off;
  off.mode = "off";
  EXPECT_FALSE(choose_placement(off, 1, {0, 1}, true).pinned());
}

TEST(PlacementTest, FixedTakesTheProfilesListsAndPinsAWatchedService) {
  PlacementSpec fixed{"fixed", {1}, {0}};
  auto p = choose_placement(fixed, 1, {0, 1}, false);
  EXPECT_EQ(p.load, (CpuList{1}));
  EXPECT_EQ(p.service, (CpuList{0}));
  EXPECT_TRUE(p.pin_watched);
}

TEST(PlacementTest, FixedRefusesACpuThisProcessMayNotUse) {
  PlacementSpec fixed{"fixed", {3}, {0}};
  try {
    choose_placement(fixed, 1, {0, 1}, true);
    FAIL() << "accepted cpu 3 of 0-1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("placement.load: \"3\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("allowed: 0-1"), std::string::npos) << e.what();
  }
}

TEST(PlacementTest, RecordedInTheFingerprintKeyOnlyWhenPinned) {
  HostFingerprint host;
  host.fields = {{"cpu_model", "x"}, {"cpus", "2"}};
  std::string unpinned = host.key();
  record_placement(host, Placement{});
  EXPECT_EQ(host.key(), unpinned);  // earlier runs keep their series
  HostFingerprint a = host, b = host;
  record_placement(a, choose_placement(PlacementSpec{"fixed", {1}, {0}}, 1, {0, 1}, true));
  record_placement(b, Placement{{0}, {1}, true, ""});
  EXPECT_EQ(a.fields["placement"], "load 1, service 0");
  EXPECT_NE(a.key(), unpinned);
  EXPECT_NE(a.key(), b.key());
}

TEST(PlacementTest, ProfileKeysReadAutoOffAndFixedLists) {
  EXPECT_EQ(parse(profile_with("")).placement.mode, "auto");
  EXPECT_EQ(parse(profile_with(R"("placement": "off")")).placement.mode, "off");
  auto fixed = parse(profile_with(R"("placement": {"load": "2-3", "service": "0,1"})")).placement;
  EXPECT_EQ(fixed.mode, "fixed");
  EXPECT_EQ(fixed.load, (CpuList{2, 3}));
  EXPECT_EQ(fixed.service, (CpuList{0, 1}));
  // The stored profile says what was asked; "auto" stays unwritten, as before.
  auto stored = parse(profile_with(R"("placement": {"load": "2-3", "service": "0,1"})"));
  EXPECT_NE(stored.redacted_json.find(R"("placement":{"load":"2-3","service":"0-1"})"),
            std::string::npos)
      << stored.redacted_json;
  EXPECT_EQ(parse(profile_with("")).redacted_json.find("placement"), std::string::npos);
}

std::string first_problem(const std::string& text) {
  try {
    parse(text);
  } catch (const ProfileError& e) {
    return e.lines().front();
  }
  return "accepted";
}

TEST(PlacementTest, ProfileKeysRejectWhatCannotBePinned) {
  EXPECT_NE(first_problem(profile_with(R"("placement": "on")")).find("must be \"auto\", \"off\""),
            std::string::npos);
  EXPECT_NE(first_problem(profile_with(R"("placement": {"load": "1"})"))
                .find("placement.service: required key is missing"),
            std::string::npos);
  EXPECT_NE(first_problem(profile_with(R"("placement": {"load": "1", "service": "x"})"))
                .find("bad CPU list \"x\""),
            std::string::npos);
  EXPECT_NE(first_problem(profile_with(R"("placement": {"load": "0-1", "service": "1"})"))
                .find("must not share a CPU with load"),
            std::string::npos);
  EXPECT_NE(first_problem(profile_with(R"("placement": {"load": "1", "service": "0", "x": 1})"))
                .find("placement.x"),
            std::string::npos);
}

TEST(PlacementTest, ThreadsStartedInAScopeInheritItsCpusAndTheScopeRestoresThem) {
  CpuList allowed = allowed_cpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs 2 allowed CPUs";
  CpuList before = task_cpus(0);
  CpuList inherited;
  {
    ThreadCpusScope scope({allowed.back()});
    EXPECT_EQ(task_cpus(0), (CpuList{allowed.back()}));
    std::thread([&] { inherited = task_cpus(0); }).join();
  }
  EXPECT_EQ(inherited, (CpuList{allowed.back()}));
  EXPECT_EQ(task_cpus(0), before);
}

TEST(PlacementTest, PinnedTreesPinEveryThreadOfTheTreeAndGiveTheirCpusBack) {
  CpuList allowed = allowed_cpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs 2 allowed CPUs";
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  CpuList before = task_cpus(child);
  {
    PinnedTrees pinned(ProcReader("/"), {child}, {allowed.front()});
    EXPECT_EQ(pinned.threads(), 1u);
    EXPECT_EQ(task_cpus(child), (CpuList{allowed.front()}));
  }
  EXPECT_EQ(task_cpus(child), before);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace perfgate
