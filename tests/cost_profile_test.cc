// The profile's `cost` section: off by default, tight default limits when on,
// and one clear line for each wrong value.
#include <gtest/gtest.h>

#include "perfgate/profile/profile.h"

namespace perfgate {
namespace {

EnvLookup no_env() {
  return [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
}

// A profile whose service perfgate starts (what a count needs), with `cost`.
Profile parse(const std::string& cost) {
  std::string text =
      R"({ "name": "c", "target": { "url": "http://127.0.0.1:8080/" }, "service": { "command": ["./server"] })" +
      (cost.empty() ? "" : ", \"cost\": " + cost) + "}";
  return parse_profile(text, "p.json", no_env());
}

std::string problem(const std::string& cost) {
  try {
    parse(cost);
  } catch (const ProfileError& e) {
    return e.lines().empty() ? "" : e.lines().front();
  }
  return "accepted";
}

TEST(CostProfileTest, OffByDefault) {
  auto p = parse("");
  EXPECT_FALSE(p.cost.enabled());
  EXPECT_FALSE(p.thresholds.contains("instructions_per_request"));
}

TEST(CostProfileTest, OnWithTightDefaultLimits) {
  auto p = parse(R"("callgrind")");
  EXPECT_EQ(p.cost.instrument, "callgrind");
  EXPECT_EQ(p.cost.requests, 1000);
  EXPECT_EQ(p.cost.connections, 1);
  EXPECT_EQ(p.cost.launches, 2);
  const auto& t = p.thresholds.at("instructions_per_request");
  EXPECT_EQ(t.warn_pct, 1);
  EXPECT_EQ(t.fail_pct, 2);
  // The request count is chosen from the pace (at most 1000), unless pinned.
  EXPECT_TRUE(p.cost.requests_auto);
  EXPECT_EQ(p.cost.count_time, std::chrono::seconds(5));
  auto chosen = parse(R"({ "requests": "auto", "count_time": "20s" })");
  EXPECT_TRUE(chosen.cost.requests_auto);
  EXPECT_EQ(chosen.cost.count_time, std::chrono::seconds(20));
  auto object = parse(R"({ "requests": 300, "launches": 3, "cache_sim": true, "required": true })");
  EXPECT_EQ(object.cost.instrument, "callgrind");
  EXPECT_EQ(object.cost.requests, 300);
  EXPECT_FALSE(object.cost.requests_auto);
  EXPECT_EQ(object.cost.launches, 3);
  EXPECT_TRUE(object.cost.cache_sim);
  EXPECT_TRUE(object.cost.required);
  // Launches added while a paired count is undecided: 6 a side within 90 s,
  // never fewer than cost.launches.
  EXPECT_EQ(p.cost.max_launches, 6);
  EXPECT_EQ(p.cost.budget, std::chrono::seconds(90));
  auto many = parse(R"({ "launches": 8 })");
  EXPECT_EQ(many.cost.max_launches, 8);
  auto own = parse(R"({ "max_launches": 10, "budget": "2m" })");
  EXPECT_EQ(own.cost.max_launches, 10);
  EXPECT_EQ(own.cost.budget, std::chrono::minutes(2));
}

// Issue 50 item 14: a count that must run cannot run on a watched service:
// said by the profile, before any load.
TEST(CostProfileTest, ARequiredCountNeedsAServicePerfgateStarts) {
  try {
    parse_profile(R"({ "name": "c", "target": { "url": "http://127.0.0.1:8080/" },
                       "service": { "pid_file": "/run/app.pid" },
                       "cost": { "required": true } })",
                  "p.json", no_env());
    FAIL() << "accepted";
  } catch (const ProfileError& e) {
    ASSERT_FALSE(e.lines().empty());
    EXPECT_NE(e.lines().front().find("cost: required: true needs a service perfgate starts"),
              std::string::npos)
        << e.lines().front();
  }
}

TEST(CostProfileTest, TheProfilesOwnLimitsWin) {
  std::string text = R"({ "name": "c", "target": { "url": "http://127.0.0.1:8080/" },
    "cost": "auto",
    "thresholds": { "instructions_per_request": { "warn": "0.5%", "fail": "1%" } } })";
  auto p = parse_profile(text, "p.json", no_env());
  EXPECT_EQ(p.thresholds.at("instructions_per_request").fail_pct, 1);
}

// The counts have their own key: a cost phase does not start a new series of
// the timed figures.
TEST(CostProfileTest, CostIsNotInTheProfileHash) {
  EXPECT_EQ(parse("").hash, parse(R"("callgrind")").hash);
}

TEST(CostProfileTest, WrongValuesAreOneLineEach) {
  EXPECT_NE(problem(R"("valgrind")").find("cost: must be \"off\", \"callgrind\""),
            std::string::npos)
      << problem(R"("valgrind")");
  EXPECT_EQ(problem(R"({ "launches": 1 })"),
            "p.json:1: cost.launches: must be an integer from 2 to 50, got 1");
  EXPECT_NE(problem(R"({ "requests": 0 })").find("cost.requests"), std::string::npos);
  EXPECT_EQ(problem(R"({ "requests": "many" })"),
            "p.json:1: cost.requests: must be \"auto\" or a positive integer, got \"many\"");
  EXPECT_NE(problem(R"({ "count_time": "0s" })").find("cost.count_time"), std::string::npos);
  EXPECT_NE(problem(R"({ "launches": 4, "max_launches": 3 })")
                .find("cost.max_launches: must be at least cost.launches (4), got 3"),
            std::string::npos)
      << problem(R"({ "launches": 4, "max_launches": 3 })");
  EXPECT_NE(problem(R"({ "budget": "0s" })").find("cost.budget"), std::string::npos);
  EXPECT_NE(problem(R"({ "cache_sim": "yes" })").find("must be true or false"), std::string::npos);
  EXPECT_NE(problem(R"({ "instrumnt": "perf" })").find("did you mean"), std::string::npos)
      << problem(R"({ "instrumnt": "perf" })");
  EXPECT_NE(problem("42").find("must be"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
