#include "perfgate/load/curl_engine.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <thread>

#include "curl_handles.h"
#include "curl_http1.h"
#include "epoll_set.h"
#include "perfgate/core/error.h"
#include "perfgate/core/stop_signal.h"
#include "perfgate/core/units.h"
#include "perfgate/load/arrival_schedule.h"
#include "perfgate/load/fd_limit.h"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The longest a load thread sleeps in epoll: bounds how late `stop` and the
// end of a window are noticed.
constexpr milliseconds kMaxPoll{50};
// How long a handle rests after a failed connect (or a request that cannot be
// sent at all) before it tries again, so that a dead target costs no CPU.
constexpr milliseconds kRetryDelay{10};

struct SlistFree {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
struct UrlCleanup {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};
using SlistPtr = std::unique_ptr<curl_slist, SlistFree>;
using UrlPtr = std::unique_ptr<CURLU, UrlCleanup>;

void append(SlistPtr& list, const std::string& line) {
  curl_slist* grown = curl_slist_append(list.get(), line.c_str());
  if (!grown) throw Error("out of memory building the request headers");
  static_cast<void>(list.release());
  list.reset(grown);
}

bool same_name(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](unsigned char x, unsigned char y) {
    return std::tolower(x) == std::tolower(y);
  });
}

// The header list must outlive every handle that points at it.
SlistPtr make_header_list(const TargetSpec& target) {
  SlistPtr list;
  bool has_expect = false;
  for (const auto& [name, value] : target.headers) {
    // "Name:" would tell curl to drop the header; "Name;" sends it empty.
    append(list, value.empty() ? name + ";" : name + ": " + value);
    has_expect = has_expect || same_name(name, "Expect");
  }
  // curl would send "Expect: 100-continue" for large bodies and wait up to a
  // second for servers that ignore it; send the body at once, as wrk does.
  // Without a body there is nothing to expect (and libcurl looks through the
  // list for a dozen names on every request: the shorter the better).
  if (!has_expect && !target.body.empty()) append(list, "Expect:");
  return list;
}

// Bodies are discarded as they stream in, so memory stays flat whatever the
// response size; only their length is kept. Headers are not handed over at all
// (a call per line): their length comes from CURLINFO_HEADER_SIZE at the end.
size_t count_bytes(char*, size_t size, size_t count, void* counter) {
  *static_cast<uint64_t*>(counter) += size * count;
  return size * count;
}

void set_method_and_body(CURL* easy, const TargetSpec& target) {
  if (target.method == "HEAD") {
    curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);  // a custom HEAD would wait for a body
  } else if (target.method != "GET" || !target.body.empty()) {
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, target.method.c_str());
  }
  if (!target.body.empty()) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(target.body.size()));
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS,
                     target.body.data());  // not copied: the plan outlives the run
  }
}

// The URL parsed once, as libcurl parses it, for handles to share: otherwise
// libcurl parses it again for every request. Null when it does not parse: the
// handle then keeps the string, and each request fails as it would have.
UrlPtr parse_url(const std::string& url) {
  UrlPtr parsed(curl_url());
  if (parsed && curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(),
                             CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
    parsed.reset();
  return parsed;
}

// What one request shape sets on a handle; a handle of a mix gets it again
// whenever its connection sends another entry than the last. `parsed`, when
// given, must outlive the handle's requests.
void apply_entry(CURL* h, const TargetSpec& target, curl_slist* headers, CURLU* parsed = nullptr) {
  curl_easy_setopt(h, CURLOPT_URL, target.url.c_str());
  curl_easy_setopt(h, CURLOPT_CURLU, parsed);  // takes precedence over the string
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, nullptr);
  curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);  // undoes the last entry's NOBODY or POST
  set_method_and_body(h, target);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  set_tls_verify(h, target.tls_verify);
  bool tls = target.url.size() >= 8 && std::tolower(target.url[4]) == 's';
  long version = target.http_version != "2" ? CURL_HTTP_VERSION_1_1
                 : tls                      ? CURL_HTTP_VERSION_2TLS
                                            : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, version);
}

