#include "perfgate/load/demo_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <list>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "epoll_set.h"
#include "perfgate/core/error.h"

namespace perfgate {
namespace {

using std::chrono::milliseconds;

// How often a blocked thread looks at the stop flag: stop() is this prompt.
constexpr milliseconds kTick{50};
// Requests whose head grows past this are refused rather than buffered.
constexpr size_t kMaxHeadBytes = 64 * 1024;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

std::string errno_text() {
  return std::generic_category().message(errno);
}

// One accepted connection. The thread shuts the socket down when it is done
// (so the client sees the end at once) but only the joiner closes it: a number
// closed early could be reused by a new connection while stop() shuts it down.
struct Client {
  Fd fd;
  std::thread thread;
  std::atomic<bool> done{false};
};

// The server's state; DemoServer::Shared is this type, defined here so that the
// file's free functions can use it.
struct ServerState {
  ServerState(const DemoServerOptions& opts, std::shared_ptr<std::atomic<uint64_t>> counter)
      : options(opts),
        body(opts.body_bytes == 13 ? "Hello, world\n" : std::string(opts.body_bytes, 'x')),
        served(std::move(counter)) {}

  const DemoServerOptions options;
  const std::string body;  // of counted responses, built once
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // One counter for the whole server: the N-th response is exact across
  // connections for the dials (the server is not what is being measured).
  std::shared_ptr<std::atomic<uint64_t>> served;
  std::atomic<bool> stopping{false};
  // When the stall started by `stall_at` ends, steady-clock ns; 0 = none.
  mutable std::atomic<int64_t> stall_until_ns{0};
  Fd listener;
  std::mutex mutex;
  std::list<Client> clients;    // guarded by mutex
  std::vector<pid_t> children;  // fork_per_request: the acceptor's alone
};

struct Request {
  std::string method;
  std::string path;  // without the query
  size_t content_length = 0;
  bool close = false;  // the client asked for it, or speaks HTTP/1.0
};

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](unsigned char x, unsigned char y) {
    return std::tolower(x) == std::tolower(y);
  });
}

bool contains_token(std::string_view value, std::string_view token) {
  for (size_t i = 0; i + token.size() <= value.size(); ++i)
    if (iequals(value.substr(i, token.size()), token)) return true;
  return false;
}

// Applies one "Name: value" line; false when the request cannot be served.
bool apply_header(std::string_view line, Request& request) {
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  auto name = line.substr(0, colon);
  auto value = line.substr(colon + 1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (iequals(name, "Content-Length")) {
    if (value.empty() ||
        !std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); }))
      return false;
    request.content_length = std::stoull(std::string(value));
  } else if (iequals(name, "Connection")) {
    request.close = contains_token(value, "close");
  } else if (iequals(name, "Transfer-Encoding")) {
    return false;  // chunked request bodies are beyond a demo
  }
  return true;
}

// Parses the request line and the headers (`head` excludes the blank line).
std::optional<Request> parse_head(std::string_view head) {
  auto eol = head.find("\r\n");
  auto line = head.substr(0, eol);
  auto sp1 = line.find(' ');
  auto sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 <= sp1) return std::nullopt;
  Request request;
  request.method = line.substr(0, sp1);
  auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  request.path = target.substr(0, target.find('?'));
  request.close = line.substr(sp2 + 1) == "HTTP/1.0";
  while (eol != std::string_view::npos) {
    head.remove_prefix(eol + 2);
    eol = head.find("\r\n");
    if (!apply_header(head.substr(0, eol), request)) return std::nullopt;
  }
  return request;
}

// Appends what the socket has; false on end, error or stop.
bool read_more(int fd, std::string& buffer, size_t limit, const ServerState& s) {
  char chunk[16384];
  for (;;) {
    if (s.stopping.load()) return false;
    ssize_t n = ::recv(fd, chunk, std::min(sizeof chunk, limit), 0);
    if (n > 0) {
      buffer.append(chunk, static_cast<size_t>(n));
      return true;
    }
    // SO_RCVTIMEO makes recv return every tick, to look at the stop flag.
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    return false;
  }
}

// Reads and drops a request body; what follows it (pipelining) stays in `buffer`.
bool skip_body(int fd, std::string& buffer, size_t length, const ServerState& s) {
  while (buffer.size() < length) {
    length -= buffer.size();
    buffer.clear();
    if (!read_more(fd, buffer, length, s)) return false;
  }
  buffer.erase(0, length);
  return true;
}

