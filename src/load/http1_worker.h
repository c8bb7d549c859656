#pragma once

// The HTTP/1.1 exchange both engines share: one load thread's epoll loop over
// its keep-alive connections, the request bytes serialized once and reused,
// responses parsed with HttpResponseParser. How a connection is opened and how
// its bytes move is the transport's: plain sockets for the native engine,
// libcurl's connections (TCP, TLS) for the curl engine. Header-only, private to
// the engines.

#include <sys/epoll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "epoll_set.h"
#include "perfgate/load/arrival_schedule.h"
#include "perfgate/load/http_request.h"
#include "perfgate/load/http_response_parser.h"
#include "perfgate/load/load_engine.h"
#include "perfgate/load/run_windows.h"

namespace perfgate {

/// A kind of request error: which counter of ErrorCounts it adds to.
using ErrorKind = uint64_t ErrorCounts::*;

/// What every load thread shares, read-only: the request bytes, serialized
/// once per mix entry and sent as they are for every request of that entry.
struct Http1Plan {
  std::vector<TargetSpec> entries;
  std::vector<std::string> requests;
  std::vector<bool> head;  // HEAD responses carry no body
  std::optional<ArrivalSchedule> schedule;
  Nanos timeout{0};
  Nanos connect_timeout{0};
};

/// The plan's requests, each serialized for its URL (`urls[i]` for entry i).
inline Http1Plan make_http1_plan(const LoadPlan& plan, const std::vector<HttpUrl>& urls) {
  Http1Plan out;
  out.entries = requests_of(plan);
  for (size_t i = 0; i < out.entries.size(); ++i) {
    out.requests.push_back(serialize_request(out.entries[i], urls.at(i)));
    out.head.push_back(out.entries[i].method == "HEAD");
  }
  if (plan.rate > 0) out.schedule.emplace(plan.rate, plan.connections);
  out.timeout = plan.timeout;
  out.connect_timeout = plan.connect_timeout;
  return out;
}

/// What a transport's send or recv did.
struct Io {
  enum Status { done, again, closed, failed };
  Status status = done;
  size_t bytes = 0;  // moved, when done
};

/// How a connection's connect stands after an event on it.
struct Dial {
  enum State { pending, connected, failed };
  State state = pending;
  ErrorKind failure = nullptr;  // when failed
};

/// How connections are opened and their bytes moved. `owner` is the
/// connection, handed back by owner_of() for each epoll event of its socket.
template <class T>
concept Http1Transport = requires(T& t, const T& ct, typename T::Link& link, void* owner,
                                  const epoll_event& ev, std::chrono::steady_clock::time_point now,
                                  std::string_view bytes, char* buffer, size_t size,
                                  std::function<void(void*, ErrorKind)> on_connected) {
  // Takes a new connection in, before its first open().
  t.adopt(link, owner);
  // Starts connecting: nullptr when under way, else why it could not start.
  { t.open(link, owner) } -> std::same_as<ErrorKind>;
  // An event on a connecting connection's socket.
  { t.connect_result(link, owner) } -> std::same_as<Dial>;
  // Work of its own (timers, connects that finished), each finished connect
  // handed to `on_connected` (nullptr: connected; else the failure).
  t.progress(now, on_connected);
  // When progress() next has work; nullopt: only on events.
  { ct.due() } -> std::convertible_to<std::optional<std::chrono::steady_clock::time_point>>;
  // The connection an event is for; nullptr when the transport took it.
  { t.owner_of(ev) } -> std::same_as<void*>;
  t.want_write(link, owner, true);
  { t.send(link, bytes) } -> std::same_as<Io>;
  { t.recv(link, buffer, size) } -> std::same_as<Io>;
  // True when a read shorter than the buffer leaves nothing behind (a plain
  // socket); false when bytes may wait inside the transport (TLS).
  { ct.short_read_drains() } -> std::same_as<bool>;
  t.close(link);
  { ct.is_open(link) } -> std::same_as<bool>;
};

/// One load thread: an epoll loop over its share of the connections.
template <Http1Transport Transport>
class Http1Worker {
 public:
  using Clock = std::chrono::steady_clock;
  using Link = typename Transport::Link;