// One handle set up the same way for the load and for the probe.
EasyPtr make_easy(const TargetSpec& target, curl_slist* headers, Nanos timeout,
                  Nanos connect_timeout, uint64_t* bytes) {
  EasyPtr easy(curl_easy_init());
  if (!easy) throw Error("cannot create a libcurl handle");
  CURL* h = easy.get();
  apply_entry(h, target, headers);
  set_common_options(h, connect_timeout);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, to_ms(timeout));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_bytes);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, bytes);
  return easy;
}

// Failures that would fail again at once (refused, unresolvable, malformed
// URL) rest a little instead of spinning; the others retry right away, like
// wrk's reconnect.
bool fails_again_at_once(CURLcode code) {
  ErrorCounts kind;
  if (code != CURLE_OK) count_transfer_error(code, kind);
  return kind.connect + kind.other > 0;
}

class Worker;

// A few of a thread's connections on one multi handle. libcurl 7.x walks its
// whole connection cache on every request (once to find an idle connection
// for the new transfer, once more on each curl_multi_remove_handle): on one
// multi handle per thread that cost grows with the connections, and at 1000
// it dominated. Small multi handles keep each walk short.
struct Group {
  Worker* worker = nullptr;
  MultiPtr multi;
  std::optional<Clock::time_point> due;  // libcurl's next timeout on it
};

// One keep-alive connection: an easy handle and the request it has in flight.
struct Connection {
  Connection(int index_, const std::vector<TargetSpec>& entries) : index(index_), picker(entries) {}
  int index;  // among all the run's connections: its place in the open-model schedule
  Group* group = nullptr;
  EasyPtr easy;
  WeightedRoundRobin picker;
  size_t entry = 0;              // of the mix, set on the handle
  uint64_t next_k = 0;           // open model: its next request in the schedule
  Clock::time_point started{};   // when the request was (re)added: the actual send
  Clock::time_point intended{};  // open model: when it should have been; else `started`
  uint64_t bytes = 0;            // of the body in flight
  bool attached = false;         // added to its multi handle
};

// Headers and bodies, as wrk counts.
uint64_t bytes_read(const Connection& c) {
  long header_bytes = 0;
  curl_easy_getinfo(c.easy.get(), CURLINFO_HEADER_SIZE, &header_bytes);
  return c.bytes + static_cast<uint64_t>(std::max(header_bytes, 0L));
}

void record(IterationStats& stats, const Connection& c, CURLcode code, Clock::time_point now,
            bool open_model, const SuccessStatuses& success) {
  stats.bytes_read += bytes_read(c);
  if (code != CURLE_OK) {
    count_transfer_error(code, stats.errors);
    return;
  }
  long status = 0;
  curl_easy_getinfo(c.easy.get(), CURLINFO_RESPONSE_CODE, &status);
  ++stats.responses;
  stats.statuses.count(static_cast<int>(status), success.contains(static_cast<int>(status)));
  // Open model: from the intended send, so that a stalled target is charged
  // for every request it kept waiting (coordinated omission, wrk2's way).
  stats.latency.record(now - c.intended);
  if (open_model) stats.latency_uncorrected.record(now - c.started);
}

// What the epoll set holds for one socket. A connection's socket stays in the
// set between two of its requests, still waiting for input, where libcurl
// would take it out and put it back (two epoll_ctl per request); libcurl's
// sockets come and go through open_socket and close_socket, so that a closed
// socket's number, reused, starts afresh.
struct SocketState {
  Group* group = nullptr;  // whose multi handle it belongs to
  uint32_t events = 0;     // in the set with these; 0: not in the set
  bool wanted = false;     // libcurl waits on it
  bool ours = false;       // opened through open_socket, not yet closed
};

// A connection resting until `at` (open model: its next intended send; after
// a failure: the retry), earliest first.
struct Wake {
  Clock::time_point at;
  Connection* c;
  bool operator>(const Wake& o) const { return at > o.at; }
};

