#include "perfgate/load/native_engine.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "perfgate/core/error.h"
#include "perfgate/load/curl_engine.h"
#include "perfgate/load/demo_server.h"
#include "support/engine_fixtures.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using testing::dials;
using testing::everything;
using testing::plan_for;

LoadResult run(const LoadPlan& plan) {
  std::atomic<bool> stop{false};
  return NativeEngine().run(plan, stop, nullptr);
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(NativeEngine, CountsWhatTheServerServedAndLabelsEachIteration) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  std::vector<int> reported;
  std::atomic<bool> stop{false};
  auto start = Clock::now();
  LoadResult result =
      NativeEngine().run(plan, stop, [&](const Iteration& it) { reported.push_back(it.index); });
  EXPECT_LT(Clock::now() - start, plan.warmup + plan.duration * plan.iterations + 1s);
  EXPECT_EQ(result.engine, "native");
  EXPECT_EQ(result.threads, 2);
  EXPECT_EQ(result.connections, 4);
  EXPECT_EQ(reported, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(result.iterations.size(), 3u);
  for (const auto& it : result.iterations) {
    EXPECT_EQ(it.discarded, it.index < 1);
    EXPECT_EQ(it.duration, plan.duration);
    EXPECT_GT(it.stats.responses, 0u) << "iteration " << it.index;
    EXPECT_EQ(it.stats.latency.count(), it.stats.responses);
    EXPECT_TRUE(it.stats.latency_uncorrected.empty());  // closed model
    EXPECT_EQ(it.stats.statuses.of_class(2), it.stats.responses);
    EXPECT_EQ(it.stats.errors.total(), 0u);
  }
  IterationStats total = everything(result);
  // The server counts a response before sending it; the engine drops the ones
  // still in flight at the end, at most one per connection, and starts none
  // after the end (a response read then does not send another request).
  uint64_t served = server.requests_served();
  EXPECT_GE(served, total.responses);
  EXPECT_LE(served - total.responses, uint64_t(plan.connections));
  EXPECT_GT(total.bytes_read, total.responses * 13 * 2);  // headers count too
}

TEST(NativeEngine, GivesTheSameKindsOfCountsAsTheCurlEngine) {
  for (bool native : {true, false}) {
    DemoServer server(dials([](DemoServerOptions& o) { o.error_every = 7; }));
    LoadPlan plan = plan_for(server.url());
    std::atomic<bool> stop{false};
    LoadResult result =
        native ? NativeEngine().run(plan, stop, nullptr) : CurlEngine().run(plan, stop, nullptr);
    IterationStats total = everything(result);
    SCOPED_TRACE(result.engine);
    uint64_t served = server.requests_served();
    EXPECT_GE(served, total.responses);
    EXPECT_LE(served - total.responses, uint64_t(plan.connections));
    EXPECT_EQ(total.errors.total(), 0u);
    EXPECT_EQ(total.statuses.of_class(2) + total.statuses.of_class(5), total.responses);
    EXPECT_NEAR(static_cast<double>(total.statuses.of_class(5)),
                static_cast<double>(total.responses) / 7, plan.connections + 1);
    EXPECT_EQ(total.latency.count(), total.responses);
  }
}

TEST(NativeEngine, CountsConnectErrorsWithoutSpinning) {
  LoadPlan plan = plan_for("http://127.0.0.1:" + std::to_string(testing::unused_port()) + "/");
  auto start = Clock::now();
  LoadResult result = run(plan);
  auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  IterationStats total = everything(result);
  EXPECT_EQ(total.responses, 0u);
  EXPECT_GT(total.errors.connect, 0u);
  EXPECT_EQ(total.errors.total(), total.errors.connect);
  EXPECT_LE(total.errors.connect, uint64_t(plan.connections) * (elapsed_ms.count() / 10 + 1));
}

TEST(NativeEngine, SlowResponsesShowInTheTail) {
  DemoServer server(dials([](DemoServerOptions& o) {
    o.delay = 20ms;
    o.delay_every = 50;
  }));
  LoadPlan plan = plan_for(server.url());
  plan.iterations = 2;
  plan.duration = 1s;
  LoadResult result = run(plan);
  LatencyHistogram merged = result.warmup.latency;
  for (const auto& it : result.iterations) merged.merge(it.stats.latency);
  ASSERT_GE(merged.count(), 200u);  // enough for 2 % of delayed responses to be counted
  // The issue asks 2 % of 20 ms; the bound is looser so that a busy machine cannot flake it.
  EXPECT_GE(merged.percentile_ns(99), 19'500'000u);
  EXPECT_LE(merged.percentile_ns(99), 25'000'000u);
  EXPECT_LT(merged.percentile_ns(50), 19'000'000u);
}

TEST(NativeEngine, TimesOutRequestsThatGetNoAnswer) {
  DemoServer server(dials([](DemoServerOptions& o) {
    o.delay = 2s;
    o.delay_every = 1;
  }));
  LoadPlan plan = plan_for(server.url());
  plan.timeout = 100ms;
  plan.iterations = 1;
  plan.discard = 0;
  IterationStats total = everything(run(plan));
  EXPECT_EQ(total.responses, 0u);
  EXPECT_GT(total.errors.timeout, 0u);
  EXPECT_EQ(total.errors.total(), total.errors.timeout);
}

TEST(NativeEngine, ReconnectsWhenTheServerCloses) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  plan.target.headers = {{"Connection", "close"}};  // the demo server then closes each time
  IterationStats total = everything(run(plan));
  ASSERT_GT(total.responses, 10u);
  EXPECT_EQ(total.errors.total(), 0u);
  EXPECT_EQ(total.statuses.of_class(2), total.responses);
  EXPECT_LE(server.requests_served() - total.responses, uint64_t(plan.connections));
}

