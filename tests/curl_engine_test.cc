#include "perfgate/curl_engine.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "perfgate/demo_server.h"
#include "perfgate/error.h"
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
  return CurlEngine().run(plan, stop, nullptr);
}

TEST(CurlEngine, SplitsConnectionsOverThreads) {
  EXPECT_EQ(split_connections(50, 3), (std::vector<int>{17, 17, 16}));
  EXPECT_EQ(split_connections(4, 4), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(split_connections(7, 1), (std::vector<int>{7}));
}

TEST(CurlEngine, MapsMomentsToWindows) {
  RunWindows w{1s, 2s, 3};
  EXPECT_EQ(w.slots(), 4);
  EXPECT_EQ(w.end(), 7s);
  EXPECT_EQ(w.slot_of(-1ms), 0);
  EXPECT_EQ(w.slot_of(0s), 0);
  EXPECT_EQ(w.slot_of(999ms), 0);
  EXPECT_EQ(w.slot_of(1s), 1);
  EXPECT_EQ(w.slot_of(2999ms), 1);
  EXPECT_EQ(w.slot_of(3s), 2);
  EXPECT_EQ(w.slot_of(6999ms), 3);
  EXPECT_EQ(w.slot_of(7s), 4);  // past the end: not counted
  EXPECT_EQ(w.slot_of(1h), 4);
  EXPECT_EQ((RunWindows{0s, 1s, 2}.slot_of(0s)), 1);  // no warm-up
}

TEST(CurlEngine, CountsTransferErrorsByKind) {
  ErrorCounts e;
  for (CURLcode code :
       {CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY})
    count_transfer_error(code, e);
  count_transfer_error(CURLE_OPERATION_TIMEDOUT, e);
  for (CURLcode code :
       {CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_WEIRD_SERVER_REPLY})
    count_transfer_error(code, e);
  count_transfer_error(CURLE_SEND_ERROR, e);
  count_transfer_error(CURLE_URL_MALFORMAT, e);
  count_transfer_error(CURLE_SSL_CONNECT_ERROR, e);
  EXPECT_EQ(e, (ErrorCounts{.connect = 3, .read = 4, .write = 1, .timeout = 1, .other = 2}));
}

TEST(CurlEngine, CountsWhatTheServerServedAndLabelsEachIteration) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  std::vector<int> reported;
  std::atomic<bool> stop{false};
  auto start = Clock::now();
  LoadResult result =
      CurlEngine().run(plan, stop, [&](const Iteration& it) { reported.push_back(it.index); });
  auto elapsed = Clock::now() - start;

  EXPECT_LT(elapsed, plan.warmup + plan.duration * plan.iterations + 1s);
  EXPECT_EQ(result.engine, "curl");
  EXPECT_EQ(result.threads, 2);
  EXPECT_EQ(result.connections, 4);
  EXPECT_EQ(reported, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(result.iterations.size(), 3u);
  for (const auto& it : result.iterations) {
    EXPECT_EQ(it.discarded, it.index < 1);
    EXPECT_EQ(it.duration, plan.duration);
    EXPECT_GT(it.stats.responses, 0u) << "iteration " << it.index;
    EXPECT_EQ(it.stats.latency.count(), it.stats.responses);
    EXPECT_EQ(it.stats.statuses.of_class(2), it.stats.responses);
    EXPECT_EQ(it.stats.errors.total(), 0u);
  }
  IterationStats total = everything(result);
  // The server counts a response before sending it; the engine drops the ones
  // still in flight at the end: at most one per connection.
  uint64_t served = server.requests_served();
  EXPECT_GE(served, total.responses);
  EXPECT_LE(served - total.responses, uint64_t(plan.connections));
  // Headers and bodies: the body alone is 13 bytes, the status line more.
  EXPECT_GT(total.bytes_read, total.responses * 13 * 2);
}

// More connections than one multi handle holds (the engine spreads a thread's
// connections over several): every one sends, none is lost or counted twice.
TEST(CurlEngine, KeepsManyConnectionsBusy) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  plan.threads = 1;
  plan.connections = 40;
  plan.iterations = 1;
  plan.discard = 0;
  LoadResult result = run(plan);
  IterationStats total = everything(result);
  ASSERT_GT(total.responses, uint64_t(plan.connections));
  EXPECT_EQ(total.errors.total(), 0u);
  EXPECT_EQ(total.statuses.of_class(2), total.responses);
  uint64_t served = server.requests_served();
  EXPECT_GE(served, total.responses);
  EXPECT_LE(served - total.responses, uint64_t(plan.connections));
  // The status line and headers count, not only the 13-byte bodies.
  EXPECT_GT(total.bytes_read, total.responses * 13 * 2);
}

TEST(CurlEngine, CountsRequestsPastTheTimeoutAsTimeouts) {
  DemoServer server(dials([](DemoServerOptions& o) {
    o.delay = 300ms;
    o.delay_every = 1;
  }));
  LoadPlan plan = plan_for(server.url());
  plan.threads = 1;
  plan.connections = 2;
  plan.timeout = 50ms;
  plan.warmup = 0s;
  plan.duration = 400ms;
  plan.iterations = 1;
  plan.discard = 0;
  IterationStats total = everything(run(plan));
  EXPECT_EQ(total.responses, 0u);
  EXPECT_GT(total.errors.timeout, 0u);
  EXPECT_EQ(total.errors.total(), total.errors.timeout);
}