// One load thread. Built on run()'s thread, so that a setup failure is an Error
// from run(); afterwards only its own thread touches it until the join, except
// for the slots it has closed, which are final and read by run()'s thread.
//
// libcurl's socket interface, on our own epoll set: libcurl says what each
// socket waits for (CURLMOPT_SOCKETFUNCTION) and when its next timeout is due
// (CURLMOPT_TIMERFUNCTION), and each call (curl_multi_socket_action) handles
// one ready socket, or the transfers whose timers expired. A round of
// curl_multi_perform + curl_multi_poll instead walks every handle and polls
// every socket, whatever is ready.
class Worker {
 public:
  Worker(const LoadPlan& plan, int first_index, int connections, RunWindows windows);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void run(Clock::time_point t0, const std::atomic<bool>& stop, const std::atomic<bool>& abort);
  /// Slots below this number are final (their window is over).
  int closed_slots() const { return closed_.load(std::memory_order_acquire); }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  const IterationStats& slot(int index) const { return stats_.at(static_cast<size_t>(index)); }

 private:
  static constexpr int kMaxEvents = 256;

  static int on_socket(CURL* easy, curl_socket_t s, int what, void* group, void* socketp);
  static curl_socket_t open_socket(void* worker, curlsocktype purpose, curl_sockaddr* address);
  static int close_socket(void* worker, curl_socket_t s);
  void watch(Group& group, curl_socket_t s, int what);
  void unwatch(curl_socket_t s);
  SocketState& state_of(curl_socket_t s);
  int wait(Clock::time_point now, Clock::time_point until, epoll_event* events);
  void act(Group& group, curl_socket_t s, int flags);
  void run_timers(Clock::time_point now);
  void attach(Connection& c, Clock::time_point now);
  void send(Connection& c, Clock::time_point now, Clock::time_point intended);
  void rest(Connection& c, Clock::time_point until);
  void count_never_sent();
  void collect_completions(Group& group);
  void complete(Connection& c, CURLcode code, Clock::time_point now);
  void attach_rested(Clock::time_point now);
  void attach_finished(Clock::time_point now);

  std::vector<TargetSpec> entries_;
  std::vector<SlistPtr> headers_;  // one per entry; declared first: outlives the handles
  std::vector<UrlPtr> urls_;       // the same
  std::optional<ArrivalSchedule> schedule_;
  Clock::time_point t0_{};
  EpollSet epoll_;  // declared before the multi handles: their cleanup may still report sockets
  std::vector<SocketState> sockets_;  // by socket number
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> resting_;
  std::vector<Connection*> finished_now_;  // to send again once the ready sockets are done
  std::vector<IterationStats> stats_;      // one per slot: warm-up, then iterations
  RunWindows windows_;
  std::atomic<int> closed_{0};
  std::atomic<bool> finished_{false};
};

Worker::Worker(const LoadPlan& plan, int first_index, int connections, RunWindows windows)
    : entries_(requests_of(plan)), stats_(static_cast<size_t>(windows.slots())), windows_(windows) {
  for (const auto& entry : entries_) {
    headers_.push_back(make_header_list(entry));
    urls_.push_back(parse_url(entry.url));
  }
  if (plan.rate > 0) schedule_.emplace(plan.rate, plan.connections);
  for (int i = 0; i < connections; ++i) {
    if (i % kConnectionsPerMulti == 0) {
      auto g = std::make_unique<Group>();
      g->worker = this;
      g->multi.reset(curl_multi_init());
      if (!g->multi) throw Error("cannot create a libcurl multi handle");
      CURLM* m = g->multi.get();
      // Exactly its connections, all kept open between requests: a finished
      // handle returns its connection to the cache, and the re-added handle
      // takes it back instead of connecting again.
      long share = std::min(kConnectionsPerMulti, connections - i);
      curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, share);
      curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, share);
      curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, &Worker::on_socket);
      curl_multi_setopt(m, CURLMOPT_SOCKETDATA, g.get());
      curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, &store_curl_timer<Group>);
      curl_multi_setopt(m, CURLMOPT_TIMERDATA, g.get());
      groups_.push_back(std::move(g));
    }
    auto c = std::make_unique<Connection>(first_index + i, entries_);
    c->group = groups_.back().get();
    c->easy =
        make_easy(entries_[0], headers_[0].get(), plan.timeout, plan.connect_timeout, &c->bytes);
    CURL* h = c->easy.get();
    curl_easy_setopt(h, CURLOPT_CURLU, urls_[0].get());
    curl_easy_setopt(h, CURLOPT_PRIVATE, c.get());
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, &Worker::open_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, this);
    curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, &Worker::close_socket);
    curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, this);
    connections_.push_back(std::move(c));
  }
}

