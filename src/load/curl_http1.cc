#include "curl_http1.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ascii_case.h"
#include "curl_handles.h"
#include "epoll_set.h"
#include "http1_worker.h"
#include "perfgate/core/error.h"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Where a request goes, and the parts its bytes need.
struct Origin {
  bool tls = false;
  HttpUrl url;
};

// The native engine's URL parser, for https:// too (port 443 unless written);
// nullopt for what it refuses (user info, a bad port), which libcurl then
// handles a transfer at a time.
std::optional<Origin> parse_origin(const std::string& url) {
  Origin out;
  out.tls = starts_with_nocase(url, "https://");
  if (!out.tls && !starts_with_nocase(url, "http://")) return std::nullopt;
  try {
    out.url = parse_http_url("http://" + url.substr(out.tls ? 8 : 7));
  } catch (const Error&) {
    return std::nullopt;
  }
  const HttpUrl& u = out.url;
  bool port_written = u.host_header != u.host && u.host_header != "[" + u.host + "]";
  if (out.tls && !port_written) out.url.port = 443;
  return out;
}

bool same_origin(const Origin& a, const Origin& b) {
  return a.tls == b.tls && a.url.port == b.url.port &&
         lowercase(a.url.host) == lowercase(b.url.host);
}

ErrorKind kind_of(CURLcode code) {
  ErrorCounts e;
  count_transfer_error(code, e);
  if (e.connect) return &ErrorCounts::connect;
  if (e.timeout) return &ErrorCounts::timeout;
  if (e.read) return &ErrorCounts::read;
  if (e.write) return &ErrorCounts::write;
  return &ErrorCounts::other;
}

/// Connections that libcurl opens (CURLOPT_CONNECT_ONLY, on multi handles of a
/// few connections each, through its socket interface on the worker's epoll
/// set) and hands over once connected: their socket then waits in that set
/// for the worker, and bytes go through curl_easy_send and curl_easy_recv
/// (TLS included). A handle stays on its multi handle while its connection
/// lives: removing it is what closes the connection.
class CurlConnections {
 public:
  struct Group;
  struct Link {
    void* owner = nullptr;
    EasyPtr easy;
    Group* group = nullptr;
    curl_socket_t socket = CURL_SOCKET_BAD;  // set once connected, when it is the worker's
    bool attached = false;                   // on its multi handle: connecting or connected
  };
  struct Group {
    CurlConnections* self = nullptr;
    MultiPtr multi;
    std::optional<Clock::time_point> due;  // libcurl's next timeout on it
    int links = 0;
  };
  /// What the connections go to.
  struct Target {
    std::string url;
    bool tls = false;
    bool verify = true;
    Nanos connect_timeout{0};
  };

  CurlConnections(EpollSet& epoll, const Target& target) : epoll_(&epoll), target_(&target) {}
  ~CurlConnections();

  void adopt(Link& link, void* owner);
  ErrorKind open(Link& link, void* owner);
  // Connects finish in progress(): their sockets are libcurl's until then.
  Dial connect_result(Link&, void*) { return {}; }
  template <class OnConnected>
  void progress(Clock::time_point now, OnConnected&& on_connected);
  std::optional<Clock::time_point> due() const;
  void* owner_of(const epoll_event& ev);
  void want_write(Link& link, void* owner, bool on) {
    set_interest(link.socket, owner, on ? EPOLLIN | EPOLLOUT : EPOLLIN, EPOLL_CTL_MOD);
  }
  Io send(Link& link, std::string_view bytes);
  Io recv(Link& link, char* buffer, size_t size);
  bool short_read_drains() const { return !target_->tls; }
  void close(Link& link);
  bool is_open(const Link& link) const { return link.socket != CURL_SOCKET_BAD; }

 private:
  // What the epoll set holds for a socket while libcurl connects it.
  struct SocketState {
    Group* group = nullptr;  // whose multi handle it belongs to
    uint32_t events = 0;     // in the set with these; 0: not in the set
    bool wanted = false;     // libcurl waits on it
    bool handed = false;     // connected and handed over: no longer libcurl's
  };

  static int on_socket(CURL* easy, curl_socket_t s, int what, void* group, void* socketp);
  static curl_socket_t open_socket(void* self, curlsocktype purpose, curl_sockaddr* address);
  static int close_socket(void* self, curl_socket_t s);
  SocketState& state_of(curl_socket_t s);
  void watch(Group& group, curl_socket_t s, int what);
  void set_interest(curl_socket_t s, void* owner, uint32_t events, int op);
  void act(Group& group, curl_socket_t s, int flags);
  ErrorKind hand_over(Link& link);