// A chunked response that arrives a few bytes at a time, over connections kept
// open: each read is parsed where the last one stopped.
TEST(NativeEngine, ParsesResponsesSplitAcrossManyReads) {
  const std::string response =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nHello\r\n8\r\n, world\n\r\n0\r\n\r\n";
  testing::ScriptedServer server({.response = response, .piece = 7, .pause = 200us});
  LoadPlan plan = plan_for(server.url());
  plan.warmup = 0s;
  plan.iterations = 1;
  plan.discard = 0;
  IterationStats total = everything(run(plan));
  ASSERT_GT(total.responses, 10u);
  EXPECT_EQ(total.errors.total(), 0u);
  EXPECT_EQ(total.statuses.of_class(2), total.responses);
  EXPECT_GE(total.bytes_read, total.responses * response.size());
  EXPECT_LT(total.bytes_read, (total.responses + plan.connections) * response.size());
  EXPECT_EQ(server.connections(), uint64_t(plan.connections));
}

TEST(NativeEngine, StreamsHugeBodiesInFlatMemory) {
  constexpr size_t kBody = 20 * 1024 * 1024;
  DemoServer server(dials([](DemoServerOptions& o) { o.body_bytes = kBody; }));
  LoadPlan plan = plan_for(server.url());
  plan.threads = 1;
  plan.connections = 2;
  plan.warmup = 0s;
  plan.duration = 2s;
  plan.iterations = 1;
  plan.discard = 0;
  plan.timeout = 30s;  // sanitizer builds are slow at copying 20 MB
  long before_kib = peak_rss_kib();
  IterationStats total = everything(run(plan));
  ASSERT_GT(total.responses, 0u);
  EXPECT_EQ(total.errors.total(), 0u);
  EXPECT_GE(total.bytes_read, total.responses * kBody);
  // The server keeps its 20 MB body; the client must not buffer one (16 MB
  // of slack for the server's send buffers and sanitizer shadow memory).
  EXPECT_LT(peak_rss_kib() - before_kib, 16 * 1024);
}

TEST(NativeEngine, SendsBodiesAndOtherMethods) {
  DemoServer server({});
  for (std::string method : {"POST", "PUT", "HEAD", "DELETE"}) {
    LoadPlan plan = plan_for(server.url());
    plan.target.method = method;
    plan.target.body = method == "HEAD" ? "" : std::string(5000, 'b');
    plan.target.headers = {{"Content-Type", "text/plain"}, {"X-Empty", ""}};
    plan.warmup = 0s;
    plan.iterations = 1;
    plan.discard = 0;
    IterationStats total = everything(run(plan));
    EXPECT_GT(total.responses, 0u) << method;
    EXPECT_EQ(total.statuses.of_class(2), total.responses) << method;
    EXPECT_EQ(total.errors.total(), 0u) << method;
  }
}

// A body far larger than the socket's send buffer goes out in many writes:
// the engine must wait for the socket to drain, not for the request timeout.
TEST(NativeEngine, SendsBodiesLargerThanTheSocketBuffer) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  plan.target.method = "POST";
  plan.target.body = std::string(32 * 1024 * 1024, 'b');
  plan.threads = 1;
  plan.connections = 1;
  plan.warmup = 0s;
  plan.duration = 2s;
  plan.iterations = 1;
  plan.discard = 0;
  plan.timeout = 10s;  // longer than the run: a stalled write shows as no response
  IterationStats total = everything(run(plan));
  EXPECT_GT(total.responses, 0u);
  EXPECT_EQ(total.errors.total(), 0u);
}

double bytes_per_response(const LoadPlan& plan) {
  IterationStats total = everything(run(plan));
  EXPECT_GT(total.responses, 0u);
  EXPECT_EQ(total.errors.total(), 0u);
  return static_cast<double>(total.bytes_read) / static_cast<double>(total.responses);
}

TEST(NativeEngine, SendsTheWeightedMix) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  plan.iterations = 1;
  TargetSpec get = plan.target;
  TargetSpec head = plan.target;
  head.method = "HEAD";
  head.weight = 3;
  double get_bytes = bytes_per_response(plan);
  plan.target = head;
  double head_bytes = bytes_per_response(plan);
  plan.mix = {get, head};
  double mix_bytes = bytes_per_response(plan);
  // Each connection sends GET, HEAD, HEAD, HEAD in turn: a quarter of GETs.
  EXPECT_NEAR(mix_bytes, (get_bytes + 3 * head_bytes) / 4, (get_bytes - head_bytes) / 10);
}