TEST(CurlEngine, ReportsEachIterationAsItEnds) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  std::vector<Iteration> reported;
  std::atomic<bool> stop{false};
  LoadResult result =
      CurlEngine().run(plan, stop, [&](const Iteration& it) { reported.push_back(it); });
  ASSERT_EQ(reported.size(), result.iterations.size());
  for (size_t i = 0; i < reported.size(); ++i) {
    EXPECT_EQ(reported[i].stats.responses, result.iterations[i].stats.responses);
    EXPECT_EQ(reported[i].stats.latency, result.iterations[i].stats.latency);
  }
}

TEST(CurlEngine, CountsConnectErrorsWithoutSpinning) {
  LoadPlan plan = plan_for("http://127.0.0.1:" + std::to_string(testing::unused_port()) + "/");
  auto start = Clock::now();
  LoadResult result = run(plan);
  auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  IterationStats total = everything(result);
  EXPECT_EQ(total.responses, 0u);
  EXPECT_GT(total.errors.connect, 0u);
  EXPECT_EQ(total.errors.total(), total.errors.connect);
  // Each connection rests 10 ms after a refusal: a bound, not a speed.
  EXPECT_LE(total.errors.connect, uint64_t(plan.connections) * (elapsed_ms.count() / 10 + 1));
}

TEST(CurlEngine, CountsServerErrorsAsStatusesNotSocketErrors) {
  DemoServer server(dials([](DemoServerOptions& o) { o.error_every = 10; }));
  LoadPlan plan = plan_for(server.url());
  IterationStats total = everything(run(plan));
  ASSERT_GT(total.responses, 0u);
  EXPECT_EQ(total.errors.total(), 0u);
  EXPECT_EQ(total.statuses.of_class(5) + total.statuses.of_class(2), total.responses);
  // Every 10th response the server sent; the engine missed at most one per connection.
  double expected = static_cast<double>(total.responses) / 10;
  EXPECT_NEAR(static_cast<double>(total.statuses.of_class(5)), expected, plan.connections + 1);
}

TEST(CurlEngine, SlowResponsesShowInTheTail) {
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
  EXPECT_GE(merged.percentile_ns(99), 19'000'000u);
  EXPECT_LT(merged.percentile_ns(50), 19'000'000u);  // the median request was not delayed
  EXPECT_GE(merged.max_ns(), 20'000'000u);
}

TEST(CurlEngine, StopEndsTheRunWithTheIterationsCompletedSoFar) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  plan.iterations = 50;  // 15 s if it were not stopped
  std::atomic<bool> stop{false};
  auto start = Clock::now();
  LoadResult result = CurlEngine().run(plan, stop, [&](const Iteration&) { stop = true; });
  EXPECT_LT(Clock::now() - start, plan.warmup + plan.duration * plan.iterations);
  ASSERT_GE(result.iterations.size(), 1u);
  EXPECT_LT(result.iterations.size(), 50u);
  for (const auto& it : result.iterations) EXPECT_GT(it.stats.responses, 0u);
}

TEST(CurlEngine, StopBeforeTheStartMeasuresNothing) {
  DemoServer server({});
  std::atomic<bool> stop{true};
  LoadResult result = CurlEngine().run(plan_for(server.url()), stop, nullptr);
  EXPECT_TRUE(result.iterations.empty());
}

TEST(CurlEngine, StreamsHugeBodies) {
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
  IterationStats total = everything(run(plan));
  ASSERT_GT(total.responses, 0u);
  EXPECT_EQ(total.errors.total(), 0u);
  EXPECT_GE(total.bytes_read, total.responses * kBody);
}

TEST(CurlEngine, SendsBodiesAndOtherMethods) {
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
    // A server reading the wrong body length would desynchronise and answer
    // 400s; a HEAD read as a GET would wait for a body until the timeout.
    EXPECT_GT(total.responses, 0u) << method;
    EXPECT_EQ(total.statuses.of_class(2), total.responses) << method;
    EXPECT_EQ(total.errors.total(), 0u) << method;
  }
}

TEST(CurlEngine, RejectsPlansItCannotRun) {
  std::atomic<bool> stop{false};
  LoadPlan thin = plan_for("http://127.0.0.1:1/");
  thin.connections = 1;
  EXPECT_THROW(CurlEngine().run(thin, stop, nullptr), Error);
}

TEST(CurlEngine, OpenModelSendsAtTheAskedRate) {
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
  EXPECT_NEAR(static_cast<double>(it.stats.responses), 200, 20);
  EXPECT_FALSE(it.below_target_rate());
  EXPECT_EQ(it.stats.latency_uncorrected.count(), it.stats.responses);
  EXPECT_EQ(it.stats.never_sent, 0u);
  EXPECT_LE(server.requests_served(), 200u + plan.connections);
}

TEST(CurlEngine, OpenModelChargesAStallToEveryRequestItDelayed) {
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
  EXPECT_GT(total.late, 50u);
}

TEST(CurlEngine, SendsTheWeightedMix) {
  DemoServer server({});
  LoadPlan plan = plan_for(server.url());
  TargetSpec get = plan.target;
  TargetSpec post = plan.target;
  post.method = "POST";
  post.body = "x";
  post.weight = 2;
  TargetSpec head = plan.target;
  head.method = "HEAD";
  plan.mix = {get, post, head};
  IterationStats total = everything(run(plan));
  ASSERT_GT(total.responses, 10u);
  EXPECT_EQ(total.errors.total(), 0u);
  EXPECT_EQ(total.statuses.of_class(2), total.responses);
}

TEST(CurlEngine, ProbeNamesTheUnreachableUrl) {
  TargetSpec target;
  target.url = "http://127.0.0.1:" + std::to_string(testing::unused_port()) + "/";
  try {
    curl_probe(target, 2s);
    FAIL() << "no error for a closed port";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot reach " + target.url + ": Couldn't connect to server");
  }
}

}  // namespace
}  // namespace perfgate