Worker::~Worker() {
  // Requests still in flight are abandoned, as wrk does: detach before cleanup.
  for (auto& c : connections_) {
    if (c->attached) curl_multi_remove_handle(c->group->multi.get(), c->easy.get());
  }
  // Now, while the callbacks can still be told about the cached connections
  // it closes; the easy handles go after them, as libcurl asks.
  for (auto& g : groups_) g->multi.reset();
}

int Worker::on_socket(CURL*, curl_socket_t s, int what, void* group, void*) {
  auto* g = static_cast<Group*>(group);
  g->worker->watch(*g, s, what);
  return 0;
}

curl_socket_t Worker::open_socket(void* worker, curlsocktype, curl_sockaddr* address) {
  // CLOEXEC, as libcurl's own opener does: a process started meanwhile must not keep them.
  curl_socket_t s = ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
  if (s >= 0) static_cast<Worker*>(worker)->state_of(s) = SocketState{.ours = true};
  return s;
}

int Worker::close_socket(void* worker, curl_socket_t s) {
  // Closing takes it out of the epoll set (no other descriptor shares it).
  static_cast<Worker*>(worker)->state_of(s) = SocketState{};
  return ::close(s);
}

SocketState& Worker::state_of(curl_socket_t s) {
  auto at = static_cast<size_t>(s);
  if (at >= sockets_.size()) sockets_.resize(at + 1);
  return sockets_[at];
}

void Worker::watch(Group& group, curl_socket_t s, int what) {
  if (s < 0) return;
  SocketState& st = state_of(s);
  st.group = &group;
  if (what == CURL_POLL_REMOVE) {
    st.wanted = false;
    // A connection's socket stays in the set: its next request most likely
    // waits for input again. Should input come first (the server closes
    // it), the event takes it out then.
    if (!st.ours || st.events != EPOLLIN) unwatch(s);
    return;
  }
  st.wanted = true;
  uint32_t events =
      ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
  if (events == st.events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = s;
  // A socket closed behind our back left the set by itself and its number
  // may be back: when the set disagrees with what we know, the other way it is.
  int op = st.events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  if (epoll_ctl(epoll_.get(), op, s, &ev) != 0)
    epoll_ctl(epoll_.get(), op == EPOLL_CTL_MOD ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, s, &ev);
  st.events = events;
}

void Worker::unwatch(curl_socket_t s) {
  SocketState& st = state_of(s);
  if (st.events) {
    epoll_event ev{};
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, s, &ev);
  }
  st.events = 0;
}

