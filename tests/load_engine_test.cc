#include "perfgate/load/load_engine.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "perfgate/core/error.h"
#include "perfgate/load/demo_server.h"
#include "perfgate/load/http_request.h"
#include "perfgate/load/run_windows.h"
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

TEST(LoadEngine, PlanCopiesTheMixAndTheConnectTimeout) {
  Profile profile;
  profile.target.url = "http://127.0.0.1:8080/";
  TargetSpec a = profile.target;
  a.name = "a";
  a.weight = 3;
  TargetSpec b = profile.target;
  b.name = "b";
  profile.requests = {a, b};
  profile.load.connect_timeout = 750ms;
  LoadPlan plan = plan_from_profile(profile);
  ASSERT_EQ(plan.mix.size(), 2u);
  EXPECT_EQ(plan.mix[0].name, "a");
  EXPECT_EQ(plan.mix[0].weight, 3);
  EXPECT_EQ(plan.connect_timeout, 750ms);
  EXPECT_EQ(requests_of(plan).size(), 2u);
  plan.mix.clear();
  ASSERT_EQ(requests_of(plan).size(), 1u);
  EXPECT_EQ(requests_of(plan)[0].url, profile.target.url);
}

TEST(LoadEngine, AutoPicksNativeForPlainHttp11AndCurlOtherwise) {
  auto target = target_at("http://127.0.0.1:8080/");
  EXPECT_EQ(make_load_engine("curl", target)->name(), "curl");
  EXPECT_EQ(make_load_engine("native", target)->name(), "native");
  EXPECT_EQ(make_load_engine("auto", target)->name(), "native");
  EXPECT_EQ(make_load_engine("auto", target_at("HTTP://Example.test:81/x"))->name(), "native");
  EXPECT_EQ(make_load_engine("auto", target_at("HTTPS://example.test/"))->name(), "curl");
  target.http_version = "2";
  EXPECT_EQ(make_load_engine("auto", target)->name(), "curl");
}

LoadPlan mix_of(const std::vector<std::string>& urls) {
  LoadPlan plan;
  plan.target = target_at(urls.front());
  for (const auto& url : urls) plan.mix.push_back(target_at(url));
  return plan;
}

TEST(LoadEngine, AutoLooksAtEveryRequestOfTheMix) {
  auto one_host = mix_of({"http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b?q=1"});
  EXPECT_EQ(make_load_engine("auto", one_host)->name(), "native");
  auto with_tls = mix_of({"http://127.0.0.1:8080/", "https://127.0.0.1:8443/"});
  EXPECT_EQ(make_load_engine("auto", with_tls)->name(), "curl");
  auto two_ports = mix_of({"http://127.0.0.1:8080/", "http://127.0.0.1:8081/"});
  EXPECT_EQ(make_load_engine("auto", two_ports)->name(), "curl");
  auto two_hosts = mix_of({"http://a.test/", "http://B.test/"});
  EXPECT_EQ(make_load_engine("auto", two_hosts)->name(), "curl");
  EXPECT_EQ(make_load_engine("curl", two_hosts)->name(), "curl");
  EXPECT_NE(error_of([&] { make_load_engine("native", two_hosts); }).find("one host per run"),
            std::string::npos);
  auto h2 = one_host;
  h2.mix.back().http_version = "2";
  EXPECT_EQ(make_load_engine("auto", h2)->name(), "curl");
  EXPECT_NE(error_of([&] {
              make_load_engine("auto", mix_of({"http://h/", "ftp://h/"}));
            }).find("ftp://h/"),
            std::string::npos);
}

TEST(LoadEngine, OtherKindsAreErrors) {
  auto target = target_at("http://127.0.0.1:8080/");
  EXPECT_NE(error_of([&] {
              make_load_engine("native", target_at("https://h/"));
            }).find("the native engine speaks plain http:// HTTP/1.1 only"),
            std::string::npos);
  target.http_version = "2";
  EXPECT_NE(error_of([&] { make_load_engine("native", target); }).find("over HTTP/2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { make_load_engine("wrk", target); }).find("\"wrk\""), std::string::npos);
  EXPECT_NE(
      error_of([&] { make_load_engine("auto", target_at("ftp://host/")); }).find("ftp://host/"),
      std::string::npos);
}

