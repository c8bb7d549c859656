// The `paired` section of a profile: what it accepts,
// what it refuses with one line each, and the baseline side it describes.
#include <netdb.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <map>

#include "perfgate/profile/profile.h"
#include "perfgate/store/shard.h"

namespace perfgate {
namespace {

using Vars = std::map<std::string, std::string>;

Profile parse(const std::string& text, Vars vars = {}) {
  EnvLookup env = [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  return parse_profile(text, "p.json", env);
}

// A paired profile: `paired` and `extra` spliced into a valid one.
std::string paired_profile(const std::string& paired, const std::string& extra = "") {
  return R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/api?x=1"},
             "repeat": {"count": 9, "discard": 2}, "paired": )" +
         paired + (extra.empty() ? "" : ", " + extra) + "}";
}

std::vector<std::string> problems_of(const std::string& text) {
  try {
    parse(text);
  } catch (const ProfileError& e) {
    return e.lines();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

// The one problem of a profile, which must mention every one of `words`.
void expect_one_problem(const std::string& text, std::initializer_list<std::string> words) {
  auto lines = problems_of(text);
  ASSERT_EQ(lines.size(), 1u) << ::testing::PrintToString(lines);
  for (const auto& word : words) EXPECT_NE(lines[0].find(word), std::string::npos) << lines[0];
}

TEST(PairedProfileTest, ReadsTheBaselineBuildAndItsService) {
  auto p = parse(paired_profile(R"({
      "baseline": {"origin": "http://127.0.0.1:${BASE_PORT}/", "commit": "abc123",
                   "service": {"command": ["./old-server", "--port", "${BASE_PORT}"]}},
      "leg_warmup": "100ms"})"),
                 {{"BASE_PORT", "8081"}});
  ASSERT_TRUE(p.paired);
  EXPECT_EQ(p.paired->origin, "http://127.0.0.1:8081");  // the trailing slash is no path
  EXPECT_EQ(p.paired->commit, "abc123");
  EXPECT_EQ(p.paired->leg_warmup, std::chrono::milliseconds(100));
  ASSERT_TRUE(p.paired->service);
  EXPECT_EQ(p.paired->service->command.back(), "8081");
  // Its service is ready when the target's path answers at the baseline's origin.
  EXPECT_EQ(p.paired->service->ready_url, "http://127.0.0.1:8081/api?x=1");
}

// A commit label from the environment past what the store keeps is one line,
// not a run whose export no longer imports (issue 50).
TEST(PairedProfileTest, ACommitPastOneKibIsRefused) {
  std::string text = paired_profile(
      R"({"baseline": {"origin": "http://127.0.0.1:8081", "commit": "${BASE_COMMIT}"}})");
  try {
    parse(text, {{"BASE_COMMIT", std::string(5000, 'a')}});
    ADD_FAILURE() << "a 5000-byte commit was accepted";
  } catch (const ProfileError& e) {
    ASSERT_EQ(e.lines().size(), 1u);
    EXPECT_NE(e.lines()[0].find("paired.baseline.commit: must be at most 1024 bytes (a commit "
                                "id), got 5000"),
              std::string::npos)
        << e.lines()[0];
  }
  EXPECT_EQ(parse(text, {{"BASE_COMMIT", std::string(40, 'f')}}).paired->commit.size(), 40u);
}

TEST(PairedProfileTest, DefaultsAndNoServiceOfItsOwn) {
  auto p = parse(paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081"}})"));
  ASSERT_TRUE(p.paired);
  EXPECT_EQ(p.paired->leg_warmup, std::chrono::milliseconds(250));
  EXPECT_FALSE(p.paired->service);
  EXPECT_EQ(p.paired->commit, "");
  EXPECT_FALSE(parse(R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/"}})").paired);
}

TEST(PairedProfileTest, BaselineSideSendsEveryRequestToTheBaselineOrigin) {
  auto p = parse(paired_profile(
      R"({"baseline": {"origin": "http://127.0.0.1:8081", "service": {"command": ["old"]}}})",
      R"("service": {"command": ["new"]})"));
  p.requests = {p.target, p.target};
  p.requests[1].url = "http://127.0.0.1:8080/other/path#frag";
  Profile side = paired_baseline_side(p);
  EXPECT_EQ(side.target.url, "http://127.0.0.1:8081/api?x=1");
  EXPECT_EQ(side.requests[0].url, "http://127.0.0.1:8081/api?x=1");
  EXPECT_EQ(side.requests[1].url, "http://127.0.0.1:8081/other/path#frag");
  ASSERT_TRUE(side.service);
  EXPECT_EQ(side.service->command, std::vector<std::string>{"old"});
  EXPECT_FALSE(side.paired);
  // What changes results is the same on both sides: both are stored under one hash.
  EXPECT_EQ(side.hash, p.hash);
  EXPECT_EQ(side.load.connections, p.load.connections);
  Profile plain = parse(R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/"}})");
  EXPECT_THROW(paired_baseline_side(plain), Error);
}

TEST(PairedProfileTest, MixOnTheTargetsOriginIsAccepted) {
  auto p = parse(R"({"name": "t", "repeat": {"count": 9, "discard": 2},
      "target": {"url": "http://127.0.0.1:8080/", "requests": [{"path": "/a"}, {"path": "/b"}]},
      "paired": {"baseline": {"origin": "http://127.0.0.1:8081"}}})");
  Profile side = paired_baseline_side(p);
  ASSERT_EQ(side.requests.size(), 2u);
  EXPECT_EQ(side.requests[1].url, "http://127.0.0.1:8081/b");
}

TEST(PairedProfileTest, RefusesWhatCannotBePaired) {
  expect_one_problem(paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081/v1"}})"),
                     {"paired.baseline.origin", "no path"});
  expect_one_problem(paired_profile(R"({"baseline": {"origin": "https://127.0.0.1:8081"}})"),
                     {"paired.baseline.origin", "the target's scheme (http://)"});
  expect_one_problem(paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8080"}})"),
                     {"paired.baseline.origin", "the target's own origin"});
  // Issue 41, item 4: another loopback address, the same port: one server
  // listening on every local address answers both (the guard compared strings).
  // Issue 50 item 2: compared by where they lead, not by their spelling.
  std::vector<std::string> spellings = {
      "http://127.0.0.2:8080",  "http://localhost:8080",          "http://[::1]:8080",
      "http://2130706433:8080", "http://LOCALHOST:8080",          "http://0:8080",
      "http://0x7f000001:8080", "http://[::ffff:127.0.0.1]:8080", "http://localhost.:8080"};
  // This host's own name, where it resolves (a container may not know it).
  char own_name[256] = {};
  addrinfo* own = nullptr;
  if (::gethostname(own_name, sizeof own_name - 1) == 0 &&
      ::getaddrinfo(own_name, nullptr, nullptr, &own) == 0) {
    spellings.push_back("http://" + std::string(own_name) + ":8080");
    ::freeaddrinfo(own);
  }
  for (const std::string& same : spellings) {
    SCOPED_TRACE(same);
    expect_one_problem(paired_profile(R"({"baseline": {"origin": ")" + same + R"("}})"),
                       {"paired.baseline.origin",
                        "the target's port on another address of the "
                        "same machine"});
  }
  expect_one_problem(paired_profile(R"({"baseline": {"origin": "ftp://x"}})"),
                     {"paired.baseline.origin", "ftp"});
  expect_one_problem(paired_profile(R"({"baseline": {}})"), {"paired.baseline.origin", "required"});
  expect_one_problem(paired_profile(R"({"leg_warmup": "1s"})"), {"paired.baseline", "required"});
  expect_one_problem(
      paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081", "port": 1}})"),
      {"paired.baseline.port"});
  expect_one_problem(
      paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081"}, "leg_warmup": "-1s"})"),
      {"paired.leg_warmup"});
  expect_one_problem(paired_profile(R"("http://127.0.0.1:8081")"), {"paired", "object"});
  // A request of the mix on another host cannot be sent to "the other build".
  expect_one_problem(R"({"name": "t", "repeat": {"count": 9, "discard": 2},
      "target": {"url": "http://127.0.0.1:8080/", "requests": [{"url": "http://10.0.0.1:80/"}]},
      "paired": {"baseline": {"origin": "http://127.0.0.1:8081"}}})",
                     {"paired.baseline.origin", "every request", "10.0.0.1"});
}

