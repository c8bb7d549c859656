#include "perfgate/curl_engine.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "perfgate/arrival_schedule.h"
#include "perfgate/error.h"
#include "perfgate/fd_limit.h"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The longest a load thread sleeps in curl_multi_poll: bounds how late `stop`
// and the end of a window are noticed.
constexpr milliseconds kMaxPoll{50};
// How long a handle rests after a failed connect (or a request that cannot be
// sent at all) before it tries again, so that a dead target costs no CPU.
constexpr milliseconds kRetryDelay{10};

struct EasyCleanup {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
struct MultiCleanup {
  void operator()(CURLM* multi) const { curl_multi_cleanup(multi); }
};
struct SlistFree {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using EasyPtr = std::unique_ptr<CURL, EasyCleanup>;
using MultiPtr = std::unique_ptr<CURLM, MultiCleanup>;
using SlistPtr = std::unique_ptr<curl_slist, SlistFree>;

// curl_global_init is not thread-safe and must run once per process; doing it
// on first use keeps it out of static initialisation.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("cannot initialize libcurl");
  });
}

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
  if (!has_expect) append(list, "Expect:");
  return list;
}

// Bodies are discarded as they stream in, so memory stays flat whatever the
// response size; only their length is kept (headers and bodies, as wrk counts).
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

long to_ms(Nanos d) {
  return std::max<long>(1, std::chrono::duration_cast<milliseconds>(d).count());
}

// What one request shape sets on a handle; a handle of a mix gets it again
// whenever its connection sends another entry than the last.
void apply_entry(CURL* h, const TargetSpec& target, curl_slist* headers) {
  curl_easy_setopt(h, CURLOPT_URL, target.url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, nullptr);
  curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);  // undoes the last entry's NOBODY or POST
  set_method_and_body(h, target);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  long verify = target.tls_verify ? 1L : 0L;  // off only by the profile's explicit opt-out
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, verify);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
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
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, to_ms(connect_timeout));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, to_ms(timeout));
  // A gate measures the target, never a proxy picked up from the environment.
  curl_easy_setopt(h, CURLOPT_PROXY, "");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_bytes);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, bytes);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, count_bytes);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, bytes);
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

// One keep-alive connection: an easy handle and the request it has in flight.
struct Connection {
  Connection(int index_, const std::vector<TargetSpec>& entries) : index(index_), picker(entries) {}
  int index;  // among all the run's connections: its place in the open-model schedule
  EasyPtr easy;
  WeightedRoundRobin picker;
  size_t entry = 0;              // of the mix, set on the handle
  uint64_t next_k = 0;           // open model: its next request in the schedule
  Clock::time_point started{};   // when the request was (re)added: the actual send
  Clock::time_point intended{};  // open model: when it should have been; else `started`
  Clock::time_point retry_at{};  // resting after a failure until then
  uint64_t bytes = 0;            // of the request in flight
  bool attached = false;         // added to the multi handle
};

void record(IterationStats& stats, const Connection& c, CURLcode code, Clock::time_point now,
            bool open_model) {
  stats.bytes_read += c.bytes;
  if (code != CURLE_OK) {
    count_transfer_error(code, stats.errors);
    return;
  }
  long status = 0;
  curl_easy_getinfo(c.easy.get(), CURLINFO_RESPONSE_CODE, &status);
  ++stats.responses;
  stats.statuses.count(static_cast<int>(status));
  // Open model: from the intended send, so that a stalled target is charged
  // for every request it kept waiting (coordinated omission, wrk2's way).
  stats.latency.record(now - c.intended);
  if (open_model) stats.latency_uncorrected.record(now - c.started);
}