TEST(NativeEngine, OpenModelSendsAtTheAskedRate) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  plan.rate = 200;
  plan.warmup = 0s;
  plan.duration = 1s;
  plan.iterations = 1;
  plan.discard = 0;
  LoadResult result = run(plan);
  ASSERT_EQ(result.iterations.size(), 1u);
  const Iteration& it = result.iterations[0];
  EXPECT_EQ(it.target_rate, 200);
  // How many were answered in time depends on how fast this machine is (under
  // sanitizers on a busy runner, a tenth of them may be late or unanswered);
  // the schedule's accounting does not: every request due in the second was
  // answered, failed, left in flight or counted as never sent.
  ASSERT_TRUE(result.in_flight_at_end.has_value());
  const uint64_t accounted = it.stats.attempts() + it.stats.never_sent + *result.in_flight_at_end;
  EXPECT_NEAR(static_cast<double>(accounted), 200, plan.connections);
  EXPECT_GT(it.stats.responses, 0u);
  EXPECT_LE(it.stats.late, it.stats.responses);
  EXPECT_EQ(it.stats.latency_uncorrected.count(), it.stats.responses);
  // Without pipelining nothing is sent faster than asked: no more than the schedule.
  EXPECT_LE(server.requests_served(), 200u + plan.connections);
}

TEST(NativeEngine, OpenModelChargesAStallToEveryRequestItDelayed) {
  // 1000/s over 2 connections for 4 s; the server stalls 200 ms after 1 s. The
  // two requests in flight wait 200 ms (0.05 %: below p99.9 uncorrected), but
  // ~200 requests were due during the stall (5 %: far above p99.9 corrected).
  DemoServer server(dials([](DemoServerOptions& o) {
    o.stall_at = 1000;
    o.stall = 200ms;
  }));
  LoadPlan plan = plan_for(server.url());
  plan.threads = 1;
  plan.connections = 2;
  plan.rate = 1000;
  plan.warmup = 0s;
  plan.duration = 4s;
  plan.iterations = 1;
  plan.discard = 0;
  IterationStats total = everything(run(plan));
  ASSERT_GT(total.responses, 3000u);
  EXPECT_GE(total.latency.percentile_ns(99.9), 100'000'000u);
  EXPECT_LT(total.latency_uncorrected.percentile_ns(99.9), 100'000'000u);
  EXPECT_GE(total.latency_uncorrected.max_ns(), 190'000'000u);  // the stall itself is seen
  EXPECT_GT(total.late, 50u);  // the requests due during the stall went out late
}

TEST(NativeEngine, OpenModelCountsWhatTheTargetCouldNotTake) {
  DemoServer server(dials([](DemoServerOptions& o) {
    o.delay = 50ms;
    o.delay_every = 1;
  }));
  LoadPlan plan = plan_for(server.url());
  plan.threads = 1;
  plan.connections = 2;  // at most 40 responses/s
  plan.rate = 400;
  plan.warmup = 0s;
  plan.duration = 1s;
  plan.iterations = 1;
  plan.discard = 0;
  LoadResult result = run(plan);
  ASSERT_EQ(result.iterations.size(), 1u);
  const Iteration& it = result.iterations[0];
  EXPECT_TRUE(it.below_target_rate());
  EXPECT_GT(it.stats.late, 0u);
  EXPECT_GT(it.stats.never_sent, 300u);
  // Sent and never sent together are the schedule (the ones in flight at the end aside).
  uint64_t sent = it.stats.responses + it.stats.errors.total();
  EXPECT_NEAR(static_cast<double>(sent + it.stats.never_sent), 400, plan.connections + 1);
}

TEST(NativeEngine, StopBeforeTheStartMeasuresNothing) {
  DemoServer server({});
  std::atomic<bool> stop{true};
  LoadResult result = NativeEngine().run(plan_for(server.url()), stop, nullptr);
  EXPECT_TRUE(result.iterations.empty());
}

TEST(NativeEngine, RejectsTargetsItCannotServe) {
  std::atomic<bool> stop{false};
  LoadPlan tls = plan_for("https://127.0.0.1:1/");
  EXPECT_THROW(NativeEngine().run(tls, stop, nullptr), Error);
  LoadPlan h2 = plan_for("http://127.0.0.1:1/");
  h2.target.http_version = "2";
  EXPECT_THROW(NativeEngine().run(h2, stop, nullptr), Error);
  LoadPlan two_hosts = plan_for("http://127.0.0.1:1/");
  two_hosts.mix = {two_hosts.target, two_hosts.target};
  two_hosts.mix[1].url = "http://127.0.0.2:1/";
  EXPECT_THROW(NativeEngine().run(two_hosts, stop, nullptr), Error);
  LoadPlan thin = plan_for("http://127.0.0.1:1/");
  thin.connections = 1;
  EXPECT_THROW(NativeEngine().run(thin, stop, nullptr), Error);
}

}  // namespace
}  // namespace perfgate
