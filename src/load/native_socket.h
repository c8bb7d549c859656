#pragma once

// The native engine's socket plumbing: a file descriptor that closes itself
// and the target's address, resolved once per run. Header-only, private to
// native_engine.cc.

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "perfgate/core/error.h"
#include "perfgate/load/http_request.h"
#include "perfgate/load/load_engine.h"

namespace perfgate::native {

/// Owns one file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);  // also leaves the epoll set
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Address {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

// Resolved once per run, before the threads start: no DNS on the hot path.
inline Address resolve(const HttpUrl& url) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &found);
  if (rc != 0) throw Error("cannot resolve " + url.host + ": " + gai_strerror(rc));
  Address out;
  std::memcpy(&out.addr, found->ai_addr, found->ai_addrlen);
  out.len = found->ai_addrlen;
  freeaddrinfo(found);
  return out;
}

}  // namespace perfgate::native