  EpollSet* epoll_;
  const Target* target_;
  std::vector<SocketState> sockets_;  // by socket number
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<std::pair<Link*, CURLcode>> finished_;  // connects done, to hand over
  std::vector<std::pair<Link*, CURLcode>> handing_;   // the same, being handed
};

// libcurl's own sockets are told apart from the worker's connections in the
// epoll set by the low bit (a connection's address is even).
uint64_t tag_of(curl_socket_t s) {
  return (static_cast<uint64_t>(s) << 1) | 1u;
}

CurlConnections::~CurlConnections() {
  // The worker closed its connections; the multi handles go now, while their
  // callbacks can still reach this object.
  for (auto& g : groups_) g->multi.reset();
}

void CurlConnections::adopt(Link& link, void* owner) {
  if (groups_.empty() || groups_.back()->links == kConnectionsPerMulti) {
    auto g = std::make_unique<Group>();
    g->self = this;
    g->multi.reset(curl_multi_init());
    if (!g->multi) throw Error("cannot create a libcurl multi handle");
    CURLM* m = g->multi.get();
    curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, &CurlConnections::on_socket);
    curl_multi_setopt(m, CURLMOPT_SOCKETDATA, g.get());
    curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, &store_curl_timer<Group>);
    curl_multi_setopt(m, CURLMOPT_TIMERDATA, g.get());
    groups_.push_back(std::move(g));
  }
  link.owner = owner;
  link.group = groups_.back().get();
  ++link.group->links;
  link.easy.reset(curl_easy_init());
  if (!link.easy) throw Error("cannot create a libcurl handle");
  CURL* h = link.easy.get();
  curl_easy_setopt(h, CURLOPT_URL, target_->url.c_str());
  curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
  // TLS offers HTTP/1.1 alone (ALPN): the bytes that follow are HTTP/1.1.
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  set_common_options(h, target_->connect_timeout);
  set_tls_verify(h, target_->verify);
  curl_easy_setopt(h, CURLOPT_PRIVATE, &link);
  curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, &CurlConnections::open_socket);
  curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, this);
  curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, &CurlConnections::close_socket);
  curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, this);
}

// The connect starts on the multi handle's next timeout action (a timer of 0).
ErrorKind CurlConnections::open(Link& link, void*) {
  close(link);
  if (curl_multi_add_handle(link.group->multi.get(), link.easy.get()) != CURLM_OK)
    return &ErrorCounts::other;
  link.attached = true;
  return nullptr;
}

void CurlConnections::close(Link& link) {
  if (!link.attached) return;
  // A connect that finished but was not handed over yet (given up on meanwhile).
  std::erase_if(finished_, [&link](const auto& f) { return f.first == &link; });
  // Closes the connection, and its socket leaves the epoll set with it.
  curl_multi_remove_handle(link.group->multi.get(), link.easy.get());
  link.attached = false;
  link.socket = CURL_SOCKET_BAD;
}

template <class OnConnected>
void CurlConnections::progress(Clock::time_point now, OnConnected&& on_connected) {
  for (auto& g : groups_) {
    if (!g->due || *g->due > now) continue;
    // libcurl reports a timeout only when it changes; should this action find
    // nothing expired yet (its clock rounds to the millisecond), look again
    // in a millisecond rather than never.
    g->due = now + milliseconds(1);
    act(*g, CURL_SOCKET_TIMEOUT, 0);
  }
  if (finished_.empty()) return;
  handing_.swap(finished_);
  for (auto& [link, code] : handing_) {
    ErrorKind failure = code == CURLE_OK ? hand_over(*link) : kind_of(code);
    on_connected(link->owner, failure);
  }
  handing_.clear();
}

// The connected socket, from now on in the set for its connection's events.
ErrorKind CurlConnections::hand_over(Link& link) {
  curl_socket_t s = CURL_SOCKET_BAD;
  curl_easy_getinfo(link.easy.get(), CURLINFO_ACTIVESOCKET, &s);
  if (s == CURL_SOCKET_BAD) return &ErrorCounts::other;
  SocketState& st = state_of(s);
  st.handed = true;
  st.wanted = false;
  set_interest(s, link.owner, EPOLLIN, st.events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD);
  st.events = EPOLLIN;
  link.socket = s;
  return nullptr;
}

std::optional<Clock::time_point> CurlConnections::due() const {
  std::optional<Clock::time_point> first;
  for (const auto& g : groups_) {
    if (g->due && (!first || *g->due < *first)) first = g->due;
  }
  if (!finished_.empty()) first = Clock::time_point{};  // at once
  return first;
}

