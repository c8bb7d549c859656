#pragma once

// Internal to the CLI stage: `perfgate demo-server --burn-while-busy`, a testing
// aid. A load test of this server sees CPU burnt by a process that is not the
// server's (nor perfgate's) while, and only while, the server is loaded: a real
// disturbance of one side of a paired run, every time, with no timing luck.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

namespace perfgate {

/// A detached process (forked twice, in a session of its own, so it is no
/// descendant of this one and no process-tree attribution counts it) whose
/// `threads` spin while told the server is busy and sleep otherwise. It exits
/// when this object goes, or when this process dies: it waits on a pipe that
/// only this process holds open.
class BusyBurner {
 public:
  /// Call before this process starts any thread: it forks.
  explicit BusyBurner(int threads);
  ~BusyBurner();
  BusyBurner(const BusyBurner&) = delete;
  BusyBurner& operator=(const BusyBurner&) = delete;

  /// Burn from now until `length` from now (extending, never shortening).
  void busy_for(std::chrono::nanoseconds length);
  pid_t pid() const;

  struct Shared;  // in a shared mapping, for both processes

 private:
  Shared* shared_ = nullptr;
  int lifeline_ = -1;  // the pipe's write end: closing it ends the burner
};

/// Watches a request counter on its own thread: every response keeps the
/// burner busy for 20 ms more, so it burns through a load window and stops
/// soon after it.
class BusyWatch {
 public:
  BusyWatch(BusyBurner& burner, std::function<uint64_t()> served);

 private:
  std::jthread thread_;
};

}  // namespace perfgate