bool send_all(int fd, std::string_view head, std::string_view body, const ServerState& s) {
  // One call for head and body: two small writes would meet Nagle's algorithm
  // and the client's delayed ACK.
  iovec parts[2] = {{const_cast<char*>(head.data()), head.size()},
                    {const_cast<char*>(body.data()), body.size()}};
  msghdr msg{};
  msg.msg_iov = parts;
  msg.msg_iovlen = 2;
  size_t left = head.size() + body.size();
  while (left > 0) {
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) && !s.stopping)
      continue;
    if (n <= 0) return false;
    left -= static_cast<size_t>(n);
    for (auto sent = static_cast<size_t>(n); sent > 0 && msg.msg_iovlen > 0;) {
      size_t step = std::min(sent, msg.msg_iov->iov_len);
      msg.msg_iov->iov_base = static_cast<char*>(msg.msg_iov->iov_base) + step;
      msg.msg_iov->iov_len -= step;
      sent -= step;
      if (msg.msg_iov->iov_len == 0) ++msg.msg_iov, --msg.msg_iovlen;
    }
  }
  return true;
}

// Busy for `work` of this thread's own CPU time, not wall time: the cost per
// request stays the same however busy the host is.
void burn_cpu(Nanos work) {
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return Nanos(std::chrono::seconds(ts.tv_sec) + Nanos(ts.tv_nsec));
  };
  const auto until = cpu_now() + work;
  while (cpu_now() < until) {
  }
}

// `rounds` rounds of an integer hash: the same instructions whatever the
// machine, load or launch. The result is kept (volatile) so that the compiler
// cannot drop the loop.
void spin_rounds(uint64_t rounds) {
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (uint64_t i = 0; i < rounds; ++i) x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ULL + i;
  volatile uint64_t sink = x;
  static_cast<void>(sink);
}

// Sleeps in ticks, so that stop() does not wait for a long delay.
void sleep_unless_stopped(Nanos delay, const ServerState& s) {
  const auto until = std::chrono::steady_clock::now() + delay;
  while (!s.stopping && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::min<Nanos>(kTick, until - std::chrono::steady_clock::now()));
}

struct Response {
  int status = 200;
  std::string_view body;
  std::string owned_body;  // when the body is made for this response
};

// The stall dial: the stall_at-th response starts it, and every response
// (on any connection) waits until it is over.
void apply_stall(uint64_t n, const ServerState& s) {
  using std::chrono::steady_clock;
  const auto& o = s.options;
  const int64_t now = steady_clock::now().time_since_epoch().count();
  if (o.stall_at > 0 && n == o.stall_at) s.stall_until_ns = now + Nanos(o.stall).count();
  const int64_t until = s.stall_until_ns.load();
  if (until > now) sleep_unless_stopped(Nanos(until - now), s);
}

// A counted response with the dials applied: the N-th is known exactly.
Response counted_response(const ServerState& s) {
  const uint64_t n = s.served->fetch_add(1) + 1;
  const auto& o = s.options;
  if (o.stall_at > 0) apply_stall(n, s);
  Nanos wait{0};
  if (o.delay_every > 0 && n % o.delay_every == 0) wait += o.delay;
  if (o.tail_every > 0 && n % o.tail_every == 0) wait += o.tail_delay;
  if (o.cold_for > Nanos::zero() && std::chrono::steady_clock::now() - s.started < o.cold_for)
    wait += o.cold_delay;
  // One sleep for both: two sleeps would each add their own oversleep.
  if (wait > Nanos::zero()) sleep_unless_stopped(wait, s);
  if (o.work > Nanos::zero()) burn_cpu(o.work);
  if (o.work_rounds > 0) spin_rounds(o.work_rounds);
  if (o.error_every > 0 && n % o.error_every == 0) return {o.error_status, "error\n", {}};
  return {200, s.body, {}};
}

Response route(const Request& request, const ServerState& s) {
  if (request.path == "/health") return {200, "ok", {}};
  if (request.path == "/__stats") {
    Response r;
    r.owned_body = "{\"requests\": " + std::to_string(s.served->load()) + "}";
    return r;
  }
  return counted_response(s);
}

std::string_view body_of(const Request& request, const Response& r) {
  if (request.method == "HEAD") return {};
  return r.owned_body.empty() ? r.body : r.owned_body;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return " OK";
    case 404:
      return " Not Found";
    case 500:
      return " Internal Server Error";
    default:
      return " Error";  // clients read the code, not the phrase
  }
}