// One load thread. Built on run()'s thread, so that a setup failure is an Error
// from run(); afterwards only its own thread touches it until the join, except
// for the slots it has closed, which are final and read by run()'s thread.
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
  void attach(Connection& c, Clock::time_point now);
  void send(Connection& c, Clock::time_point now, Clock::time_point intended);
  void rest(Connection& c, Clock::time_point until);
  void count_never_sent();
  void collect_completions(Clock::time_point t0);
  void complete(Connection& c, CURLcode code, Clock::time_point now, Clock::time_point t0);
  void attach_rested(Clock::time_point now);
  int poll_timeout_ms(Clock::time_point now, Clock::time_point end) const;

  std::vector<TargetSpec> entries_;
  std::vector<SlistPtr> headers_;  // one per entry; declared first: outlives the handles
  std::optional<ArrivalSchedule> schedule_;
  Clock::time_point t0_{};
  MultiPtr multi_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<Connection*> resting_;
  std::vector<IterationStats> stats_;  // one per slot: warm-up, then iterations
  RunWindows windows_;
  std::atomic<int> closed_{0};
  std::atomic<bool> finished_{false};
};

Worker::Worker(const LoadPlan& plan, int first_index, int connections, RunWindows windows)
    : entries_(requests_of(plan)),
      multi_(curl_multi_init()),
      stats_(static_cast<size_t>(windows.slots())),
      windows_(windows) {
  if (!multi_) throw Error("cannot create a libcurl multi handle");
  // Exactly this thread's connections, all kept open between requests: a
  // finished handle returns its connection to the cache, and the re-added
  // handle takes it back instead of connecting again.
  curl_multi_setopt(multi_.get(), CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(connections));
  curl_multi_setopt(multi_.get(), CURLMOPT_MAXCONNECTS, static_cast<long>(connections));
  for (const auto& entry : entries_) headers_.push_back(make_header_list(entry));
  if (plan.rate > 0) schedule_.emplace(plan.rate, plan.connections);
  for (int i = 0; i < connections; ++i) {
    auto c = std::make_unique<Connection>(first_index + i, entries_);
    c->easy =
        make_easy(entries_[0], headers_[0].get(), plan.timeout, plan.connect_timeout, &c->bytes);
    curl_easy_setopt(c->easy.get(), CURLOPT_PRIVATE, c.get());
    connections_.push_back(std::move(c));
  }
}

Worker::~Worker() {
  // Requests still in flight are abandoned, as wrk does: detach before cleanup.
  for (auto& c : connections_) {
    if (c->attached) curl_multi_remove_handle(multi_.get(), c->easy.get());
  }
}

void Worker::run(Clock::time_point t0, const std::atomic<bool>& stop,
                 const std::atomic<bool>& abort) {
  const auto end = t0 + windows_.end();
  t0_ = t0;
  for (auto& c : connections_) attach(*c, Clock::now());
  for (;;) {
    auto now = Clock::now();
    if (now >= end) count_never_sent();  // before the last slot is published
    // Every later completion reads a later clock, so it lands in this slot or
    // a later one: the slots before it are final and can be published.
    closed_.store(windows_.slot_of(now - t0), std::memory_order_release);
    if (now >= end || stop.load(std::memory_order_relaxed) || abort.load()) break;
    int running = 0;
    curl_multi_perform(multi_.get(), &running);
    collect_completions(t0);
    attach_rested(Clock::now());
    curl_multi_poll(multi_.get(), nullptr, 0, poll_timeout_ms(Clock::now(), end), nullptr);
  }
  finished_.store(true, std::memory_order_release);
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
  if (entry != c.entry) apply_entry(c.easy.get(), entries_[entry], headers_[entry].get());
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
  c.attached = curl_multi_add_handle(multi_.get(), c.easy.get()) == CURLM_OK;
  if (!c.attached) rest(c, now + kRetryDelay);
}

void Worker::rest(Connection& c, Clock::time_point until) {
  c.retry_at = until;
  resting_.push_back(&c);
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

void Worker::collect_completions(Clock::time_point t0) {
  int queued = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_.get(), &queued)) {
    if (msg->msg != CURLMSG_DONE) continue;
    auto now = Clock::now();  // the request's end, read as soon as it is known
    CURL* easy = msg->easy_handle;
    CURLcode code = msg->data.result;  // msg dies with the removal below
    Connection* c = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &c);
    complete(*c, code, now, t0);
  }
}