void Worker::run(Clock::time_point t0, const std::atomic<bool>& stop,
                 const std::atomic<bool>& abort) {
  const auto end = t0 + windows_.end();
  t0_ = t0;
  for (auto& c : connections_) attach(*c, Clock::now());
  epoll_event events[kMaxEvents];
  for (;;) {
    auto now = Clock::now();
    if (now >= end) count_never_sent();  // before the last slot is published
    // Every later completion reads a later clock, so it lands in this slot or
    // a later one: the slots before it are final and can be published.
    closed_.store(windows_.slot_of(now - t0), std::memory_order_release);
    if (now >= end || stop.load(std::memory_order_relaxed) || abort.load()) break;
    attach_finished(now);
    attach_rested(now);
    // The transfers just added start on a timer of 0, set after `now`: a
    // fresh clock sees it due, rather than a sleep that would let another
    // process have the core first.
    run_timers(Clock::now());
    int n = wait(Clock::now(), end, events);
    for (int i = 0; i < n; ++i) {
      curl_socket_t s = events[i].data.fd;
      SocketState& st = state_of(s);
      if (!st.wanted || !st.group) {
        unwatch(s);  // kept in the set between requests, and input came
        continue;
      }
      uint32_t ev = events[i].events;
      int flags = ((ev & (EPOLLIN | EPOLLHUP)) ? CURL_CSELECT_IN : 0) |
                  ((ev & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                  ((ev & EPOLLERR) ? CURL_CSELECT_ERR : 0);
      act(*st.group, s, flags);
    }
  }
  finished_.store(true, std::memory_order_release);
}

// Sleeps until a socket is ready, libcurl's next timeout, the next resting
// connection's wake-up or `until`, at most kMaxPoll.
int Worker::wait(Clock::time_point now, Clock::time_point until, epoll_event* events) {
  auto wake = std::min(until, now + kMaxPoll);
  for (const auto& g : groups_) {
    if (g->due) wake = std::min(wake, *g->due);
  }
  if (!resting_.empty()) wake = std::min(wake, resting_.top().at);
  if (!finished_now_.empty()) wake = now;
  return epoll_.wait(events, kMaxEvents, wake - now);
}

void Worker::act(Group& group, curl_socket_t s, int flags) {
  int running = 0;
  curl_multi_socket_action(group.multi.get(), s, flags, &running);
  collect_completions(group);
}

// The groups whose timeout is due: transfers just added, and timeouts.
void Worker::run_timers(Clock::time_point now) {
  for (auto& g : groups_) {
    if (!g->due || *g->due > now) continue;
    // libcurl reports a timeout only when it changes; should this action
    // find nothing expired yet (its clock rounds to the millisecond), look
    // again in a millisecond rather than never.
    g->due = now + milliseconds(1);
    act(*g, CURL_SOCKET_TIMEOUT, 0);
  }
}

// Sends the connection's next request: at once in the closed model; in the
// open model at its intended time, or at once when that has passed (the last
// response came late), keeping the intended time as the latency's start.
void Worker::attach(Connection& c, Clock::time_point now) {
  if (!schedule_) return send(c, now, now);
  auto intended = t0_ + schedule_->intended(c.index, c.next_k);
  if (intended > now) return rest(c, intended);
  send(c, now, intended);
}

void Worker::send(Connection& c, Clock::time_point now, Clock::time_point intended) {
  size_t entry = c.picker.next();
  if (entry != c.entry)
    apply_entry(c.easy.get(), entries_[entry], headers_[entry].get(), urls_[entry].get());
  c.entry = entry;
  // Latency runs from here to the moment its completion is read, on our own
  // steady clock rather than libcurl's timers, so that every engine measures
  // the same span (a wait for a connection included).
  c.started = now;
  c.intended = intended;
  if (schedule_) {
    ++c.next_k;
    int slot = windows_.slot_of(now - t0_);
    bool late = now - intended > schedule_->late_after();
    if (late && slot < windows_.slots()) ++stats_[static_cast<size_t>(slot)].late;
  }
  c.bytes = 0;
  // The transfer starts on its multi handle's next timeout action (a timer of 0).
  c.attached = curl_multi_add_handle(c.group->multi.get(), c.easy.get()) == CURLM_OK;
  if (!c.attached) rest(c, now + kRetryDelay);
}

void Worker::rest(Connection& c, Clock::time_point until) {
  resting_.push(Wake{until, &c});
}

// Requests intended before the end that never went out, because the target
// could not keep up, charged to the last iteration (where the run ended).
void Worker::count_never_sent() {
  if (!schedule_) return;
  for (const auto& c : connections_) {
    uint64_t due = schedule_->due_before(c->index, windows_.end());
    if (due > c->next_k) stats_.back().never_sent += due - c->next_k;
  }
}

void Worker::collect_completions(Group& group) {
  int queued = 0;
  while (CURLMsg* msg = curl_multi_info_read(group.multi.get(), &queued)) {
    if (msg->msg != CURLMSG_DONE) continue;
    auto now = Clock::now();  // the request's end, read as soon as it is known
    CURL* easy = msg->easy_handle;
    CURLcode code = msg->data.result;  // msg dies with the removal below
    Connection* c = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &c);
    complete(*c, code, now);
  }
}

void Worker::complete(Connection& c, CURLcode code, Clock::time_point now) {
  int slot = windows_.slot_of(now - t0_);
  // Past the end of the run: abandoned like the requests still in flight.
  if (slot < windows_.slots())
    record(stats_[static_cast<size_t>(slot)], c, code, now, schedule_.has_value(),
           entries_[c.entry].success_statuses);
  curl_multi_remove_handle(c.group->multi.get(), c.easy.get());
  c.attached = false;
  if (fails_again_at_once(code)) return rest(c, now + kRetryDelay);
  // Same handle, a kept-alive connection; sent with the others that finished
  // in this round, once the ready sockets are all done.
  finished_now_.push_back(&c);
}

void Worker::attach_finished(Clock::time_point now) {
  for (Connection* c : finished_now_) attach(*c, now);
  finished_now_.clear();
}

// libcurl before 8.0.0 sets up HTTP/2 again on a reused prior-knowledge
// connection (plain http://), and every request after a connection's first
// fails with "Error in the HTTP2 framing layer" (curl issue 10634, fixed in
// 8.0.0; Debian 12 has 7.88.1). A run would report that as the service's
// error rate: refuse it up front instead.
void refuse_broken_h2c(const std::vector<TargetSpec>& requests) {
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  if (info->version_num >= 0x080000) return;
  for (const auto& r : requests) {
    if (r.http_version == "2" && same_name(std::string_view(r.url).substr(0, 7), "http://"))
      throw Error("HTTP/2 over plain http:// (" + shown_url(r) +
                  ") needs libcurl 8.0.0 or later: libcurl " + info->version +
                  " fails every request after a connection's first (curl issue 10634); "
                  "use https:// or http_version \"1.1\"");
  }
}

void Worker::attach_rested(Clock::time_point now) {
  while (!resting_.empty() && resting_.top().at <= now) {
    Connection* c = resting_.top().c;
    resting_.pop();
    attach(*c, now);
  }
}

}  // namespace

