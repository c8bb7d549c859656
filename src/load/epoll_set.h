#pragma once

// The epoll set both load engines sleep on. Header-only, private to the engines.

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <string>

#include "perfgate/core/error.h"
#include "perfgate/core/units.h"

namespace perfgate {

/// Owns an epoll descriptor.
class EpollSet {
 public:
  EpollSet() : fd_(epoll_create1(EPOLL_CLOEXEC)) {
    if (fd_ < 0) throw Error(std::string("cannot create an epoll set: ") + std::strerror(errno));
  }
  ~EpollSet() { ::close(fd_); }
  EpollSet(const EpollSet&) = delete;
  EpollSet& operator=(const EpollSet&) = delete;
  int get() const { return fd_; }

  /// Waits up to `timeout` for events; how many arrived (0 on EINTR). To the
  /// nanosecond where the kernel has epoll_pwait2 (5.11+): the open model's send
  /// times depend on it; else rounded up to the millisecond, since waking early
  /// would only spin.
  int wait(epoll_event* events, int max_events, Nanos timeout) const {
    auto ns = std::max(Nanos::zero(), timeout).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    int n = epoll_pwait2(fd_, events, max_events, &ts, nullptr);
    if (n < 0 && errno == ENOSYS) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(Nanos(ns)).count();
      n = epoll_wait(fd_, events, max_events, static_cast<int>(ms));
    }
    return std::max(n, 0);
  }

 private:
  int fd_;
};

}  // namespace perfgate