void Worker::complete(Connection& c, CURLcode code, Clock::time_point now, Clock::time_point t0) {
  int slot = windows_.slot_of(now - t0);
  // Past the end of the run: abandoned like the requests still in flight.
  if (slot < windows_.slots())
    record(stats_[static_cast<size_t>(slot)], c, code, now, schedule_.has_value());
  curl_multi_remove_handle(multi_.get(), c.easy.get());
  c.attached = false;
  if (!fails_again_at_once(code)) {
    attach(c, now);  // same handle, same connection: keep-alive
    return;
  }
  c.retry_at = now + kRetryDelay;
  resting_.push_back(&c);
}

void Worker::attach_rested(Clock::time_point now) {
  auto rested = std::partition(resting_.begin(), resting_.end(),
                               [now](const Connection* c) { return c->retry_at > now; });
  std::vector<Connection*> ready(rested, resting_.end());
  resting_.erase(rested, resting_.end());
  for (Connection* c : ready) attach(*c, now);
}

int Worker::poll_timeout_ms(Clock::time_point now, Clock::time_point end) const {
  auto wake = std::min(end, now + kMaxPoll);
  for (const Connection* c : resting_) wake = std::min(wake, c->retry_at);
  // Rounded up: waking a fraction of a millisecond early would only spin.
  auto wait = std::chrono::ceil<milliseconds>(wake - now);
  return static_cast<int>(std::max<int64_t>(0, wait.count()));
}

}  // namespace

void count_transfer_error(int curl_code, ErrorCounts& errors) {
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      ++errors.connect;
      break;
    case CURLE_OPERATION_TIMEDOUT:
      ++errors.timeout;
      break;
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_WEIRD_SERVER_REPLY:
      ++errors.read;
      break;
    case CURLE_SEND_ERROR:
      ++errors.write;
      break;
    default:
      ++errors.other;
  }
}

std::vector<int> split_connections(int connections, int threads) {
  std::vector<int> shares(static_cast<size_t>(std::max(threads, 0)), 0);
  for (size_t i = 0; i < shares.size(); ++i)
    shares[i] = connections / threads + (static_cast<int>(i) < connections % threads ? 1 : 0);
  return shares;
}

void check_plan(const LoadPlan& plan) {
  if (plan.threads < 1) throw Error("load.threads must be at least 1");
  if (plan.connections < plan.threads)
    throw Error("load.connections (" + std::to_string(plan.connections) +
                ") must be at least load.threads (" + std::to_string(plan.threads) + ")");
  if (plan.iterations < 1) throw Error("repeat.count must be at least 1");
  if (plan.duration <= Nanos::zero()) throw Error("load.duration must be positive");
  if (plan.warmup < Nanos::zero()) throw Error("load.warmup must not be negative");
}

int RunWindows::slot_of(Nanos since_t0) const {
  if (since_t0 < warmup) return 0;
  int64_t whole = (since_t0 - warmup) / duration;
  return static_cast<int>(std::min<int64_t>(whole, iterations)) + 1;
}

LoadResult CurlEngine::run(const LoadPlan& plan, const std::atomic<bool>& stop,
                           const IterationCallback& on_iteration) {
  check_plan(plan);
  ensure_fd_limit(plan.connections);
  init_curl_once();
  RunWindows windows{plan.warmup, plan.duration, plan.iterations};
  std::vector<std::unique_ptr<Worker>> workers;
  int first = 0;
  for (int share : split_connections(plan.connections, plan.threads)) {
    workers.push_back(std::make_unique<Worker>(plan, first, share, windows));
    first += share;
  }
  return run_load_threads(workers, plan, "curl", stop, on_iteration);
}

void curl_probe(const TargetSpec& target, Nanos timeout) {
  init_curl_once();
  SlistPtr headers = make_header_list(target);
  uint64_t bytes = 0;
  EasyPtr easy = make_easy(target, headers.get(), timeout, timeout, &bytes);
  CURLcode code = curl_easy_perform(easy.get());
  if (code != CURLE_OK)
    throw Error("cannot reach " + redacted_url(target.url) + ": " + curl_easy_strerror(code));
}

}  // namespace perfgate
