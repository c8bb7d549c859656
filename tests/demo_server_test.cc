#include "perfgate/load/demo_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "perfgate/core/error.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct RawResponse {
  int status = 0;
  std::string head;
  std::string body;
};

// A bare keep-alive HTTP/1.1 client: writes exactly the bytes it is given and
// reads responses one by one, to see how the server frames them.
class RawClient {
 public:
  explicit RawClient(uint16_t port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    timeval tv{10, 0};  // a broken server fails the test instead of hanging it
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  // The next response framed by its Content-Length; status 0 when none came.
  RawResponse read_response() {
    RawResponse r;
    size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return r;
    r.head = buffer_.substr(0, head_end + 4);
    buffer_.erase(0, head_end + 4);
    auto cl = r.head.find("Content-Length: ");
    size_t length = cl == std::string::npos ? 0 : std::stoul(r.head.substr(cl + 16));
    while (buffer_.size() < length)
      if (!fill()) return r;
    r.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    r.status = std::stoi(r.head.substr(9, 3));
    return r;
  }

  // True when the server closed the connection with nothing more to say.
  bool at_end() { return buffer_.empty() && !fill(); }

 private:
  bool fill() {
    char chunk[65536];
    ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  bool connected_ = false;
  std::string buffer_;
};

std::string get(const std::string& path, const std::string& extra_headers = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n";
}

// Options with some dials set, e.g. dials([](auto& o) { o.error_every = 3; }).
// Every test runs against both ways of serving: a thread per connection and
// one event-loop thread for all (single_thread).
class DemoServerModes : public ::testing::TestWithParam<bool> {
 protected:
  template <typename Set>
  DemoServerOptions dials(Set set) {
    DemoServerOptions options;
    options.single_thread = GetParam();
    set(options);
    return options;
  }
  DemoServerOptions plain() {
    return dials([](DemoServerOptions&) {});
  }
};

INSTANTIATE_TEST_SUITE_P(DemoServer, DemoServerModes, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "SingleThread" : "ThreadPerConnection";
                         });

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

TEST_P(DemoServerModes, AnswersHelloWorldAndCountsIt) {
  DemoServer server(plain());
  ASSERT_NE(server.port(), 0);
  EXPECT_EQ(server.url("/x"), "http://127.0.0.1:" + std::to_string(server.port()) + "/x");
  EXPECT_EQ(testing::http_get(server.port(), "/"), "Hello, world\n");
  EXPECT_EQ(testing::http_get(server.port(), "/health"), "ok");
  EXPECT_EQ(server.requests_served(), 1u);
  EXPECT_EQ(testing::http_get(server.port(), "/__stats"), "{\"requests\": 1}");
  EXPECT_EQ(server.requests_served(), 1u);  // /__stats itself is not counted
}

TEST_P(DemoServerModes, BodyBytesDialSetsTheBodyLength) {
  DemoServer server(dials([](DemoServerOptions& o) { o.body_bytes = 1000; }));
  EXPECT_EQ(testing::http_get(server.port(), "/any/path?q=1"), std::string(1000, 'x'));
}

TEST_P(DemoServerModes, KeepsTheConnectionAliveAcrossRequests) {
  DemoServer server(plain());
  RawClient client(server.port());
  ASSERT_TRUE(client.connected());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(client.send(get("/")));
    auto r = client.read_response();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "Hello, world\n");
    EXPECT_EQ(r.head.find("Connection: close"), std::string::npos);
  }
  EXPECT_EQ(server.requests_served(), 5u);
}

TEST_P(DemoServerModes, AnswersPipelinedRequestsInOrder) {
  DemoServer server(plain());
  RawClient client(server.port());
  // One write holding four requests, one of them with a body to skip.
  ASSERT_TRUE(client.send(get("/") + get("/__stats") +
                          "POST /upload HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world" +
                          get("/health")));
  EXPECT_EQ(client.read_response().body, "Hello, world\n");
  EXPECT_EQ(client.read_response().body, "{\"requests\": 1}");
  EXPECT_EQ(client.read_response().body, "Hello, world\n");
  EXPECT_EQ(client.read_response().body, "ok");
  EXPECT_EQ(server.requests_served(), 2u);
}

TEST_P(DemoServerModes, ReadsBodiesArrivingInPieces) {
  DemoServer server(plain());
  RawClient client(server.port());
  ASSERT_TRUE(client.send("PUT / HTTP/1.1\r\nContent-Length: 10\r\n\r\n12345"));
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(client.send("67890" + get("/health")));
  EXPECT_EQ(client.read_response().status, 200);
  EXPECT_EQ(client.read_response().body, "ok");
}