TEST(LoadEngine, ProbeThrowsNamingTheUrlOfAClosedPort) {
  std::string url = "http://127.0.0.1:" + std::to_string(testing::unused_port()) + "/";
  EXPECT_EQ(error_of([&] { probe_target(target_at(url), 2s); }),
            "cannot reach " + url + ": nothing accepts connections there (no server listening?)");
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

TEST(LoadEngine, ParsesPlainHttpUrls) {
  HttpUrl url = parse_http_url("HTTP://Example.test:8080/a/b?x=1#frag");
  EXPECT_EQ(url.host, "Example.test");
  EXPECT_EQ(url.port, 8080);
  EXPECT_EQ(url.host_header, "Example.test:8080");
  EXPECT_EQ(url.path_query, "/a/b?x=1");
  EXPECT_EQ(parse_http_url("http://h").path_query, "/");
  EXPECT_EQ(parse_http_url("http://h?q").path_query, "/?q");
  EXPECT_EQ(parse_http_url("http://h").port, 80);
  HttpUrl v6 = parse_http_url("http://[::1]:9000/");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 9000);
  EXPECT_THROW(parse_http_url("https://h/"), Error);
  EXPECT_THROW(parse_http_url("http://h:0/"), Error);
  EXPECT_THROW(parse_http_url("http://h:99999/"), Error);
  EXPECT_THROW(parse_http_url("http:///path"), Error);
}

TEST(LoadEngine, SerializesARequestOnce) {
  TargetSpec target = target_at("http://h:81/p?q");
  EXPECT_EQ(serialize_request(target, parse_http_url(target.url)),
            "GET /p?q HTTP/1.1\r\nHost: h:81\r\n\r\n");
  target.method = "POST";
  target.headers = {{"Content-Type", "text/plain"}};
  target.body = "hello";
  EXPECT_EQ(serialize_request(target, parse_http_url(target.url)),
            "POST /p?q HTTP/1.1\r\nHost: h:81\r\nContent-Type: text/plain\r\n"
            "Content-Length: 5\r\n\r\nhello");
}

TEST(LoadEngine, WeightedRoundRobinIsSmoothAndExact) {
  TargetSpec a, b, c;
  a.weight = 5;
  b.weight = 1;
  c.weight = 1;
  WeightedRoundRobin rr({a, b, c});
  std::vector<size_t> picks;
  for (int i = 0; i < 14; ++i) picks.push_back(rr.next());
  // nginx's sequence for {5, 1, 1}: a a b a c a a, then again.
  EXPECT_EQ(picks, (std::vector<size_t>{0, 0, 1, 0, 2, 0, 0, 0, 0, 1, 0, 2, 0, 0}));
  TargetSpec zero;
  zero.weight = 0;
  EXPECT_THROW(WeightedRoundRobin({a, zero}), Error);
}

TEST(LoadEngine, HugeWeightsShareTheMixInsteadOfOverflowing) {
  // [1e308, 1e308] once summed to infinity: every request went to the first.
  TargetSpec a, b;
  a.weight = 1e308;
  b.weight = 1e308;
  WeightedRoundRobin rr({a, b});
  std::vector<size_t> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(rr.next());
  EXPECT_EQ(picks, (std::vector<size_t>{0, 1, 0, 1, 0, 1}));
  TargetSpec endless;
  endless.weight = std::numeric_limits<double>::infinity();
  EXPECT_THROW(WeightedRoundRobin({a, endless}), Error);
}

// A load thread as the engines' workers are, reduced to what run_load_threads
// looks at: it closes the warm-up, then either runs until told to stop or runs
// out of memory.
class FakeLoadThread {
 public:
  explicit FakeLoadThread(bool throws) : throws_(throws) {}
  void run(std::chrono::steady_clock::time_point, const std::atomic<bool>& stop,
           const std::atomic<bool>& abort) {
    closed_ = 1;
    if (throws_) throw std::bad_alloc();
    // Bounded, like every load loop: a run that never stops it fails the test.
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!stop && !abort && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    saw_abort_ = abort.load();
    finished_ = true;
  }
  int closed_slots() const { return closed_; }
  bool finished() const { return finished_; }
  const IterationStats& slot(int) const { return stats_; }
  bool saw_abort() const { return saw_abort_; }

 private:
  bool throws_;
  std::atomic<int> closed_{0};
  std::atomic<bool> finished_{false};
  std::atomic<bool> saw_abort_{false};
  IterationStats stats_;
};

TEST(LoadEngine, AThreadThatRunsOutOfMemoryStopsTheOthersAndTheCallerGetsItsError) {
  std::vector<std::unique_ptr<FakeLoadThread>> workers;
  workers.push_back(std::make_unique<FakeLoadThread>(false));
  workers.push_back(std::make_unique<FakeLoadThread>(true));
  LoadPlan plan;
  plan.threads = 2;
  plan.connections = 2;
  plan.iterations = 3;
  std::atomic<bool> stop{false};
  int reported = 0;
  // Before, the exception left its thread and std::terminate ended perfgate
  // with "terminate called after throwing an instance of 'std::bad_alloc'".
  EXPECT_THROW(run_load_threads(workers, plan, "fake", stop, [&](const Iteration&) { ++reported; }),
               std::bad_alloc);
  EXPECT_TRUE(workers[0]->saw_abort());
  EXPECT_TRUE(workers[0]->finished());
  EXPECT_EQ(reported, 0);
}

}  // namespace
}  // namespace perfgate
