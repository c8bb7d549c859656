// What both engines' HTTP/1.1 exchange (http1_worker.h) makes of a server's
// closes and of statuses that are no final answer: the curl and native engines
// are held to the same checks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "perfgate/load/curl_engine.h"
#include "perfgate/load/native_engine.h"
#include "support/engine_fixtures.h"

namespace perfgate {
namespace {

using namespace std::chrono_literals;
using testing::everything;
using testing::ScriptedServer;

constexpr std::string_view kKeepAliveResponse =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, world\n";

class Http1WorkerTest : public ::testing::TestWithParam<const char*> {
 protected:
  LoadResult run(const LoadPlan& plan) {
    std::atomic<bool> stop{false};
    if (std::string(GetParam()) == "curl") return CurlEngine().run(plan, stop, nullptr);
    return NativeEngine().run(plan, stop, nullptr);
  }
  static LoadPlan short_plan(const std::string& url) {
    LoadPlan plan = testing::plan_for(url);
    plan.warmup = 0s;
    plan.iterations = 1;
    plan.discard = 0;
    return plan;
  }
};

// A server that closes after each complete response, without saying
// Connection: close, closes under the next request before a byte of its answer.
// That is a reconnect, not a failed request.
TEST_P(Http1WorkerTest, CloseAfterACompleteResponseIsAReconnectNotAnError) {
  ScriptedServer server({.response = std::string(kKeepAliveResponse), .close_after = true});
  for (double rate : {0.0, 400.0}) {  // closed, then open model
    SCOPED_TRACE(rate > 0 ? "open model" : "closed model");
    LoadPlan plan = short_plan(server.url());
    plan.rate = rate;
    IterationStats total = everything(run(plan));
    ASSERT_GT(total.responses, 10u);
    EXPECT_EQ(total.errors.total(), 0u);
    EXPECT_EQ(total.statuses.of_class(2), total.responses);
    EXPECT_EQ(total.error_rate_pct(), 0.0);
  }
  EXPECT_GT(server.connections(), 10u);  // one per response: each close was followed
}

// A fresh connection closed before any answer is still a failed request: only
// a connection that already served one is retried.
TEST_P(Http1WorkerTest, CloseBeforeAnyAnswerIsStillAReadError) {
  ScriptedServer server({.response = "", .close_after = true});
  IterationStats total = everything(run(short_plan(server.url())));
  EXPECT_EQ(total.responses, 0u);
  EXPECT_GT(total.errors.read, 0u);
}

// A 101 (or any 1xx) as the final answer is no HTTP response to the
// request: a failure, never a success.
TEST_P(Http1WorkerTest, A101AsTheFinalAnswerIsAFailedRequest) {
  ScriptedServer server(
      {.response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n",
       .close_after = true});
  IterationStats total = everything(run(short_plan(server.url())));
  ASSERT_GT(total.responses, 0u);
  EXPECT_EQ(total.statuses.of_class(1), total.responses);
  EXPECT_EQ(total.statuses.failed(), total.responses);
  EXPECT_EQ(total.error_rate_pct(), 100.0);
}

// Row 12: a status the request lists in success_statuses is a success, on
// both engines, judged by the one shared SuccessStatuses.
TEST_P(Http1WorkerTest, Row12_AStatusListedAsSuccessIsNoError) {
  ScriptedServer server({.response = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"});
  LoadPlan plan = short_plan(server.url());
  IterationStats unlisted = everything(run(plan));
  ASSERT_GT(unlisted.responses, 0u);
  EXPECT_EQ(unlisted.error_rate_pct(), 100.0);
  plan.target.success_statuses.ranges = {{200, 299}, {404, 404}};
  IterationStats listed = everything(run(plan));
  ASSERT_GT(listed.responses, 0u);
  EXPECT_EQ(listed.statuses.of_class(4), listed.responses);
  EXPECT_EQ(listed.statuses.failed(), 0u);
  EXPECT_EQ(listed.error_rate_pct(), 0.0);
}

// Issue 41, item 1: a server that holds a kept-alive connection's next request,
// then closes it. The request resent on a new connection is the same request:
// the time already waited is in its latency, not dropped as a reconnect's.
TEST_P(Http1WorkerTest, AStallThenACloseKeepsTheRequestsStartTime) {
  constexpr auto kStall = 150ms;
  ScriptedServer server({.response = std::string(kKeepAliveResponse), .stall_then_close = kStall});
  for (double rate : {0.0, 50.0}) {  // closed, then open model
    SCOPED_TRACE(rate > 0 ? "open model" : "closed model");
    LoadPlan plan = short_plan(server.url());
    plan.threads = 1;
    plan.connections = 1;
    plan.duration = 600ms;
    plan.rate = rate;
    IterationStats total = everything(run(plan));
    ASSERT_GT(total.responses, 1u);
    EXPECT_EQ(total.errors.total(), 0u);  // a stale reconnect, still no error
    EXPECT_GE(total.latency.max_ns(), static_cast<uint64_t>(Nanos(kStall).count()));
    if (rate > 0) {
      EXPECT_GE(total.latency_uncorrected.max_ns(), static_cast<uint64_t>(Nanos(kStall).count()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, Http1WorkerTest, ::testing::Values("native", "curl"));

}  // namespace
}  // namespace perfgate