std::string head_of(const Request& request, const Response& r) {
  size_t length = (r.owned_body.empty() ? r.body : r.owned_body).size();
  return "HTTP/1.1 " + std::to_string(r.status) + std::string(reason_phrase(r.status)) +
         "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(length) + "\r\n" +
         (request.close ? "Connection: close\r\n\r\n" : "\r\n");
}

bool respond(int fd, const Request& request, const ServerState& s) {
  Response r = route(request, s);
  if (s.stopping) return false;  // a delay cut short by stop(): no answer
  return send_all(fd, head_of(request, r), body_of(request, r), s);
}

constexpr std::string_view kBadRequest =
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

void reject(int fd, const ServerState& s) {
  send_all(fd, kBadRequest, {}, s);
}

// Answers the requests of one connection in order, pipelined ones included.
void serve_connection(int fd, const ServerState& s) {
  std::string buffer;
  for (;;) {
    auto head_end = buffer.find("\r\n\r\n");
    if (head_end == std::string::npos) {
      if (buffer.size() > kMaxHeadBytes) return reject(fd, s);
      if (!read_more(fd, buffer, SIZE_MAX, s)) return;
      continue;
    }
    auto request = parse_head(std::string_view(buffer).substr(0, head_end));
    buffer.erase(0, head_end + 4);
    if (!request) return reject(fd, s);
    request->close = request->close || s.options.fork_per_request;
    if (!skip_body(fd, buffer, request->content_length, s)) return;
    if (!respond(fd, *request, s) || request->close) return;
  }
}

void set_timeouts(int fd) {
  timeval tick{0, static_cast<suseconds_t>(std::chrono::microseconds(kTick).count())};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof tick);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tick, sizeof tick);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void start_client(ServerState& s, int fd) {
  set_timeouts(fd);
  std::lock_guard lock(s.mutex);
  Client& c = s.clients.emplace_back();
  c.fd.reset(fd);
  try {
    c.thread = std::thread([&s, &c] {
      serve_connection(c.fd.get(), s);
      ::shutdown(c.fd.get(), SHUT_RDWR);
      c.done = true;
    });
  } catch (const std::system_error&) {
    s.clients.pop_back();  // out of threads: drop this connection, keep serving
  }
}

// fork_per_request: the connection served by a child of its own, which
// answers one request and exits without running the parent's destructors.
void fork_client(ServerState& s, int fd) {
  set_timeouts(fd);
  pid_t pid = ::fork();
  if (pid == 0) {
    serve_connection(fd, s);
    ::shutdown(fd, SHUT_RDWR);
    ::_exit(0);
  }
  ::close(fd);
  if (pid > 0) s.children.push_back(pid);
}

// Waits for the children that have exited (only its own, by PID: the process
// may have others); `end` kills those still serving first.
void reap_children(ServerState& s, bool end) {
  std::erase_if(s.children, [end](pid_t pid) {
    if (end) ::kill(pid, SIGKILL);
    return ::waitpid(pid, nullptr, end ? 0 : WNOHANG) != 0;
  });
}

// Joins the connections that have ended, so that a long run with reconnecting
// clients does not pile up threads.
void reap_finished(ServerState& s) {
  std::lock_guard lock(s.mutex);
  s.clients.remove_if([](Client& c) {
    if (!c.done) return false;
    c.thread.join();
    return true;
  });
}

void accept_loop(ServerState& s) {
  while (!s.stopping) {
    pollfd ready{s.listener.get(), POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(kTick.count())) > 0) {
      int fd = ::accept4(s.listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0 && s.options.fork_per_request)
        fork_client(s, fd);
      else if (fd >= 0)
        start_client(s, fd);
    }
    reap_finished(s);
    reap_children(s, false);
  }
  reap_children(s, true);
}

// single_thread: one connection's buffers in the event loop.
struct LoopClient {
  Fd fd;
  std::string in;
  std::string out;
  bool close_after = false;  // once `out` is sent
};

// Answers every complete request in `c.in`, appending to `c.out`; false when
// the connection must end now (stop()).
bool answer_buffered(LoopClient& c, const ServerState& s) {
  while (!c.close_after) {
    auto head_end = c.in.find("\r\n\r\n");
    if (head_end == std::string::npos) {
      if (c.in.size() > kMaxHeadBytes) c.out += kBadRequest, c.close_after = true;
      return true;
    }
    auto request = parse_head(std::string_view(c.in).substr(0, head_end));
    if (!request) {
      c.out += kBadRequest;
      c.close_after = true;
      return true;
    }
    size_t end = head_end + 4 + request->content_length;
    if (c.in.size() < end) return true;  // the body is still arriving
    c.in.erase(0, end);
    Response r = route(*request, s);
    if (s.stopping) return false;
    c.out += head_of(*request, r);
    c.out += body_of(*request, r);
    c.close_after = request->close;
  }
  return true;
}

