#pragma once

// What the curl and native engine tests share: a short plan, demo-server dials
// and the totals of a run. Both engines are held to the same checks with them.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "perfgate/load/demo_server.h"
#include "perfgate/load/load_engine.h"

namespace perfgate::testing {

/// Short windows: the tests check counts and relations, never speed.
inline LoadPlan plan_for(const std::string& url) {
  using namespace std::chrono_literals;
  LoadPlan plan;
  plan.target.url = url;
  plan.threads = 2;
  plan.connections = 4;
  plan.warmup = 200ms;
  plan.duration = 300ms;
  plan.iterations = 3;
  plan.discard = 1;
  plan.timeout = 5s;
  return plan;
}

/// Demo server options set by `set`, in one expression.
template <typename Set>
DemoServerOptions dials(Set set) {
  DemoServerOptions options;
  set(options);
  return options;
}

/// Every response of a run, warm-up included.
inline IterationStats everything(const LoadResult& result) {
  IterationStats total = result.warmup;
  for (const auto& it : result.iterations) total.merge(it.stats);
  return total;
}

/// Accepts connections on 127.0.0.1 (a free port) and serves each on a thread
/// of its own with `serve(fd)`, which must return once stopping() is true or
/// the socket is shut down; the socket is closed after it. stop(), also on
/// destruction, wakes them all and waits for them.
class LoopbackListener {
 public:
  explicit LoopbackListener(std::function<void(int)> serve) : serve_(std::move(serve)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len);
    ::listen(listen_fd_, 1024);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~LoopbackListener() { stop(); }
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  uint16_t port() const { return port_; }
  uint64_t accepted() const { return accepted_.load(); }
  bool stopping() const { return stopping_.load(); }

  void stop() {
    if (stopping_.exchange(true)) return;
    acceptor_.join();
    std::unique_lock lock(mutex_);
    for (int fd : open_) ::shutdown(fd, SHUT_RDWR);  // wakes their threads
    idle_.wait(lock, [this] { return open_.empty(); });
    ::close(listen_fd_);
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ++accepted_;
      std::lock_guard lock(mutex_);
      open_.push_back(fd);
      // Detached, so that thousands of short connections leave no threads
      // behind; stop() waits for the ones still serving.
      std::thread([this, fd] { serve_then_close(fd); }).detach();
    }
  }

  void serve_then_close(int fd) {
    serve_(fd);
    std::lock_guard lock(mutex_);
    open_.erase(std::find(open_.begin(), open_.end(), fd));
    ::close(fd);
    if (open_.empty()) idle_.notify_all();  // under the lock: stop() cannot return before
  }

  std::function<void(int)> serve_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> accepted_{0};
  std::mutex mutex_;
  std::condition_variable idle_;
  std::vector<int> open_;  // connections being served
  std::thread acceptor_;
};

/// A loopback HTTP/1.1 server that answers every request (headers only, no
/// body) with the same bytes, written `piece` bytes at a time with `pause`
/// between pieces, so that a response arrives over many reads, and that closes
/// each connection after its response when `close_after`. Counts the
/// connections it accepted and the responses it finished writing.
class ScriptedServer {
 public:
  struct Script {
    std::string response;
    size_t piece = SIZE_MAX;
    std::chrono::microseconds pause{0};
    bool close_after = false;
    // Above 0: a connection's second request is held this long, then the
    // connection closes without an answer (a stall, then a dropped keep-alive).
    std::chrono::milliseconds stall_then_close{0};
  };

  explicit ScriptedServer(Script script) : script_(std::move(script)) {}

  uint16_t port() const { return listener_.port(); }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port()) + path;
  }
  uint64_t connections() const { return listener_.accepted(); }
  uint64_t responses() const { return responses_.load(); }
  /// The head of the last request it read.
  std::string last_request() const {
    std::lock_guard lock(mutex_);
    return last_request_;
  }

 private:
  void serve(int fd) {
    std::string buffer;
    char chunk[4096];
    uint64_t answered = 0;  // on this connection
    for (;;) {
      size_t end = buffer.find("\r\n\r\n");
      if (end == std::string::npos) {
        ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<size_t>(n));
        continue;
      }
      if (answered == 1 && script_.stall_then_close.count() > 0) return stall();
      {
        std::lock_guard lock(mutex_);
        last_request_ = buffer.substr(0, end + 4);
      }
      buffer.erase(0, end + 4);
      if (!answer(fd)) return;
      ++responses_;
      ++answered;
      if (script_.close_after) return;
    }
  }

  void stall() const {
    auto until = std::chrono::steady_clock::now() + script_.stall_then_close;
    while (std::chrono::steady_clock::now() < until && !listener_.stopping())
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  bool answer(int fd) {
    std::string_view rest = script_.response;
    while (!rest.empty() && !listener_.stopping()) {
      ssize_t n = ::send(fd, rest.data(), std::min(rest.size(), script_.piece), MSG_NOSIGNAL);
      if (n <= 0) return false;
      rest.remove_prefix(static_cast<size_t>(n));
      if (!rest.empty() && script_.pause.count() > 0) std::this_thread::sleep_for(script_.pause);
    }
    return rest.empty();
  }

  Script script_;
  std::atomic<uint64_t> responses_{0};
  mutable std::mutex mutex_;
  std::string last_request_;
  LoopbackListener listener_{[this](int fd) { serve(fd); }};  // last: stops first
};

}  // namespace perfgate::testing
