#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "perfgate/core/units.h"

namespace perfgate {

/// Dials of the demo service: the embedded target of the README's demo and of
/// the integration tests (slow tails, errors, CPU cost per request).
struct DemoServerOptions {
  std::string host = "127.0.0.1";  // loopback only, by design
  uint16_t port = 0;               // 0 = any free port
  Nanos delay{0};                  // added to every `delay_every`-th response
  uint64_t delay_every = 0;        // 0 = never; 1 = every response
  uint64_t error_every = 0;        // every N-th response is an error; 0 = never
  int error_status = 500;          // its status: 404 for a wrong path, 502 for a dead backend
  Nanos work{0};                   // CPU burned per response (busy loop)
  /// A fixed amount of work per response: this many rounds of an integer loop.
  /// Unlike `work` (a time spin) its instruction count is the same on every
  /// machine and launch, so a test can plant an exact +2 % regression.
  uint64_t work_rounds = 0;
  size_t body_bytes = 13;  // "Hello, world\n" when 13
  /// The `stall_at`-th response (0 = never) stalls the whole server for
  /// `stall`: it and every response on any connection waits until it ends,
  /// like a GC pause or a full-table lock.
  uint64_t stall_at = 0;
  Nanos stall{0};
  /// A second delay, on top of `delay`, on every `tail_every`-th response
  /// (0 = never): a slow tail, e.g. +20 ms on every 50th response (2 %).
  Nanos tail_delay{0};
  uint64_t tail_every = 0;
  /// Every connection served by one thread from one epoll set, as a Node.js
  /// or Redis-like service: one busy thread whatever the connections, so the
  /// scheduler places exactly one service thread beside the load (issue 27's
  /// case). Delays and stalls then hold up every connection, as they would there.
  bool single_thread = false;
  /// Every connection served by a process forked for it, which answers one
  /// request, closes the connection and exits, as Python's ForkingHTTPServer
  /// does: a service whose work is done in short-lived children (the cost
  /// phase counts them). /__stats then counts nothing (each child's count is
  /// its own).
  bool fork_per_request = false;
  /// A service still warming up (a JIT, cold caches): every response in the
  /// first `cold_for` after the server starts waits `cold_delay` more.
  Nanos cold_for{0};
  Nanos cold_delay{0};
};

/// A small HTTP/1.1 keep-alive server on loopback, one thread per connection
/// (or one thread for all: `single_thread`; a process per request: `fork_per_request`).
/// GET /__stats answers {"requests": N} (itself not counted); /health answers 200.
/// Stops and joins its threads on destruction.
class DemoServer {
 public:
  explicit DemoServer(const DemoServerOptions& options);
  ~DemoServer();
  DemoServer(const DemoServer&) = delete;
  DemoServer& operator=(const DemoServer&) = delete;

  uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/") const;
  /// Responses sent, /__stats excluded.
  uint64_t requests_served() const { return served_->load(); }
  void stop();

 private:
  struct Shared;
  DemoServerOptions options_;
  uint16_t port_ = 0;
  std::shared_ptr<std::atomic<uint64_t>> served_;
  std::shared_ptr<Shared> shared_;
  std::thread acceptor_;
};

}  // namespace perfgate