  /// `transport` is built from the worker's epoll set by `make_transport`.
  template <class MakeTransport>
  Http1Worker(const Http1Plan& plan, int first_index, int count, RunWindows windows,
              MakeTransport make_transport)
      : plan_(plan),
        first_index_(first_index),
        transport_(make_transport(epoll_)),
        stats_(static_cast<size_t>(windows.slots())),
        windows_(windows),
        buffer_(kReadBufferBytes) {
    for (int i = 0; i < count; ++i) {
      conns_.push_back(std::make_unique<Conn>(first_index + i, plan.entries));
      transport_.adopt(conns_.back()->link, conns_.back().get());
    }
  }
  ~Http1Worker() {
    for (auto& c : conns_) transport_.close(c->link);  // before the transport goes
  }
  Http1Worker(const Http1Worker&) = delete;
  Http1Worker& operator=(const Http1Worker&) = delete;

  void run(Clock::time_point t0, const std::atomic<bool>& stop, const std::atomic<bool>& abort);
  int closed_slots() const { return closed_.load(std::memory_order_acquire); }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  /// After run(): requests sent and never counted: still unanswered, or
  /// answered in the loop's last batch of events, after the load's end.
  uint64_t in_flight() const {
    auto busy = std::count_if(conns_.begin(), conns_.end(),
                              [](const auto& c) { return c->phase == Phase::busy; });
    return static_cast<uint64_t>(busy) + answered_after_end_;
  }
  const IterationStats& slot(int index) const { return stats_.at(static_cast<size_t>(index)); }

 private:
  // The longest a thread sleeps in epoll: bounds how late `stop` is noticed.
  static constexpr std::chrono::milliseconds kMaxPoll{50};
  // How long a connection rests after a failed connect before it tries
  // again, so that a dead target costs no CPU.
  static constexpr std::chrono::milliseconds kRetryDelay{10};
  // Deadlines are scanned this often instead of arming a timer per request: a
  // timeout noticed 10 ms late costs nothing, a timer syscall per request does.
  static constexpr std::chrono::milliseconds kDeadlineScan{10};
  static constexpr size_t kReadBufferBytes = kNativeReadBufferBytes;
  static constexpr int kMaxEvents = 256;

  enum class Phase { resting, waiting, connecting, ready, busy };

  /// One keep-alive connection and the request it has in flight.
  struct Conn {
    Conn(int index_, const std::vector<TargetSpec>& entries) : index(index_), picker(entries) {}
    int index;  // among all the run's connections: its place in the open-model schedule
    Link link;
    HttpResponseParser parser;
    WeightedRoundRobin picker;
    Phase phase = Phase::resting;
    size_t entry = 0;       // mix entry in flight
    size_t written = 0;     // of its request bytes
    size_t received = 0;    // of the response in flight
    uint64_t answered = 0;  // responses on this connection since it was opened
    bool want_write = false;
    bool resend = false;           // its request goes out again after a stale reconnect
    Clock::time_point sent{};      // actual send: latency's start in the closed model
    Clock::time_point intended{};  // open model: when it should have been sent
    Clock::time_point deadline{};
    uint64_t next_k = 0;  // open model: index of its next request in the schedule
  };

  using Wake = std::pair<Clock::time_point, size_t>;  // (when, connection)

  IterationStats* stats_at(Clock::time_point now);
  void open(Conn& c, Clock::time_point now);
  void on_event(Conn& c, uint32_t events, Clock::time_point now);
  void on_dialled(Conn& c, ErrorKind failure, Clock::time_point now);
  void next_request(Conn& c, Clock::time_point now);
  void send(Conn& c, Clock::time_point now, Clock::time_point intended);
  void begin(Conn& c, Clock::time_point now, Clock::time_point intended);
  void write_some(Conn& c, Clock::time_point now);
  void read_some(Conn& c, Clock::time_point now);
  void complete(Conn& c, const HttpResponseParser::Response& r, Clock::time_point now);
  void fail(Conn& c, ErrorKind kind, Clock::time_point now);
  void refuse(Conn& c, InvalidAnswer why, Clock::time_point now);
  bool stale(const Conn& c) const { return c.answered > 0 && c.received == 0; }
  void reconnect(Conn& c, Clock::time_point now);
  void sleep_until(Conn& c, Phase phase, Clock::time_point when);
  void wake_due(Clock::time_point now);
  void check_deadlines(Clock::time_point now);
  void count_never_sent();
  int wait(Clock::time_point now, Clock::time_point until, epoll_event* events);

