#include "perfgate/load/native_engine.h"

#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "epoll_set.h"
#include "http1_worker.h"
#include "native_socket.h"
#include "perfgate/core/error.h"
#include "perfgate/load/fd_limit.h"
#include "perfgate/load/http_request.h"

namespace perfgate {
namespace {

using native::Address;
using native::Fd;
using native::resolve;

/// Non-blocking sockets to one address, resolved once per run.
class PlainSockets {
 public:
  struct Link {
    Fd fd;
  };

  PlainSockets(EpollSet& epoll, const Address& address) : epoll_(epoll), address_(address) {}

  void adopt(Link&, void*) {}

  ErrorKind open(Link& link, void* owner) {
    link.fd = Fd(::socket(address_.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!link.fd) return &ErrorCounts::other;  // out of files: rest, retry
    int one = 1;
    setsockopt(link.fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto* addr = reinterpret_cast<const sockaddr*>(&address_.addr);
    if (::connect(link.fd.get(), addr, address_.len) != 0 && errno != EINPROGRESS)
      return &ErrorCounts::connect;
    set_interest(link, owner, EPOLLOUT, EPOLL_CTL_ADD);
    return nullptr;
  }

  Dial connect_result(Link& link, void* owner) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(link.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return {Dial::failed, &ErrorCounts::connect};
    set_interest(link, owner, EPOLLIN, EPOLL_CTL_MOD);
    return {Dial::connected};
  }

  template <class OnConnected>
  void progress(std::chrono::steady_clock::time_point, OnConnected&&) {}
  std::optional<std::chrono::steady_clock::time_point> due() const { return std::nullopt; }
  void* owner_of(const epoll_event& ev) const { return ev.data.ptr; }

  void want_write(Link& link, void* owner, bool on) {
    set_interest(link, owner, on ? EPOLLIN | EPOLLOUT : EPOLLIN, EPOLL_CTL_MOD);
  }

  Io send(Link& link, std::string_view bytes) {
    ssize_t n = ::send(link.fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n >= 0) return {Io::done, static_cast<size_t>(n)};
    return {errno == EAGAIN || errno == EWOULDBLOCK ? Io::again : Io::failed};
  }

  Io recv(Link& link, char* buffer, size_t size) {
    ssize_t n = ::recv(link.fd.get(), buffer, size, 0);
    if (n > 0) return {Io::done, static_cast<size_t>(n)};
    if (n == 0) return {Io::closed};
    return {errno == EAGAIN || errno == EWOULDBLOCK ? Io::again : Io::failed};
  }

  bool short_read_drains() const { return true; }
  void close(Link& link) { link.fd.reset(); }  // also leaves the epoll set
  bool is_open(const Link& link) const { return static_cast<bool>(link.fd); }

 private:
  void set_interest(Link& link, void* owner, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = owner;
    epoll_ctl(epoll_.get(), op, link.fd.get(), &ev);
  }

  EpollSet& epoll_;
  const Address& address_;
};

}  // namespace

LoadResult NativeEngine::run(const LoadPlan& plan, const std::atomic<bool>& stop,
                             const IterationCallback& on_iteration) {
  check_plan(plan);
  ensure_fd_limit(plan.connections);
  std::vector<TargetSpec> requests = requests_of(plan);
  std::string refusal = native_engine_refusal(requests);
  if (!refusal.empty()) throw Error(refusal + "; use load.engine \"curl\"");
  std::vector<HttpUrl> urls;
  for (const auto& r : requests) urls.push_back(parse_http_url(r.url));
  const Address address = resolve(urls.front());  // one host per run, as wrk
  const Http1Plan shared = make_http1_plan(plan, urls);
  return run_http1<PlainSockets>(
      shared, plan, "native", stop, on_iteration,
      [&address](EpollSet& epoll) { return PlainSockets(epoll, address); });
}

}  // namespace perfgate
