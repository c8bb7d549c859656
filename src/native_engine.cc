#include "perfgate/native_engine.h"

#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <queue>
#include <utility>

#include "epoll_set.h"
#include "native_socket.h"
#include "perfgate/arrival_schedule.h"
#include "perfgate/error.h"
#include "perfgate/fd_limit.h"
#include "perfgate/http_response_parser.h"
#include "perfgate/run_windows.h"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;
using native::Address;
using native::Fd;
using native::resolve;
using std::chrono::milliseconds;

// The longest a thread sleeps in epoll: bounds how late `stop` is noticed.
constexpr milliseconds kMaxPoll{50};
// How long a connection rests after a failed connect before it tries again,
// so that a dead target costs no CPU (the curl engine rests as long).
constexpr milliseconds kRetryDelay{10};
// Deadlines are scanned this often instead of arming a timer per request: a
// timeout noticed 10 ms late costs nothing, a timer syscall per request does.
constexpr milliseconds kDeadlineScan{10};
constexpr size_t kReadBufferBytes = 64 * 1024;
constexpr int kMaxEvents = 256;

/// What every thread shares, read-only: the request bytes, serialized once
/// per mix entry and sent as they are for every request of that entry.
struct Shared {
  Address address;
  std::vector<TargetSpec> entries;
  std::vector<std::string> requests;
  std::vector<bool> head;  // HEAD responses carry no body
  std::optional<ArrivalSchedule> schedule;
  Nanos timeout{0};
  Nanos connect_timeout{0};
};

enum class Phase { resting, waiting, connecting, ready, busy };

/// One keep-alive connection and the request it has in flight.
struct Conn {
  Conn(int index_, const std::vector<TargetSpec>& entries) : index(index_), picker(entries) {}
  int index;  // among all the run's connections: its place in the open-model schedule
  Fd fd;
  HttpResponseParser parser;
  WeightedRoundRobin picker;
  Phase phase = Phase::resting;
  size_t entry = 0;    // mix entry in flight
  size_t written = 0;  // of its request bytes
  bool want_write = false;
  Clock::time_point sent{};      // actual send: latency's start in the closed model
  Clock::time_point intended{};  // open model: when it should have been sent
  Clock::time_point deadline{};
  uint64_t next_k = 0;  // open model: index of its next request in the schedule
};

using Wake = std::pair<Clock::time_point, size_t>;  // (when, connection)

/// One load thread: an epoll loop over its share of the connections.
class Worker {
 public:
  Worker(const Shared& shared, int first_index, int count, RunWindows windows);
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
  IterationStats* stats_at(Clock::time_point now);
  void open(Conn& c, Clock::time_point now);
  void on_event(Conn& c, uint32_t events, Clock::time_point now);
  void on_connected(Conn& c, Clock::time_point now);
  void next_request(Conn& c, Clock::time_point now);
  void send(Conn& c, Clock::time_point now, Clock::time_point intended);
  void write_some(Conn& c, Clock::time_point now);
  void read_some(Conn& c, Clock::time_point now);
  void complete(Conn& c, const HttpResponseParser::Response& r, Clock::time_point now);
  void fail(Conn& c, uint64_t ErrorCounts::*kind, Clock::time_point now);
  void sleep_until(Conn& c, Phase phase, Clock::time_point when);
  void set_interest(Conn& c, uint32_t events, int op);
  void wake_due(Clock::time_point now);
  void check_deadlines(Clock::time_point now);
  void count_never_sent();
  int wait(Clock::time_point now, Clock::time_point end, epoll_event* events);

  const Shared& shared_;
  int first_index_;  // of its first connection among the run's
  EpollSet epoll_;
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

Worker::Worker(const Shared& shared, int first_index, int count, RunWindows windows)
    : shared_(shared),
      first_index_(first_index),
      stats_(static_cast<size_t>(windows.slots())),
      windows_(windows),
      buffer_(kReadBufferBytes) {
  for (int i = 0; i < count; ++i)
    conns_.push_back(std::make_unique<Conn>(first_index + i, shared.entries));
}

void Worker::run(Clock::time_point t0, const std::atomic<bool>& stop,
                 const std::atomic<bool>& abort) {
  t0_ = t0;
  const auto end = t0 + windows_.end();
  for (auto& c : conns_) open(*c, Clock::now());
  auto next_scan = Clock::now() + kDeadlineScan;
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
    int n = wait(Clock::now(), std::min(end, next_scan), events);
    // A clock read per event (a vDSO call, ~20 ns): a response's end is when
    // it is read, not when the batch began.
    for (int i = 0; i < n; ++i)
      on_event(*static_cast<Conn*>(events[i].data.ptr), events[i].events, Clock::now());
  }
  finished_.store(true, std::memory_order_release);
}