  const Http1Plan& plan_;
  int first_index_;  // of its first connection among the run's
  EpollSet epoll_;   // declared before the transport, which may use it until its end
  Transport transport_;
  std::vector<std::unique_ptr<Conn>> conns_;
  uint64_t answered_after_end_ = 0;  // responses past the last window: served, not counted
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> wakes_;
  std::vector<IterationStats> stats_;  // one per slot: warm-up, then iterations
  RunWindows windows_;
  Clock::time_point t0_{};
  std::vector<char> buffer_;
  std::vector<HttpResponseParser::Response> done_;
  std::atomic<int> closed_{0};
  std::atomic<bool> finished_{false};
};

template <Http1Transport T>
void Http1Worker<T>::run(Clock::time_point t0, const std::atomic<bool>& stop,
                         const std::atomic<bool>& abort) {
  t0_ = t0;
  const auto end = t0 + windows_.end();
  for (auto& c : conns_) open(*c, Clock::now());
  auto next_scan = Clock::now() + kDeadlineScan;
  const auto dialled = [this](void* owner, ErrorKind failure) {
    on_dialled(*static_cast<Conn*>(owner), failure, Clock::now());
  };
  epoll_event events[kMaxEvents];
  for (;;) {
    auto now = Clock::now();
    if (now >= end) count_never_sent();  // before the last slot is published
    // Every later event reads a later clock, so it lands in this slot or a
    // later one: the slots before it are final and can be published.
    closed_.store(windows_.slot_of(now - t0), std::memory_order_release);
    if (now >= end || stop.load(std::memory_order_relaxed) || abort.load()) break;
    if (now >= next_scan) {
      check_deadlines(now);
      next_scan = now + kDeadlineScan;
    }
    wake_due(now);
    // Connects just started are due at once: a fresh clock sees them due.
    transport_.progress(Clock::now(), dialled);
    int n = wait(Clock::now(), std::min(end, next_scan), events);
    // A clock read per event (a vDSO call, ~20 ns): a response's end is when
    // it is read, not when the batch began.
    for (int i = 0; i < n; ++i) {
      if (void* owner = transport_.owner_of(events[i]))
        on_event(*static_cast<Conn*>(owner), events[i].events, Clock::now());
    }
  }
  finished_.store(true, std::memory_order_release);
}

// Sleeps until an event, the next wake-up or `until`, at most kMaxPoll.
template <Http1Transport T>
int Http1Worker<T>::wait(Clock::time_point now, Clock::time_point until, epoll_event* events) {
  auto wake = std::min(until, now + kMaxPoll);
  if (!wakes_.empty()) wake = std::min(wake, wakes_.top().first);
  if (auto due = transport_.due()) wake = std::min(wake, *due);
  return epoll_.wait(events, kMaxEvents, wake - now);
}

template <Http1Transport T>
IterationStats* Http1Worker<T>::stats_at(Clock::time_point now) {
  int slot = windows_.slot_of(now - t0_);
  // Past the end of the run: abandoned like the requests still in flight.
  return slot < windows_.slots() ? &stats_[static_cast<size_t>(slot)] : nullptr;
}

template <Http1Transport T>
void Http1Worker<T>::open(Conn& c, Clock::time_point now) {
  c.parser.reset();
  c.answered = 0;
  if (ErrorKind failure = transport_.open(c.link, &c)) return fail(c, failure, now);
  c.phase = Phase::connecting;
  c.deadline = now + plan_.connect_timeout;
}

template <Http1Transport T>
void Http1Worker<T>::on_event(Conn& c, uint32_t events, Clock::time_point now) {
  if (c.phase == Phase::connecting) {
    Dial d = transport_.connect_result(c.link, &c);
    if (d.state == Dial::pending) return;
    return on_dialled(c, d.state == Dial::failed ? d.failure : nullptr, now);
  }
  if (c.phase == Phase::busy && c.want_write && (events & EPOLLOUT)) {
    write_some(c, now);
    if (c.phase != Phase::busy) return;  // failed: reconnecting
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_some(c, now);
}

// A connect finished: the transport now waits for input only (requests are
// written at once, and EPOLLOUT is asked for only when a write would block).
template <Http1Transport T>
void Http1Worker<T>::on_dialled(Conn& c, ErrorKind failure, Clock::time_point now) {
  if (c.phase != Phase::connecting) return;  // given up on meanwhile (timed out)
  if (failure) return fail(c, failure, now);
  c.phase = Phase::ready;
  c.want_write = false;
  next_request(c, now);
}

template <Http1Transport T>
void Http1Worker<T>::next_request(Conn& c, Clock::time_point now) {
  // Closed model, or a request resent after a reconnect: at once.
  if (!plan_.schedule || c.resend) return send(c, now, now);
  // Open model: the next request of this connection's schedule. One that is
  // already due (the last response came late) goes out at once, but keeps
  // its intended time as its latency's start: coordinated omission.
  auto intended = t0_ + plan_.schedule->intended(c.index, c.next_k);
  if (intended > now) return sleep_until(c, Phase::waiting, intended);
  send(c, now, intended);
}

template <Http1Transport T>
void Http1Worker<T>::send(Conn& c, Clock::time_point now, Clock::time_point intended) {
  // A response read after the end (in the loop's last batch of events) must
  // not start another request: the server would serve it and nobody count it,
  // one more per connection than the one abandoned in flight. In the open
  // model a request due before the end but not sent by then is never sent.
  if (now >= t0_ + windows_.end()) {
    c.phase = Phase::ready;  // idle until the loop, about to end, sees the time
    return;
  }
  // A resent request is the same request: its entry, start and deadline are
  // kept, so the time the server held it before closing is in its latency,
  // and a server that stalls past the timeout is charged a timeout.
  if (!c.resend) begin(c, now, intended);
  c.resend = false;
  c.deadline = c.sent + plan_.timeout;
  if (c.deadline <= now) return fail(c, &ErrorCounts::timeout, now);
  c.parser.set_head_request(plan_.head[c.entry]);
  c.written = 0;
  c.received = 0;
  c.phase = Phase::busy;
  write_some(c, now);
}

// A new request: its mix entry, its start and its place in the schedule.
template <Http1Transport T>
void Http1Worker<T>::begin(Conn& c, Clock::time_point now, Clock::time_point intended) {
  c.entry = c.picker.next();
  c.sent = now;
  c.intended = intended;
  if (!plan_.schedule) return;
  ++c.next_k;
  IterationStats* s = stats_at(now);
  if (s && now - intended > plan_.schedule->late_after()) ++s->late;
}

template <Http1Transport T>
void Http1Worker<T>::write_some(Conn& c, Clock::time_point now) {
  const std::string& bytes = plan_.requests[c.entry];
  Io io = transport_.send(c.link, std::string_view(bytes).substr(c.written));
  if (io.status == Io::failed || io.status == Io::closed) {
    if (stale(c)) return reconnect(c, now);
    return fail(c, &ErrorCounts::write, now);
  }
  c.written += io.bytes;
  bool done = c.written == bytes.size();
  // Writing interest only while a request is cut short by a full socket
  // buffer: an epoll_ctl per request would cost as much as the send itself.
  if (done == !c.want_write) return;  // interest already right
  c.want_write = !done;
  transport_.want_write(c.link, &c, c.want_write);
}

template <Http1Transport T>
void Http1Worker<T>::read_some(Conn& c, Clock::time_point now) {
  for (;;) {
    Io io = transport_.recv(c.link, buffer_.data(), buffer_.size());
    if (io.status == Io::again) return;
    if (c.phase != Phase::busy) {
      // The server closed a connection with nothing in flight (an idle
      // keep-alive timeout): not an error; reopened when next needed.
      transport_.close(c.link);
      return;
    }
    bool closed = io.status == Io::closed;
    if ((closed || io.status == Io::failed) && stale(c)) return reconnect(c, now);
    if (io.status == Io::failed) return fail(c, &ErrorCounts::read, now);
    c.received += io.bytes;
    if (IterationStats* s = stats_at(now)) s->bytes_read += io.bytes;
    done_.clear();
    bool ok = closed ? c.parser.finish(done_) : c.parser.feed({buffer_.data(), io.bytes}, done_);
    // Only our one request can be answered; anything more is ignored.
    if (!done_.empty()) return complete(c, done_.front(), now);
    // Bytes the parser refused; a close that cut a response short is a read error.
    if (!ok && !closed) return refuse(c, c.parser.invalid(), now);
    if (!ok || closed) return fail(c, &ErrorCounts::read, now);
    // Drained, on a plain socket: wait for more rather than pay a recv that
    // would only say so. Bytes may wait inside TLS: read until it says again.
    if (io.bytes < buffer_.size() && transport_.short_read_drains()) return;
  }
}

template <Http1Transport T>
void Http1Worker<T>::complete(Conn& c, const HttpResponseParser::Response& r,
                              Clock::time_point now) {
  if (IterationStats* s = stats_at(now)) {
    ++s->responses;
    s->statuses.count(r.status, plan_.entries[c.entry].success_statuses.contains(r.status));
    // Open model: the corrected figure runs from the intended send time, so a
    // stalled server is charged for every request it kept waiting (wrk2).
    s->latency.record(now - c.intended);
    if (plan_.schedule) s->latency_uncorrected.record(now - c.sent);
  } else {
    ++answered_after_end_;
  }
  c.phase = Phase::ready;
  ++c.answered;
  if (!r.keep_alive) return open(c, now);  // Connection: close: reconnect
  next_request(c, now);
}

// Counts a failed request (or connect) by kind, drops the connection and
// reconnects: at once after a broken request, like wrk; after a short rest
// after a failed connect, which would fail again at once.
template <Http1Transport T>
void Http1Worker<T>::fail(Conn& c, ErrorKind kind, Clock::time_point now) {
  if (IterationStats* s = stats_at(now)) ++(s->errors.*kind);
  c.resend = false;  // counted: what follows is a new request
  transport_.close(c.link);
  bool rest = kind == &ErrorCounts::connect || kind == &ErrorCounts::other;
  if (rest) return sleep_until(c, Phase::resting, now + kRetryDelay);
  open(c, now);
}

// The server answered, but not with HTTP/1.1 the parser can follow: a read
// error, named as such so that reports say the server answered.
template <Http1Transport T>
void Http1Worker<T>::refuse(Conn& c, InvalidAnswer why, Clock::time_point now) {
  if (IterationStats* s = stats_at(now)) s->errors.count_invalid(why);
  c.resend = false;
  transport_.close(c.link);
  open(c, now);
}

// A kept-alive connection the server closed after its last complete response
// (without saying Connection: close) fails the request that follows before a
// byte of its answer: the close was the server's, not a failed request. Like
// a browser, reconnect and send again. A fresh connection that fails this way
// is an error: its `answered` is 0. The close may come after a stall: the
// request resent keeps its start (send()), so the wait is not dropped.
template <Http1Transport T>
void Http1Worker<T>::reconnect(Conn& c, Clock::time_point now) {
  transport_.close(c.link);
  c.resend = true;
  open(c, now);
}

template <Http1Transport T>
void Http1Worker<T>::sleep_until(Conn& c, Phase phase, Clock::time_point when) {
  c.phase = phase;
  wakes_.emplace(when, static_cast<size_t>(c.index - first_index_));
}

template <Http1Transport T>
void Http1Worker<T>::wake_due(Clock::time_point now) {
  while (!wakes_.empty() && wakes_.top().first <= now) {
    Conn& c = *conns_[wakes_.top().second];
    wakes_.pop();
    if (c.phase == Phase::resting || (c.phase == Phase::waiting && !transport_.is_open(c.link))) {
      open(c, now);  // the schedule resumes once connected
    } else if (c.phase == Phase::waiting) {
      send(c, now, t0_ + plan_.schedule->intended(c.index, c.next_k));
    }
  }
}

template <Http1Transport T>
void Http1Worker<T>::check_deadlines(Clock::time_point now) {
  for (auto& c : conns_) {
    bool in_flight = c->phase == Phase::connecting || c->phase == Phase::busy;
    if (in_flight && c->deadline <= now) fail(*c, &ErrorCounts::timeout, now);
  }
}

// Requests intended before the end that never went out, because the target
// could not keep up, charged to the last iteration (where the run ended).
template <Http1Transport T>
void Http1Worker<T>::count_never_sent() {
  if (!plan_.schedule) return;
  uint64_t missing = 0;
  for (const auto& c : conns_) {
    uint64_t due = plan_.schedule->due_before(c->index, windows_.end());
    if (due > c->next_k) missing += due - c->next_k;
  }
  stats_.back().never_sent += missing;
}

/// Runs a plan on `threads` Http1Workers, each with its share of the
/// connections and a transport from `make_transport(epoll_set)`.
template <Http1Transport T, class MakeTransport>
LoadResult run_http1(const Http1Plan& shared, const LoadPlan& plan, std::string engine,
                     const std::atomic<bool>& stop, const IterationCallback& on_iteration,
                     MakeTransport make_transport) {
  RunWindows windows{plan.warmup, plan.duration, plan.iterations};
  std::vector<std::unique_ptr<Http1Worker<T>>> workers;
  int first = 0;
  for (int share : split_connections(plan.connections, plan.threads)) {
    workers.push_back(
        std::make_unique<Http1Worker<T>>(shared, first, share, windows, make_transport));
    first += share;
  }
  return run_load_threads(workers, plan, std::move(engine), stop, on_iteration);
}

}  // namespace perfgate