TEST_P(DemoServerModes, HonoursConnectionClose) {
  DemoServer server(plain());
  RawClient client(server.port());
  ASSERT_TRUE(client.send(get("/", "Connection: close\r\n")));
  auto r = client.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(client.at_end());
}

TEST_P(DemoServerModes, ClosesAfterHttp10RequestsUnlessAskedToKeepAlive) {
  DemoServer server(plain());
  RawClient keep(server.port());
  ASSERT_TRUE(keep.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get("/health")));
  EXPECT_EQ(keep.read_response().status, 200);
  EXPECT_EQ(keep.read_response().body, "ok");
  RawClient once(server.port());
  ASSERT_TRUE(once.send("GET / HTTP/1.0\r\n\r\n"));
  EXPECT_EQ(once.read_response().status, 200);
  EXPECT_TRUE(once.at_end());
}

TEST_P(DemoServerModes, RejectsMalformedRequests) {
  DemoServer server(plain());
  RawClient client(server.port());
  ASSERT_TRUE(client.send("NONSENSE\r\n\r\n"));
  EXPECT_EQ(client.read_response().status, 400);
  EXPECT_TRUE(client.at_end());
  EXPECT_EQ(server.requests_served(), 0u);
}

TEST_P(DemoServerModes, AnswersEveryNthResponseWith500) {
  DemoServer server(dials([](DemoServerOptions& o) { o.error_every = 3; }));
  RawClient client(server.port());
  std::vector<int> statuses;
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE(client.send(get("/")));
    statuses.push_back(client.read_response().status);
  }
  EXPECT_EQ(statuses, (std::vector<int>{200, 200, 500, 200, 200, 500, 200, 200, 500}));
}

TEST_P(DemoServerModes, CountsExactlyAcrossConnections) {
  DemoServer server(dials([](DemoServerOptions& o) { o.error_every = 10; }));
  constexpr int kClients = 4, kEach = 25;
  std::vector<int> errors(kClients, 0);
  {
    std::vector<std::jthread> clients;
    for (int c = 0; c < kClients; ++c)
      clients.emplace_back([&, c] {
        for (int i = 0; i < kEach; ++i)
          if (testing::http_get(server.port(), "/") != "Hello, world\n") ++errors[c];
      });
  }
  EXPECT_EQ(server.requests_served(), uint64_t{kClients * kEach});
  EXPECT_EQ(errors[0] + errors[1] + errors[2] + errors[3], kClients * kEach / 10);
}

TEST_P(DemoServerModes, DelaysEveryNthResponse) {
  DemoServer server(dials([](DemoServerOptions& o) {
    o.delay = 150ms;
    o.delay_every = 2;
  }));
  RawClient client(server.port());
  ASSERT_TRUE(client.send(get("/")));
  ASSERT_EQ(client.read_response().status, 200);
  auto start = Clock::now();
  ASSERT_TRUE(client.send(get("/")));
  ASSERT_EQ(client.read_response().status, 200);
  EXPECT_GE(Clock::now() - start, 150ms);  // a lower bound only: slow hosts pass too
}

TEST_P(DemoServerModes, AddsTheTailDelayOnTopOfTheBaseDelayOnEveryNthResponse) {
  DemoServer server(dials([](DemoServerOptions& o) {
    o.delay = 20ms;
    o.delay_every = 1;
    o.tail_delay = 200ms;
    o.tail_every = 3;
  }));
  RawClient client(server.port());
  std::vector<Clock::duration> took;
  for (int i = 0; i < 6; ++i) {
    auto start = Clock::now();
    ASSERT_TRUE(client.send(get("/")));
    ASSERT_EQ(client.read_response().status, 200);
    took.push_back(Clock::now() - start);
  }
  // Lower bounds only (slow hosts pass too): every response has the base
  // delay, the 3rd and 6th have both delays added.
  for (int i : {0, 1, 3, 4}) EXPECT_GE(took[i], 20ms) << "response " << i + 1;
  for (int i : {2, 5}) EXPECT_GE(took[i], 220ms) << "response " << i + 1;
  // The untailed ones did not wait for the tail: 200 ms is far above a 20 ms delay.
  for (int i : {0, 1, 3, 4}) EXPECT_LT(took[i], 200ms) << "response " << i + 1;
}