TEST(PairedProfileTest, RefusesTooFewPairsToEverFail) {
  // One tested metric: 5 kept pairs all one way give p = 2/32 = 0.0625, never
  // below 0.05.
  std::string five = R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/"},
      "repeat": {"count": 6, "discard": 1},
      "thresholds": {"throughput": {"warn": "3%", "fail": "5%"}},
      "paired": {"baseline": {"origin": "http://127.0.0.1:8081"}}})";
  expect_one_problem(five, {"paired", "at least 6 kept pairs", "95%", "got 5"});
  std::string six = five;
  six.replace(six.find("\"count\": 6"), 10, "\"count\": 7");
  EXPECT_NO_THROW(parse(six));
  // At 99 % it takes 8: 2/256 < 0.01 but 2/128 is not.
  std::string strict = six;
  strict.replace(strict.find("\"repeat\""), 0, R"("baseline": {"confidence": "99%"}, )");
  expect_one_problem(strict, {"at least 8 kept pairs", "99%"});
}

// The default limits test three metrics, which share the 95 % budget: each is
// judged at 98.33 %, which 6 pairs cannot reach (2/64 > 1/60) and 7 can.
TEST(PairedProfileTest, TheTestedMetricsShareTheLevelThePairsMustReach) {
  std::string six = R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/"},
      "repeat": {"count": 7, "discard": 1},
      "paired": {"baseline": {"origin": "http://127.0.0.1:8081"}}})";
  expect_one_problem(
      six, {"at least 7 kept pairs", "shared by 3 tested metrics", "98.33% each", "got 6"});
  std::string seven = six;
  seven.replace(seven.find("\"count\": 7"), 10, "\"count\": 8");
  EXPECT_NO_THROW(parse(seven));
  // A sequential run whose first look cannot fail is fine when a later one can:
  // that look extends (the spending boundary's early looks are strict).
  std::string looks = seven;
  looks.replace(looks.find("\"discard\": 1"), 12, "\"discard\": 1, \"max_count\": 18");
  EXPECT_NO_THROW(parse(looks));
  // One where no look can: 3 pairs up to 5, at 98.33 % or stricter.
  std::string never = six;
  never.replace(never.find("\"count\": 7, \"discard\": 1"), 24,
                "\"count\": 3, \"discard\": 0, \"max_count\": 5");
  expect_one_problem(never, {"at least 7 kept pairs", "spent over 2 looks and 3 tested metrics",
                             "got 5 at its last look"});
}

