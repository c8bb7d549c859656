#include "perfgate/load/request_sequence.h"

#include <netinet/tcp.h>
#include <poll.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "native_socket.h"
#include "perfgate/load/http_request.h"
#include "perfgate/load/http_response_parser.h"

namespace perfgate {
namespace {

struct Script {
  std::vector<TargetSpec> mix;
  std::vector<std::string> bytes;  // each entry's request, serialized once
  native::Address address;
};

Script make_script(const Profile& profile) {
  Script s;
  s.mix = profile.requests.empty() ? std::vector<TargetSpec>{profile.target} : profile.requests;
  for (const auto& t : s.mix) {
    if (t.url.rfind("http://", 0) != 0 && t.url.rfind("HTTP://", 0) != 0)
      throw Error("cost phase: sends plain http:// requests only, got " + t.url);
    auto url = parse_http_url(t.url);
    if (s.bytes.empty()) s.address = native::resolve(url);
    s.bytes.push_back(serialize_request(t, url));
  }
  return s;
}

// One keep-alive connection, blocking, with a receive timeout per response.
class Connection {
 public:
  Connection(const native::Address& address, Nanos timeout)
      : address_(address), timeout_(timeout) {}

  /// Connected, if it is not yet (again, after the service closed it).
  void ensure_open() {
    if (!fd_) open();
  }

  void send(const std::string& bytes, bool head) {
    ensure_open();
    parser_.set_head_request(head);
    size_t at = 0;
    while (at < bytes.size()) {
      ssize_t n = ::send(fd_.get(), bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        throw Error("cost phase: the service read no request within " + format_duration(timeout_) +
                    " (cost.timeout)");
      if (n <= 0) throw Error(std::string("cost phase: send: ") + strerror(errno));
      at += static_cast<size_t>(n);
    }
  }

  // The response's status; false in `keep` when the service closes after it.
  // The whole response must come within the timeout, however the service
  // sends it (a header a byte at a time, endless 100 Continue or chunks):
  // a receive timeout would restart with each byte. A stop ends the wait.
  int receive(bool& keep, const std::atomic<bool>& stop) {
    std::vector<HttpResponseParser::Response> done;
    char buf[16384];
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    uint64_t received = 0;
    while (done.empty()) {
      auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (stop) throw Error("interrupted by a signal during the cost phase");
      if (left.count() <= 0)
        throw Error("cost phase: no " + std::string(received ? "complete " : "") +
                    "response within " + format_duration(timeout_) + " (cost.timeout)" +
                    (received ? ": " + std::to_string(received) + " bytes of one came" : ""));
      pollfd p{fd_.get(), POLLIN, 0};
      int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
      if (ready < 0 && errno != EINTR)
        throw Error(std::string("cost phase: poll: ") + strerror(errno));
      if (ready <= 0) continue;
      ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n < 0) throw Error(std::string("cost phase: recv: ") + strerror(errno));
      received += static_cast<uint64_t>(n);
      bool ok = n > 0 ? parser_.feed({buf, static_cast<size_t>(n)}, done) : parser_.finish(done);
      if (!ok) throw Error("cost phase: malformed response from the service");
      if (n == 0 && done.empty()) throw Error("cost phase: the service closed the connection");
    }
    keep = done.front().keep_alive;
    if (!keep) close();
    return done.front().status;
  }

  void close() {
    fd_.reset();
    parser_.reset();
  }

 private:
  void open() {
    native::Fd fd(::socket(address_.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) throw Error(std::string("cost phase: socket: ") + strerror(errno));
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A connect and a send to a service that does not read are bounded too
    // (Linux's connect honours the send timeout).
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout_).count();
    timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
    setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address_.addr), address_.len) != 0)
      throw Error(errno == EINPROGRESS
                      ? "cost phase: the service accepted no connection within " +
                            format_duration(timeout_) + " (cost.timeout)"
                      : std::string("cost phase: cannot connect to the service: ") +
                            strerror(errno));
    fd_ = std::move(fd);
  }

  const native::Address& address_;
  Nanos timeout_;
  native::Fd fd_;
  HttpResponseParser parser_;
};

}  // namespace

std::vector<size_t> fixed_mix_order(const std::vector<TargetSpec>& mix, int count) {
  std::vector<size_t> order;
  if (mix.empty() || count <= 0) return order;
  double total = 0;
  for (const auto& t : mix) total += t.weight;
  std::vector<double> credit(mix.size(), 0);
  for (int i = 0; i < count; ++i) {
    size_t best = 0;
    for (size_t k = 0; k < mix.size(); ++k) {
      credit[k] += mix[k].weight;
      if (credit[k] > credit[best]) best = k;
    }
    credit[best] -= total;
    order.push_back(best);
  }
  return order;
}

struct RequestSequence::State {
  Script script;
  std::vector<std::unique_ptr<Connection>> conns;
};

RequestSequence::RequestSequence(const Profile& profile, int connections, Nanos timeout)
    : state_(std::make_unique<State>()) {
  state_->script = make_script(profile);
  // Connected now, before anything is counted: a connection's accept (and a
  // thread per connection's start) is not the cost of a request.
  for (int c = 0; c < connections; ++c) {
    state_->conns.push_back(std::make_unique<Connection>(state_->script.address, timeout));
    state_->conns.back()->ensure_open();
  }
}

RequestSequence::~RequestSequence() = default;

SequenceOutcome RequestSequence::send(int count, const std::atomic<bool>& stop) {
  const Script& script = state_->script;
  auto& conns = state_->conns;
  auto order = fixed_mix_order(script.mix, count);
  SequenceOutcome out;
  for (size_t at = 0; at < order.size() && !stop;) {
    size_t round = std::min(order.size() - at, conns.size());
    for (size_t c = 0; c < round; ++c) {
      const auto& t = script.mix[order[at + c]];
      conns[c]->send(script.bytes[order[at + c]], t.method == "HEAD");
    }
    for (size_t c = 0; c < round; ++c) {
      const auto& t = script.mix[order[at + c]];
      bool keep = true;
      int status = conns[c]->receive(keep, stop);
      ++out.answered;
      out.reconnects += !keep;
      if (!t.success_statuses.contains(status) && out.failed++ == 0)
        out.first_failure = "status " + std::to_string(status) + " on " + t.url;
    }
    at += round;
  }
  if (stop) throw Error("interrupted by a signal during the cost phase");
  return out;
}

SequenceOutcome send_sequence(const Profile& profile, int count, int connections, Nanos timeout,
                              const std::atomic<bool>& stop) {
  return RequestSequence(profile, connections, timeout).send(count, stop);
}

}  // namespace perfgate