TEST_P(DemoServerModes, TailDelayWorksWithoutABaseDelay) {
  DemoServer server(dials([](DemoServerOptions& o) {
    o.tail_delay = 150ms;
    o.tail_every = 2;
  }));
  RawClient client(server.port());
  ASSERT_TRUE(client.send(get("/")));
  ASSERT_EQ(client.read_response().status, 200);
  auto start = Clock::now();
  ASSERT_TRUE(client.send(get("/")));
  ASSERT_EQ(client.read_response().status, 200);
  EXPECT_GE(Clock::now() - start, 150ms);
}

TEST_P(DemoServerModes, BurnsCpuPerCountedResponse) {
  DemoServer server(dials([](DemoServerOptions& o) { o.work = 20ms; }));
  double before = process_cpu_seconds();
  RawClient client(server.port());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(client.send(get("/")));
    ASSERT_EQ(client.read_response().status, 200);
  }
  EXPECT_GE(process_cpu_seconds() - before, 0.1);
}

TEST_P(DemoServerModes, StopJoinsBusyAndIdleConnectionsAndFreesThePort) {
  DemoServer server(dials([](DemoServerOptions& o) {
    o.delay = 30s;
    o.delay_every = 1;
  }));
  RawClient idle(server.port());
  RawClient waiting(server.port());
  ASSERT_TRUE(waiting.send(get("/")));
  while (server.requests_served() == 0) std::this_thread::sleep_for(1ms);  // now in its delay
  auto start = Clock::now();
  server.stop();
  // Generous: stop() takes a tick or two, the delay would take 30 s.
  EXPECT_LT(Clock::now() - start, 10s);
  EXPECT_TRUE(waiting.at_end());
  RawClient late(server.port());
  EXPECT_FALSE(late.connected());
  server.stop();  // again: harmless
}

TEST_P(DemoServerModes, ListensOnLoopbackOnly) {
  EXPECT_THROW(DemoServer(dials([](DemoServerOptions& o) { o.host = "0.0.0.0"; })), Error);
  EXPECT_THROW(DemoServer(dials([](DemoServerOptions& o) { o.host = "localhost"; })), Error);
}

TEST_P(DemoServerModes, ReportsABusyPort) {
  DemoServer first(plain());
  try {
    DemoServer second(dials([&](DemoServerOptions& o) { o.port = first.port(); }));
    FAIL() << "a second server bound the same port";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(first.port())), std::string::npos);
  }
}

size_t threads_of_this_process() {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    n += entry.exists();
  return n;
}

TEST(DemoServerSingleThread, ServesEveryConnectionFromOneThread) {
  size_t before = threads_of_this_process();
  DemoServerOptions options;
  options.single_thread = true;
  options.work = 1ms;
  DemoServer server(options);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 8; ++i) clients.push_back(std::make_unique<RawClient>(server.port()));
  // All eight ask at once; one thread answers them in turn.
  for (auto& c : clients) ASSERT_TRUE(c->send(get("/")));
  for (auto& c : clients) EXPECT_EQ(c->read_response().body, "Hello, world\n");
  EXPECT_EQ(server.requests_served(), 8u);
  // A thread per connection would be 8 more; the event loop is the one.
  EXPECT_EQ(threads_of_this_process(), before + 1);
}

// fork_per_request: each connection is answered by a child of its own, once,
// with "Connection: close", as Python's ForkingHTTPServer answers (the cost
// phase's children). Not in the TSan stage's filter: a fork of a threaded
// process is no race to find there.
TEST(ForkingDemoServer, AnswersOneRequestPerConnectionFromAChildAndCloses) {
  size_t before = threads_of_this_process();
  DemoServerOptions options;
  options.fork_per_request = true;
  DemoServer server(options);
  for (int i = 0; i < 3; ++i) {
    RawClient client(server.port());
    ASSERT_TRUE(client.connected());
    ASSERT_TRUE(client.send(get("/") + get("/")));  // a second request is not answered
    auto first = client.read_response();
    EXPECT_EQ(first.status, 200);
    EXPECT_EQ(first.body, "Hello, world\n");
    EXPECT_NE(first.head.find("Connection: close"), std::string::npos) << first.head;
    EXPECT_EQ(client.read_response().status, 0) << "the connection stayed open";
  }
  // No thread per connection: the acceptor is the one.
  EXPECT_EQ(threads_of_this_process(), before + 1);
  server.stop();
}

}  // namespace
}  // namespace perfgate
