#include "perfgate/load_engine.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "perfgate/demo_server.h"
#include "perfgate/error.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using namespace std::chrono_literals;

TargetSpec target_at(const std::string& url) {
  TargetSpec target;
  target.url = url;
  return target;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LoadEngine, PlanCopiesTargetLoadAndRepeatFromTheProfile) {
  Profile profile;
  profile.target.url = "http://127.0.0.1:8080/api";
  profile.target.method = "POST";
  profile.target.headers = {{"Authorization", "Bearer t"}};
  profile.target.body = "{}";
  profile.load.threads = 3;
  profile.load.connections = 30;
  profile.load.duration = 7s;
  profile.load.warmup = 1500ms;
  profile.load.rate = 0;
  profile.load.timeout = 2s;
  profile.repeat.count = 6;
  profile.repeat.discard = 1;

  LoadPlan plan = plan_from_profile(profile);
  EXPECT_EQ(plan.target.url, "http://127.0.0.1:8080/api");
  EXPECT_EQ(plan.target.method, "POST");
  EXPECT_EQ(plan.target.headers, profile.target.headers);
  EXPECT_EQ(plan.target.body, "{}");
  EXPECT_EQ(plan.threads, 3);
  EXPECT_EQ(plan.connections, 30);
  EXPECT_EQ(plan.duration, 7s);
  EXPECT_EQ(plan.warmup, 1500ms);
  EXPECT_EQ(plan.rate, 0);
  EXPECT_EQ(plan.timeout, 2s);
  EXPECT_EQ(plan.iterations, 6);
  EXPECT_EQ(plan.discard, 1);
}

TEST(LoadEngine, CurlAndAutoMakeTheCurlEngine) {
  auto target = target_at("http://127.0.0.1:8080/");
  EXPECT_EQ(make_load_engine("curl", target)->name(), "curl");
  EXPECT_EQ(make_load_engine("auto", target)->name(), "curl");
  EXPECT_EQ(make_load_engine("auto", target_at("HTTPS://example.test/"))->name(), "curl");
}

TEST(LoadEngine, OtherKindsAreErrors) {
  auto target = target_at("http://127.0.0.1:8080/");
  EXPECT_EQ(error_of([&] { make_load_engine("native", target); }),
            "the native engine is not built yet; use \"curl\" or \"auto\"");
  EXPECT_NE(error_of([&] { make_load_engine("wrk", target); }).find("\"wrk\""), std::string::npos);
  EXPECT_NE(
      error_of([&] { make_load_engine("auto", target_at("ftp://host/")); }).find("ftp://host/"),
      std::string::npos);
}

TEST(LoadEngine, ProbeThrowsNamingTheUrlOfAClosedPort) {
  std::string url = "http://127.0.0.1:" + std::to_string(testing::unused_port()) + "/";
  EXPECT_EQ(error_of([&] { probe_target(target_at(url), 2s); }),
            "cannot reach " + url + ": Couldn't connect to server");
}

TEST(LoadEngine, ProbeAcceptsAnyHttpStatus) {
  DemoServerOptions failing;
  failing.error_every = 1;
  DemoServer server(failing);
  EXPECT_NO_THROW(probe_target(target_at(server.url()), 5s));
  EXPECT_NO_THROW(probe_target(target_at(server.url("/health")), 5s));
  EXPECT_EQ(server.requests_served(), 1u);
}

TEST(LoadEngine, ProbeGivesUpAfterItsTimeout) {
  DemoServerOptions slow;
  slow.delay = 10s;
  slow.delay_every = 1;
  DemoServer server(slow);
  std::string message = error_of([&] { probe_target(target_at(server.url()), 100ms); });
  EXPECT_EQ(message, "cannot reach " + server.url() + ": Timeout was reached");
}

}  // namespace
}  // namespace perfgate