// Reads what the socket has, answers it and sends what it can without
// blocking; false when the connection is over.
bool serve_ready(LoopClient& c, const ServerState& s) {
  char chunk[16384];
  for (;;) {
    ssize_t n = ::recv(c.fd.get(), chunk, sizeof chunk, 0);
    if (n > 0) {
      c.in.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;  // the peer is done: nothing left to answer
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return false;
  }
  if (!answer_buffered(c, s)) return false;
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;  // EPOLLOUT resumes it
    } else {
      return false;
    }
  }
  return !c.close_after;
}

void watch(const EpollSet& set, int op, int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  ::epoll_ctl(set.get(), op, fd, &ev);
}

// single_thread: the listener and every connection on one epoll set, served
// by this one thread until stop().
void event_loop(ServerState& s) {
  EpollSet set;
  int listener = s.listener.get();
  ::fcntl(listener, F_SETFL, ::fcntl(listener, F_GETFL) | O_NONBLOCK);
  watch(set, EPOLL_CTL_ADD, listener, EPOLLIN);
  std::unordered_map<int, LoopClient> clients;
  epoll_event events[64];
  while (!s.stopping) {
    int n = set.wait(events, 64, kTick);
    for (int i = 0; i < n && !s.stopping; ++i) {
      int fd = events[i].data.fd;
      if (fd == listener) {
        int client;
        while ((client = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
               0) {
          int one = 1;
          ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          clients[client].fd.reset(client);
          watch(set, EPOLL_CTL_ADD, client, EPOLLIN | EPOLLRDHUP);
        }
        continue;
      }
      auto it = clients.find(fd);
      if (it == clients.end()) continue;
      if (!serve_ready(it->second, s)) {
        ::epoll_ctl(set.get(), EPOLL_CTL_DEL, fd, nullptr);
        ::shutdown(fd, SHUT_RDWR);
        clients.erase(it);  // closes it
        continue;
      }
      watch(set, EPOLL_CTL_MOD, fd,
            EPOLLIN | EPOLLRDHUP | (it->second.out.empty() ? 0u : EPOLLOUT));
    }
  }
  for (auto& [fd, c] : clients) ::shutdown(fd, SHUT_RDWR);
}

in_addr loopback_address(const std::string& host) {
  in_addr addr{};
  if (::inet_pton(AF_INET, host.c_str(), &addr) != 1 || (ntohl(addr.s_addr) >> 24) != 127)
    throw Error("the demo server listens on loopback only; \"" + host + "\" is not 127.x.x.x");
  return addr;
}

Fd listen_on(const std::string& host, uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr = loopback_address(host);
  addr.sin_port = htons(port);
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  if (fd.get() < 0 || ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), SOMAXCONN) != 0)
    throw Error("demo server: cannot listen on " + host + ":" + std::to_string(port) + ": " +
                errno_text());
  return fd;
}

uint16_t bound_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

}  // namespace

struct DemoServer::Shared : ServerState {
  using ServerState::ServerState;
};

DemoServer::DemoServer(const DemoServerOptions& options)
    : options_(options),
      served_(std::make_shared<std::atomic<uint64_t>>(0)),
      shared_(std::make_shared<Shared>(options, served_)) {
  shared_->listener = listen_on(options.host, options.port);
  port_ = bound_port(shared_->listener.get());
  if (options.single_thread)
    acceptor_ = std::thread([state = shared_] { event_loop(*state); });
  else
    acceptor_ = std::thread([state = shared_] { accept_loop(*state); });
}

DemoServer::~DemoServer() {
  stop();
}

std::string DemoServer::url(const std::string& path) const {
  return "http://" + options_.host + ":" + std::to_string(port_) + path;
}

void DemoServer::stop() {
  shared_->stopping = true;
  if (acceptor_.joinable()) acceptor_.join();
  shared_->listener.reset();  // the port is free again once stop() returns
  std::lock_guard lock(shared_->mutex);
  // Wakes threads blocked in recv or send at once instead of after a tick.
  for (Client& c : shared_->clients) ::shutdown(c.fd.get(), SHUT_RDWR);
  for (Client& c : shared_->clients) c.thread.join();
  shared_->clients.clear();
}

}  // namespace perfgate