LoadResult CurlEngine::run(const LoadPlan& plan, const std::atomic<bool>& stop,
                           const IterationCallback& on_iteration) {
  check_plan(plan);
  ensure_fd_limit(plan.connections);
  init_curl_once();
  refuse_broken_h2c(requests_of(plan));
  // HTTP/1.1 to one origin: libcurl connects, the engine's own bytes and parser
  // do the exchange (curl_http1.h). The rest takes a libcurl transfer per request.
  if (curl_http1_serves(requests_of(plan))) return run_curl_http1(plan, stop, on_iteration);
  RunWindows windows{plan.warmup, plan.duration, plan.iterations};
  std::vector<std::unique_ptr<Worker>> workers;
  int first = 0;
  for (int share : split_connections(plan.connections, plan.threads)) {
    workers.push_back(std::make_unique<Worker>(plan, first, share, windows));
    first += share;
  }
  return run_load_threads(workers, plan, "curl", stop, on_iteration);
}

/// libcurl's words for a probe that failed, where they would mislead: its
/// "Out of memory" is mostly a header past its 100 KB limit, its "Unsupported
/// protocol" on an http:// URL an answer without a status line.
static std::string probe_failure(CURLcode code) {
  switch (code) {
    case CURLE_OUT_OF_MEMORY:
      return "the response's headers are too large to read (libcurl takes at most 100 KB)";
    case CURLE_UNSUPPORTED_PROTOCOL:
      return "the answer has no HTTP status line (HTTP/0.9, or not HTTP at all)";
    case CURLE_WEIRD_SERVER_REPLY:
      return "the answer is not valid HTTP";
    case CURLE_SSL_CONNECT_ERROR:
      return "the TLS handshake failed (is it an https:// URL for a plain-HTTP service? then "
             "use http://)";
    case CURLE_PEER_FAILED_VERIFICATION:
      return "its TLS certificate is not trusted (a test service's self-signed certificate? "
             "set target.tls_verify: false in the profile)";
    case CURLE_SSL_CACERT_BADFILE:
      return "the CA certificates cannot be read (is ca-certificates installed?)";
    default:
      return curl_easy_strerror(code);
  }
}