// paired.block: how many pairs share one launch of both services.
TEST(PairedProfileTest, BlockIsOnePairPerLaunchUnlessSet) {
  EXPECT_EQ(
      parse(paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081"}})")).paired->block,
      1);
  // 9 pairs in blocks of 3 are 3 launches: enough for one metric at 50 %...
  std::string one_metric_at_50 =
      R"("baseline": {"confidence": "50%"}, "thresholds": {"throughput": {"fail": "5%"}})";
  auto p = parse(paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081"}, "block": 3})",
                                one_metric_at_50));
  EXPECT_EQ(p.paired->block, 3);
  // ...but the default limits at 95 % need 7 launches.
  expect_one_problem(
      paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081"}, "block": 3})"),
      {"at least 7 kept blocks of 3 pairs (paired.block)", "got 3"});
  EXPECT_NE(p.hash, parse(paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081"}})",
                                         one_metric_at_50))
                        .hash);
  expect_one_problem(
      paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081"}, "block": 0})"),
      {"paired.block"});
}

TEST(PairedProfileTest, PairingIsAnotherTestButThePortIsNot) {
  auto hash = [](const std::string& paired, Vars vars = {}) {
    return parse(paired_profile(paired), std::move(vars)).hash;
  };
  std::string plain = parse(R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/api?x=1"},
                               "repeat": {"count": 9, "discard": 2}})")
                          .hash;
  std::string templated = R"({"baseline": {"origin": "http://127.0.0.1:${P}"}})";
  EXPECT_NE(hash(templated, {{"P", "8081"}}), plain);
  EXPECT_EQ(hash(templated, {{"P", "8081"}}), hash(templated, {{"P", "9999"}}));
  EXPECT_NE(hash(R"({"baseline": {"origin": "http://127.0.0.1:8081"}, "leg_warmup": "1s"})"),
            hash(R"({"baseline": {"origin": "http://127.0.0.1:8081"}})"));
  // The baseline's commit label is not part of the test.
  EXPECT_EQ(hash(R"({"baseline": {"origin": "http://127.0.0.1:8081", "commit": "a"}})"),
            hash(R"({"baseline": {"origin": "http://127.0.0.1:8081", "commit": "b"}})"));
}

TEST(PairedProfileTest, StoredProfileParsesBackToTheSamePairing) {
  auto p = parse(paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081",
      "commit": "abc", "service": {"command": ["old"], "env": {"API_TOKEN": "s3cret"}}}})"));
  EXPECT_EQ(p.redacted_json.find("s3cret"), std::string::npos) << p.redacted_json;
  auto again = parse(p.redacted_json);
  ASSERT_TRUE(again.paired);
  EXPECT_EQ(again.paired->origin, p.paired->origin);
  EXPECT_EQ(again.paired->commit, "abc");
  EXPECT_EQ(again.paired->leg_warmup, p.paired->leg_warmup);
  EXPECT_EQ(again.hash, p.hash);
}

TEST(PairedProfileTest, ScheduleIsAlternateUnlessDuetIsAsked) {
  const std::string origin = R"("baseline": {"origin": "http://127.0.0.1:8081"})";
  auto plain = parse(paired_profile("{" + origin + "}"));
  EXPECT_EQ(plain.paired->schedule, "alternate");
  // Absent from the stored profile and the hash when default: earlier runs read the same.
  EXPECT_EQ(plain.redacted_json.find("schedule"), std::string::npos) << plain.redacted_json;
  EXPECT_EQ(parse(paired_profile("{" + origin + R"(, "schedule": "alternate"})")).hash, plain.hash);

  auto duet = parse(paired_profile("{" + origin + R"(, "schedule": "duet"})"));
  EXPECT_EQ(duet.paired->schedule, "duet");
  // Both sides loaded at once each measure slower than alone: another test.
  EXPECT_NE(duet.hash, plain.hash);
  auto again = parse(duet.redacted_json);
  EXPECT_EQ(again.paired->schedule, "duet");
  EXPECT_EQ(again.hash, duet.hash);

  expect_one_problem(paired_profile("{" + origin + R"(, "schedule": "together"})"),
                     {"paired.schedule", "\"alternate\" or \"duet\"", "together"});
}

TEST(PairedProfileTest, APairedRunCannotBeSharded) {
  auto p = parse(paired_profile(R"({"baseline": {"origin": "http://127.0.0.1:8081"}})"));
  try {
    shard_profile(p, parse_shard_spec("1/2"));
    FAIL() << "sharded a paired profile";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be sharded"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace perfgate