// Sleeps until an event, the next wake-up or `until`, at most kMaxPoll.
int Worker::wait(Clock::time_point now, Clock::time_point until, epoll_event* events) {
  auto wake = std::min(until, now + kMaxPoll);
  if (!wakes_.empty()) wake = std::min(wake, wakes_.top().first);
  return epoll_.wait(events, kMaxEvents, wake - now);
}

IterationStats* Worker::stats_at(Clock::time_point now) {
  int slot = windows_.slot_of(now - t0_);
  // Past the end of the run: abandoned like the requests still in flight.
  return slot < windows_.slots() ? &stats_[static_cast<size_t>(slot)] : nullptr;
}

void Worker::set_interest(Conn& c, uint32_t events, int op) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = &c;
  epoll_ctl(epoll_.get(), op, c.fd.get(), &ev);
}

void Worker::open(Conn& c, Clock::time_point now) {
  c.parser.reset();
  c.fd =
      Fd(::socket(shared_.address.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!c.fd) return fail(c, &ErrorCounts::other, now);  // out of files: rest, retry
  int one = 1;
  setsockopt(c.fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto* addr = reinterpret_cast<const sockaddr*>(&shared_.address.addr);
  if (::connect(c.fd.get(), addr, shared_.address.len) != 0 && errno != EINPROGRESS)
    return fail(c, &ErrorCounts::connect, now);
  c.phase = Phase::connecting;
  c.deadline = now + shared_.connect_timeout;
  c.want_write = true;
  set_interest(c, EPOLLOUT, EPOLL_CTL_ADD);
}

void Worker::on_event(Conn& c, uint32_t events, Clock::time_point now) {
  if (c.phase == Phase::connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return fail(c, &ErrorCounts::connect, now);
    return on_connected(c, now);
  }
  if (c.phase == Phase::busy && c.want_write && (events & EPOLLOUT)) {
    write_some(c, now);
    if (c.phase != Phase::busy) return;  // failed: reconnecting
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_some(c, now);
}

void Worker::on_connected(Conn& c, Clock::time_point now) {
  c.phase = Phase::ready;
  c.want_write = false;
  // Reading interest only: requests are written at once, and EPOLLOUT is
  // asked for only when a write would block.
  set_interest(c, EPOLLIN, EPOLL_CTL_MOD);
  next_request(c, now);
}

void Worker::next_request(Conn& c, Clock::time_point now) {
  if (!shared_.schedule) return send(c, now, now);  // closed model: at once
  // Open model: the next request of this connection's schedule. One that is
  // already due (the last response came late) goes out at once, but keeps
  // its intended time as its latency's start: coordinated omission.
  auto intended = t0_ + shared_.schedule->intended(c.index, c.next_k);
  if (intended > now) return sleep_until(c, Phase::waiting, intended);
  send(c, now, intended);
}

void Worker::send(Conn& c, Clock::time_point now, Clock::time_point intended) {
  // A response read after the end (in the loop's last batch of events) must
  // not start another request: the server would serve it and nobody count it,
  // one more per connection than the one abandoned in flight. In the open
  // model a request due before the end but not sent by then is never sent.
  if (now >= t0_ + windows_.end()) {
    c.phase = Phase::ready;  // idle until the loop, about to end, sees the time
    return;
  }
  c.entry = c.picker.next();
  c.parser.set_head_request(shared_.head[c.entry]);
  c.sent = now;
  c.intended = intended;
  if (shared_.schedule) {
    ++c.next_k;
    IterationStats* s = stats_at(now);
    if (s && now - intended > shared_.schedule->late_after()) ++s->late;
  }
  c.deadline = now + shared_.timeout;
  c.written = 0;
  c.phase = Phase::busy;
  write_some(c, now);
}

void Worker::write_some(Conn& c, Clock::time_point now) {
  const std::string& bytes = shared_.requests[c.entry];
  ssize_t n = ::send(c.fd.get(), bytes.data() + c.written, bytes.size() - c.written, MSG_NOSIGNAL);
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return fail(c, &ErrorCounts::write, now);
  if (n > 0) c.written += static_cast<size_t>(n);
  bool done = c.written == bytes.size();
  // Writing interest only while a request is cut short by a full socket
  // buffer: an epoll_ctl per request would cost as much as the send itself.
  if (done == !c.want_write) return;  // interest already right
  c.want_write = !done;
  set_interest(c, done ? EPOLLIN : EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
}

void Worker::read_some(Conn& c, Clock::time_point now) {
  for (;;) {
    ssize_t n = ::recv(c.fd.get(), buffer_.data(), buffer_.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (c.phase != Phase::busy) {
      // The server closed a connection with nothing in flight (an idle
      // keep-alive timeout): not an error; reopened when next needed.
      c.fd.reset();
      return;
    }
    if (n < 0) return fail(c, &ErrorCounts::read, now);
    IterationStats* s = stats_at(now);
    if (s) s->bytes_read += static_cast<uint64_t>(n);
    done_.clear();
    bool ok = n == 0 ? c.parser.finish(done_)
                     : c.parser.feed({buffer_.data(), static_cast<size_t>(n)}, done_);
    // Only our one request can be answered; anything more is ignored.
    if (!done_.empty()) return complete(c, done_.front(), now);
    if (!ok || n == 0) return fail(c, &ErrorCounts::read, now);
    if (static_cast<size_t>(n) < buffer_.size()) return;  // drained: wait for more
  }
}

void Worker::complete(Conn& c, const HttpResponseParser::Response& r, Clock::time_point now) {
  if (IterationStats* s = stats_at(now)) {
    ++s->responses;
    s->statuses.count(r.status);
    // Open model: the corrected figure runs from the intended send time, so a
    // stalled server is charged for every request it kept waiting (wrk2).
    s->latency.record(now - c.intended);
    if (shared_.schedule) s->latency_uncorrected.record(now - c.sent);
  } else {
    ++answered_after_end_;
  }
  c.phase = Phase::ready;
  if (!r.keep_alive) return open(c, now);  // Connection: close: reconnect
  next_request(c, now);
}

// Counts a failed request (or connect) by kind, drops the connection and
// reconnects: at once after a broken request, like wrk; after a short rest
// after a failed connect, which would fail again at once.
void Worker::fail(Conn& c, uint64_t ErrorCounts::*kind, Clock::time_point now) {
  if (IterationStats* s = stats_at(now)) ++(s->errors.*kind);
  c.fd.reset();
  bool rest = kind == &ErrorCounts::connect || kind == &ErrorCounts::other;
  if (rest) return sleep_until(c, Phase::resting, now + kRetryDelay);
  open(c, now);
}

void Worker::sleep_until(Conn& c, Phase phase, Clock::time_point when) {
  c.phase = phase;
  wakes_.emplace(when, static_cast<size_t>(c.index - first_index_));
}

void Worker::wake_due(Clock::time_point now) {
  while (!wakes_.empty() && wakes_.top().first <= now) {
    Conn& c = *conns_[wakes_.top().second];
    wakes_.pop();
    if (c.phase == Phase::resting || (c.phase == Phase::waiting && !c.fd)) {
      open(c, now);  // the schedule resumes once connected
    } else if (c.phase == Phase::waiting) {
      send(c, now, t0_ + shared_.schedule->intended(c.index, c.next_k));
    }
  }
}

void Worker::check_deadlines(Clock::time_point now) {
  for (auto& c : conns_) {
    bool in_flight = c->phase == Phase::connecting || c->phase == Phase::busy;
    if (in_flight && c->deadline <= now) fail(*c, &ErrorCounts::timeout, now);
  }
}

// Requests intended before the end that never went out, because the target
// could not keep up, charged to the last iteration (where the run ended).
void Worker::count_never_sent() {
  if (!shared_.schedule) return;
  uint64_t missing = 0;
  for (const auto& c : conns_) {
    uint64_t due = shared_.schedule->due_before(c->index, windows_.end());
    if (due > c->next_k) missing += due - c->next_k;
  }
  stats_.back().never_sent += missing;
}

Shared make_shared_state(const LoadPlan& plan) {
  Shared s;
  s.entries = requests_of(plan);
  std::string refusal = native_engine_refusal(s.entries);
  if (!refusal.empty()) throw Error(refusal + "; use load.engine \"curl\"");
  for (const auto& entry : s.entries) {
    HttpUrl url = parse_http_url(entry.url);
    if (s.requests.empty()) s.address = resolve(url);  // one host per run, as wrk
    s.requests.push_back(serialize_request(entry, url));
    s.head.push_back(entry.method == "HEAD");
  }
  if (plan.rate > 0) s.schedule.emplace(plan.rate, plan.connections);
  s.timeout = plan.timeout;
  s.connect_timeout = plan.connect_timeout;
  return s;
}

}  // namespace

LoadResult NativeEngine::run(const LoadPlan& plan, const std::atomic<bool>& stop,
                             const IterationCallback& on_iteration) {
  check_plan(plan);
  ensure_fd_limit(plan.connections);
  const Shared shared = make_shared_state(plan);
  RunWindows windows{plan.warmup, plan.duration, plan.iterations};
  std::vector<std::unique_ptr<Worker>> workers;
  int first = 0;
  for (int share : split_connections(plan.connections, plan.threads)) {
    workers.push_back(std::make_unique<Worker>(shared, first, share, windows));
    first += share;
  }
  return run_load_threads(workers, plan, "native", stop, on_iteration);
}

}  // namespace perfgate