/// curl_easy_perform, but on a multi handle driven in short polls, so that
/// SIGINT/SIGTERM end a probe of a silent target at once, not at its timeout.
/// The stop flag is read directly: libcurl's wait is a library's, like
/// SQLite's busy handler (see stop_signal.h).
static CURLcode perform_until_stopped(CURL* easy) {
  constexpr int kPollMs = 50;
  MultiPtr multi(curl_multi_init());
  if (!multi || curl_multi_add_handle(multi.get(), easy) != CURLM_OK)
    throw Error("cannot create a libcurl handle");
  int running = 1;
  while (running > 0) {
    // Stopped: no verdict on the target; the caller's own stop handling ends the
    // run (an interrupted paired leg is stored as aborted, like one stopped mid-load).
    if (stop_requested().load()) {
      curl_multi_remove_handle(multi.get(), easy);
      return CURLE_OK;
    }
    if (curl_multi_perform(multi.get(), &running) != CURLM_OK) break;
    if (running > 0) curl_multi_poll(multi.get(), nullptr, 0, kPollMs, nullptr);
  }
  CURLcode code = CURLE_RECV_ERROR;
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi.get(), &left))
    if (msg->msg == CURLMSG_DONE) code = msg->data.result;
  curl_multi_remove_handle(multi.get(), easy);
  return code;
}

/// A probe that timed out after the target had answered something: "cannot
/// reach" sent users looking at the network for a server that sends its
/// headers a byte at a time, or "100 Continue" for ever (issue 41, item 20).
static void slow_answer(CURL* easy, const TargetSpec& target, Nanos timeout) {
  long status = 0;
  long header_bytes = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(easy, CURLINFO_HEADER_SIZE, &header_bytes);
  auto within = " within the " + format_duration(timeout) + " timeout";
  if (status >= 100 && status < 200)
    throw Error(shown_url(target) + " answered only \"" + std::to_string(status) + " " +
                (status == 100 ? "Continue" : "informational") + "\"" + within +
                ", never a final status");
  if (header_bytes > 0 || status > 0)
    throw Error(shown_url(target) + " answered too slowly: " + std::to_string(header_bytes) +
                " bytes of headers" + within + ", and the answer still was not whole");
}

void curl_probe(const TargetSpec& target, Nanos timeout) {
  init_curl_once();
  SlistPtr headers = make_header_list(target);
  uint64_t bytes = 0;
  EasyPtr easy = make_easy(target, headers.get(), timeout, timeout, &bytes);
  CURLcode code = perform_until_stopped(easy.get());
  bool answered = code == CURLE_OUT_OF_MEMORY || code == CURLE_UNSUPPORTED_PROTOCOL ||
                  code == CURLE_WEIRD_SERVER_REPLY;
  // The target did answer these: "cannot reach" would send the user looking at the network.
  if (answered)
    throw Error(shown_url(target) + " answered, but " + probe_failure(code) +
                "; perfgate needs valid HTTP/1.1 or HTTP/2 answers");
  if (code == CURLE_OPERATION_TIMEDOUT) slow_answer(easy.get(), target, timeout);
  // A plain-HTTP server waits for a request line that a TLS ClientHello never
  // completes: over https:// that is a timeout (libcurl records no connect time
  // for a failed transfer, so the hint cannot be surer than "if").
  if (code == CURLE_OPERATION_TIMEDOUT && target.url.rfind("https://", 0) == 0)
    throw Error("cannot reach " + shown_url(target) + ": " + probe_failure(code) +
                " (if the service speaks plain HTTP, its TLS handshake never finishes: use "
                "http://)");
  if (code == CURLE_COULDNT_CONNECT)
    throw NothingListening("cannot reach " + shown_url(target) +
                           ": nothing accepts connections there (no server listening?)");
  if (code != CURLE_OK)
    throw Error("cannot reach " + shown_url(target) + ": " + probe_failure(code));
}

}  // namespace perfgate