void* CurlConnections::owner_of(const epoll_event& ev) {
  if ((ev.data.u64 & 1u) == 0) return ev.data.ptr;
  auto s = static_cast<curl_socket_t>(ev.data.u64 >> 1);
  SocketState& st = state_of(s);
  if (!st.wanted || !st.group) {
    // Left over from before libcurl let go of it: nothing waits on it.
    if (!st.handed && st.events) {
      set_interest(s, nullptr, 0, EPOLL_CTL_DEL);
      st.events = 0;
    }
    return nullptr;
  }
  int flags = ((ev.events & (EPOLLIN | EPOLLHUP)) ? CURL_CSELECT_IN : 0) |
              ((ev.events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
              ((ev.events & EPOLLERR) ? CURL_CSELECT_ERR : 0);
  act(*st.group, s, flags);
  return nullptr;
}

void CurlConnections::act(Group& group, curl_socket_t s, int flags) {
  int running = 0;
  curl_multi_socket_action(group.multi.get(), s, flags, &running);
  int queued = 0;
  while (CURLMsg* msg = curl_multi_info_read(group.multi.get(), &queued)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Link* link = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &link);
    finished_.emplace_back(link, msg->data.result);
  }
}

Io CurlConnections::send(Link& link, std::string_view bytes) {
  size_t n = 0;
  CURLcode code = curl_easy_send(link.easy.get(), bytes.data(), bytes.size(), &n);
  if (code == CURLE_OK) return {Io::done, n};
  return {code == CURLE_AGAIN ? Io::again : Io::failed};
}

Io CurlConnections::recv(Link& link, char* buffer, size_t size) {
  size_t n = 0;
  CURLcode code = curl_easy_recv(link.easy.get(), buffer, size, &n);
  if (code == CURLE_OK) return n > 0 ? Io{Io::done, n} : Io{Io::closed};
  return {code == CURLE_AGAIN ? Io::again : Io::failed};
}

int CurlConnections::on_socket(CURL*, curl_socket_t s, int what, void* group, void*) {
  auto* g = static_cast<Group*>(group);
  g->self->watch(*g, s, what);
  return 0;
}

curl_socket_t CurlConnections::open_socket(void* self, curlsocktype, curl_sockaddr* address) {
  // CLOEXEC, as libcurl's own opener does: a process started meanwhile must not keep them.
  curl_socket_t s = ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
  if (s >= 0) static_cast<CurlConnections*>(self)->state_of(s) = SocketState{};
  return s;
}

int CurlConnections::close_socket(void* self, curl_socket_t s) {
  // Closing takes it out of the epoll set (no other descriptor shares it).
  static_cast<CurlConnections*>(self)->state_of(s) = SocketState{};
  return ::close(s);
}

CurlConnections::SocketState& CurlConnections::state_of(curl_socket_t s) {
  auto at = static_cast<size_t>(s);
  if (at >= sockets_.size()) sockets_.resize(at + 1);
  return sockets_[at];
}

void CurlConnections::watch(Group& group, curl_socket_t s, int what) {
  if (s < 0) return;
  SocketState& st = state_of(s);
  if (st.handed) return;  // the worker's now
  st.group = &group;
  st.wanted = what != CURL_POLL_REMOVE;
  uint32_t events =
      ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
  if (events == st.events) return;
  if (events == 0) {
    set_interest(s, nullptr, 0, EPOLL_CTL_DEL);
  } else {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag_of(s);
    epoll_ctl(epoll_->get(), st.events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev);
  }
  st.events = events;
}

void CurlConnections::set_interest(curl_socket_t s, void* owner, uint32_t events, int op) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = owner;
  epoll_ctl(epoll_->get(), op, s, &ev);
}

}  // namespace

bool curl_http1_serves(const std::vector<TargetSpec>& requests) {
  std::optional<Origin> first;
  for (const auto& r : requests) {
    if (r.http_version == "2") return false;
    std::optional<Origin> origin = parse_origin(r.url);
    if (!origin) return false;
    if (!first) first = origin;
    if (!same_origin(*origin, *first) || r.tls_verify != requests.front().tls_verify) return false;
  }
  return first.has_value();
}

LoadResult run_curl_http1(const LoadPlan& plan, const std::atomic<bool>& stop,
                          const IterationCallback& on_iteration) {
  std::vector<TargetSpec> requests = requests_of(plan);
  std::vector<HttpUrl> urls;
  for (const auto& r : requests) urls.push_back(parse_origin(r.url).value().url);
  const Http1Plan shared = make_http1_plan(plan, urls);
  const CurlConnections::Target target{.url = requests.front().url,
                                       .tls = parse_origin(requests.front().url)->tls,
                                       .verify = requests.front().tls_verify,
                                       .connect_timeout = plan.connect_timeout};
  return run_http1<CurlConnections>(
      shared, plan, "curl", stop, on_iteration,
      [&target](EpollSet& epoll) { return CurlConnections(epoll, target); });
}

}  // namespace perfgate
