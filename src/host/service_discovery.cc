#include "perfgate/host/service_discovery.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "perfgate/core/bounded_read.h"
#include "perfgate/host/saturation.h"

namespace perfgate {
namespace fs = std::filesystem;
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    auto end = text.find(sep);
    out.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  for (auto w : split(line, ' '))
    if (!w.empty()) out.push_back(w);
  return out;
}

template <typename T>
std::optional<T> number(std::string_view word, int base = 10) {
  T value{};
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value, base);
  if (ec != std::errc{} || end != word.data() + word.size() || word.empty()) return std::nullopt;
  return value;
}

// The kernel prints each 32-bit word of the address in host byte order: parsed
// as a number and copied back to memory, the bytes come out in network order.
std::optional<std::string> hex_address(std::string_view hex, bool ipv6) {
  size_t words32 = ipv6 ? 4 : 1;
  if (hex.size() != words32 * 8) return std::nullopt;
  unsigned char bytes[16];
  for (size_t i = 0; i < words32; ++i) {
    auto word = number<uint32_t>(hex.substr(i * 8, 8), 16);
    if (!word) return std::nullopt;
    std::memcpy(bytes + i * 4, &*word, 4);
  }
  char text[INET6_ADDRSTRLEN];
  if (!inet_ntop(ipv6 ? AF_INET6 : AF_INET, bytes, text, sizeof text)) return std::nullopt;
  std::string out = text;
  // An IPv4 address reached through a dual-stack socket reads the same as itself.
  if (out.starts_with("::ffff:") && out.find('.') != std::string::npos) out = out.substr(7);
  return out;
}

std::string host_port(const std::string& address, uint16_t port) {
  return (address.find(':') != std::string::npos ? "[" + address + "]" : address) + ":" +
         std::to_string(port);
}

bool is_ip_literal(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// A wildcard listener takes every address; a loopback name any loopback one; a
// name perfgate does not resolve here any address of this host.
bool address_matches(const std::string& listen, const std::string& host) {
  if (listen == "0.0.0.0" || listen == "::") return true;
  if (host == "localhost" || host.ends_with(".localhost"))
    return listen.starts_with("127.") || listen == "::1";
  if (is_ip_literal(host)) return listen == host;
  return true;
}

std::optional<uint64_t> socket_inode(std::string_view link) {
  if (!link.starts_with("socket:[") || !link.ends_with("]")) return std::nullopt;
  return number<uint64_t>(link.substr(8, link.size() - 9));
}

std::optional<std::string> cgroup_of(const ProcReader& proc, pid_t pid) {
  auto text = proc.read(std::to_string(pid) + "/cgroup");
  if (!text) return std::nullopt;
  return parse_cgroup_v2_path(*text);
}

std::string comm_of(const ProcReader& proc, pid_t pid) {
  auto stat = proc.process(pid);
  return stat ? stat->comm : "pid " + std::to_string(pid);
}

std::vector<std::string> cmdline_of(const ProcReader& proc, pid_t pid) {
  std::vector<std::string> args;
  auto text = proc.read(std::to_string(pid) + "/cmdline").value_or("");
  for (auto arg : split(text, '\0'))
    if (!arg.empty()) args.emplace_back(arg);
  return args;
}

// Its comm, which the kernel cuts at 15 bytes; whole from argv[0] where comm is
// that name cut ("demo-server-with-a-long-name", not "demo-server-wit").
std::string name_of(const ProcReader& proc, pid_t pid) {
  auto comm = comm_of(proc, pid);
  auto args = cmdline_of(proc, pid);
  if (args.empty()) return comm;
  auto base = fs::path(args.front()).filename().string();
  if (comm.size() == 15 && base.size() > comm.size() && base.starts_with(comm)) return base;
  return comm;
}

// Whether `pid` is `ancestor` or descends from it (at most 64 generations up).
bool descends_from(const ProcReader& proc, pid_t pid, pid_t ancestor) {
  for (int depth = 0; depth < 64; ++depth) {
    if (pid == ancestor) return true;
    auto stat = proc.process(pid);
    if (!stat || stat->ppid <= 1) return false;
    pid = stat->ppid;
  }
  return false;
}

// The listening sockets of one network namespace, as one of its processes sees them.
std::vector<TcpSocket> listeners(const ProcReader& proc, const std::string& net_dir) {
  std::vector<TcpSocket> out;
  for (bool ipv6 : {false, true})
    for (auto& s :
         parse_proc_net_tcp(proc.read(net_dir + (ipv6 ? "/tcp6" : "/tcp")).value_or(""), ipv6))
      if (s.listening) out.push_back(std::move(s));
  return out;
}

// The processes holding any of `inodes`, among `candidates`, lowest PID first.
// A process that vanished or whose fd folder is closed to us is skipped.
std::vector<pid_t> holders(const ProcReader& proc, const std::set<uint64_t>& inodes,
                           const std::vector<pid_t>& candidates, pid_t self) {
  std::vector<pid_t> out;
  for (pid_t pid : candidates) {
    if (pid == self) continue;
    auto links = proc.fd_links(pid);
    if (!links) continue;
    for (const auto& link : *links)
      if (auto inode = socket_inode(link); inode && inodes.count(*inode)) {
        out.push_back(pid);
        break;
      }
  }
  return out;
}

// Of several holders (a prefork server's workers, an SO_REUSEPORT group), the
// ones none of whose ancestors is also a holder: each is a tree's root.
std::vector<pid_t> tree_roots(const ProcReader& proc, const std::vector<pid_t>& holders) {
  std::vector<pid_t> roots;
  for (pid_t pid : holders) {
    bool nested = false;
    pid_t at = pid;
    for (int depth = 0; depth < 64 && !nested; ++depth) {
      auto stat = proc.process(at);
      if (!stat || stat->ppid <= 1) break;
      at = stat->ppid;
      nested = std::find(holders.begin(), holders.end(), at) != holders.end();
    }
    if (!nested) roots.push_back(pid);
  }
  return roots;
}

// docker-proxy's command line names the container's port: "-container-port 80".
std::optional<uint16_t> forwarded_port(const std::vector<std::string>& args) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "-container-port" || args[i] == "--container-port")
      return number<uint16_t>(args[i + 1]);
  return std::nullopt;
}

struct Found {
  std::vector<pid_t> roots;
  std::string how;
};

// The listener behind a forwarder: a process in another network namespace that
// listens on the forwarded port. Each namespace's table is read once, through
// the first of its processes.
std::optional<Found> behind_forwarder(const ProcReader& proc, pid_t forwarder, uint16_t port,
                                      const std::string& outside, pid_t self) {
  auto own_ns = proc.link(std::to_string(self) + "/ns/net");
  std::map<std::string, std::vector<pid_t>> by_ns;
  for (pid_t pid : proc.pids())
    if (auto ns = proc.link(std::to_string(pid) + "/ns/net"); ns && ns != own_ns)
      by_ns[*ns].push_back(pid);
  for (const auto& [ns, pids] : by_ns) {
    std::set<uint64_t> inodes;
    for (const auto& s : listeners(proc, std::to_string(pids.front()) + "/net"))
      if (s.port == port) inodes.insert(s.inode);
    if (inodes.empty()) continue;
    auto found = holders(proc, inodes, pids, self);
    if (found.empty()) continue;
    return Found{tree_roots(proc, found), "behind " + comm_of(proc, forwarder) + " pid " +
                                              std::to_string(forwarder) + " on " + outside +
                                              ", listening on port " + std::to_string(port) +
                                              " in another network namespace"};
  }
  return std::nullopt;
}

// The target's listener in perfgate's own network namespace, and who holds it.
ServiceSearch by_listener(const ProcReader& proc, const ServiceQuery& q, Found& found) {
  ServiceSearch out;
  std::set<uint64_t> inodes;
  std::string where;
  for (const auto& s : listeners(proc, "net"))
    if (s.port == q.port && address_matches(s.address, q.host)) {
      inodes.insert(s.inode);
      if (where.empty()) where = host_port(s.address, s.port);
    }
  if (inodes.empty()) return out;
  auto found_pids = holders(proc, inodes, proc.pids(), q.self);
  if (found_pids.empty()) {
    out.unattributed_listener = where;
    return out;
  }
  found.roots = tree_roots(proc, found_pids);
  found.how = "listening on " + where;
  if (found.roots.size() == 1)
    if (auto port = forwarded_port(cmdline_of(proc, found.roots.front())))
      if (auto behind = behind_forwarder(proc, found.roots.front(), *port, where, q.self))
        found = *behind;
  AttributedService s;
  s.listener = where;
  out.service = s;
  return out;
}

// The process that serves, when perfgate started a shell or a wrapper (sh -c
// without exec, env, nice, timeout...) and a descendant of it holds the
// target's listener: that one, not the process started, is the service to
// name. Nothing when the started process holds it itself, or none is seen.
std::optional<pid_t> serving_descendant(const ProcReader& proc, const ServiceQuery& q) {
  if (q.port == 0) return std::nullopt;
  std::set<uint64_t> inodes;
  for (const auto& s : listeners(proc, "net"))
    if (s.port == q.port && address_matches(s.address, q.host)) inodes.insert(s.inode);
  if (inodes.empty()) return std::nullopt;
  std::vector<pid_t> found;
  for (pid_t pid : holders(proc, inodes, proc.pids(), q.self)) {
    if (pid == *q.started) return std::nullopt;
    if (descends_from(proc, pid, *q.started)) found.push_back(pid);
  }
  auto roots = tree_roots(proc, found);
  if (roots.empty()) return std::nullopt;
  return roots.front();
}

// A FIFO would block the read until a writer came; a number past pid_t's
// range wrapped (4294967297 became 1, init).
std::optional<pid_t> pid_from_file(const std::string& path) {
  if (auto kind = special_file_kind(path); !kind.empty())
    throw Error("service.pid_file " + path + ": is " + kind + ", not a file holding a PID");
  std::ifstream in(path);
  long long pid = 0;
  if (in >> pid && pid > 0 && pid <= std::numeric_limits<pid_t>::max())
    return static_cast<pid_t>(pid);
  return std::nullopt;
}

// `prefix` names a container when one component of the path holds it as a
// whole word's start: docker-3f2a....scope, /docker/3f2a..., libpod-3f2a....
bool names_container(const std::string& cgroup, const std::string& prefix) {
  for (auto part : split(cgroup, '/')) {
    auto at = part.find(prefix);
    if (at == std::string_view::npos) continue;
    if (at == 0 || part[at - 1] == '-' || part[at - 1] == ':' || part[at - 1] == '_') return true;
  }
  return false;
}

}  // namespace

std::vector<TcpSocket> parse_proc_net_tcp(std::string_view text, bool ipv6) {
  std::vector<TcpSocket> out;
  for (auto line : split(text, '\n')) {
    auto w = words(line);
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
    if (w.size() < 10 || w[0] == "sl") continue;
    auto colon = w[1].find(':');
    if (colon == std::string_view::npos) continue;
    auto address = hex_address(w[1].substr(0, colon), ipv6);
    auto port = number<uint16_t>(w[1].substr(colon + 1), 16);
    auto inode = number<uint64_t>(w[9]);
    if (!address || !port || !inode) continue;
    out.push_back({*address, *port, *inode, w[3] == "0A"});
  }
  return out;
}

std::optional<std::string> parse_cgroup_v2_path(std::string_view text) {
  for (auto line : split(text, '\n'))
    if (line.starts_with("0::")) return std::string(line.substr(3));
  return std::nullopt;
}

CgroupReader::CgroupReader(const fs::path& root) {
  if (root.empty()) return;  // none: a process tree is all there is
  std::ifstream in(root / "proc/mounts");
  std::string line;
  while (std::getline(in, line)) {
    auto w = words(line);
    if (w.size() >= 3 && w[2] == "cgroup2") {
      mount_ = root / fs::path(std::string(w[1])).relative_path();
      return;
    }
  }
}

bool CgroupReader::exists(const std::string& cgroup) const {
  std::error_code ec;
  return available() && fs::exists(mount_ / fs::path(cgroup).relative_path() / "cpu.stat", ec);
}

std::optional<uint64_t> CgroupReader::usage_usec(const std::string& cgroup) const {
  if (!available()) return std::nullopt;
  std::ifstream in(mount_ / fs::path(cgroup).relative_path() / "cpu.stat");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value)
    if (key == "usage_usec") return value;
  return std::nullopt;
}

std::optional<uint64_t> CgroupReader::memory_bytes(const std::string& cgroup) const {
  if (!available()) return std::nullopt;
  std::ifstream in(mount_ / fs::path(cgroup).relative_path() / "memory.current");
  uint64_t value = 0;
  if (in >> value) return value;
  return std::nullopt;
}

std::optional<uint64_t> CgroupReader::cpu_wait_usec(const std::string& cgroup) const {
  if (!available()) return std::nullopt;
  auto text = read_text(mount_ / fs::path(cgroup).relative_path() / "cpu.pressure");
  auto p = parse_pressure(text.value_or(""));
  if (!p) return std::nullopt;
  return p->some_total_us;
}

std::string AttributedService::describe() const {
  std::string out = name;
  if (pid > 0) out += " pid " + std::to_string(pid);
  out += " (" + how + ")";
  if (!cgroup.empty()) out += ", cgroup " + cgroup;
  return out;
}

bool own_cgroup(const std::string& cgroup, const std::string& perfgate_cgroup) {
  if (cgroup.empty() || cgroup == "/") return false;
  if (perfgate_cgroup == cgroup || perfgate_cgroup.starts_with(cgroup + "/")) return false;
  auto leaf = cgroup.substr(cgroup.rfind('/') + 1);
  if (leaf.ends_with(".slice") || leaf == "init.scope") return false;
  if (leaf.starts_with("session-") && leaf.ends_with(".scope")) return false;
  if (leaf.starts_with("user@") && leaf.ends_with(".service")) return false;
  return true;
}

std::string unattributed_advice(const std::string& listener) {
  return "the listener on " + listener +
         " is held by no process perfgate can see, so its CPU counts as foreign: name the "
         "service with service.pid_file, service.process_name, service.cgroup or "
         "service.container";
}

std::vector<std::string> listening_on(const ProcReader& proc, const std::vector<pid_t>& pids) {
  std::vector<std::string> out;
  if (pids.empty()) return out;
  auto sockets = listeners(proc, std::to_string(pids.front()) + "/net");
  for (pid_t pid : pids) {
    for (const auto& link : proc.fd_links(pid).value_or(std::vector<std::string>{})) {
      auto inode = socket_inode(link);
      if (!inode) continue;
      for (const auto& socket : sockets) {
        auto address = host_port(socket.address, socket.port);
        if (socket.inode == *inode && std::find(out.begin(), out.end(), address) == out.end())
          out.push_back(address);
      }
    }
  }
  return out;
}

namespace {

// The process perfgate started: its whole tree is the service's either way;
// the name is the server's (a shell that runs it is named through).
AttributedService started_service(const ProcReader& proc, const ServiceQuery& q) {
  AttributedService s;
  s.pid = *q.started;
  s.roots = {s.pid};
  s.name = comm_of(proc, s.pid);
  s.how = "started by perfgate";
  if (auto serving = serving_descendant(proc, q)) {
    s.how = "started by perfgate through " + s.name + ", which runs it as pid " +
            std::to_string(*serving);
    s.name = name_of(proc, *serving);
  }
  return s;
}

}  // namespace

ServiceSearch find_service(const ProcReader& proc, const CgroupReader& cgroups,
                           const ServiceQuery& q) {
  ServiceSearch out;
  std::string self_cgroup = cgroup_of(proc, q.self).value_or("");
  // A process found, with its cgroup when that cgroup is the service's alone.
  auto attribute = [&](std::vector<pid_t> roots, std::string how, bool whole_cgroup) {
    // perfgate itself cannot be the service. A process it runs under can (a
    // test harness serving in-process), but its tree is the service's without
    // perfgate (ProcReader::process_tree's `except`): a pid_file naming PID 1
    // of a container pinned perfgate's own threads with it (issue 50, item 8).
    for (pid_t root : roots)
      if (q.self > 0 && root == q.self)
        throw Error("the service " + how + " is PID " + std::to_string(root) +
                    ", perfgate itself: it cannot be the service under test");
    AttributedService s = out.service.value_or(AttributedService{});
    s.pid = roots.empty() ? 0 : roots.front();
    s.name = comm_of(proc, s.pid);
    s.roots = roots;
    s.how = std::move(how);
    if (whole_cgroup && cgroups.available()) {
      auto cg = cgroup_of(proc, s.pid);
      bool shared = std::any_of(roots.begin(), roots.end(),
                                [&](pid_t p) { return cgroup_of(proc, p) != cg; });
      if (cg && !shared && own_cgroup(*cg, self_cgroup) && cgroups.exists(*cg)) s.cgroup = *cg;
    }
    out.service = s;
  };
  if (q.started) {
    out.service = started_service(proc, q);
    return out;
  }
  if (!q.cgroup.empty()) {
    AttributedService s;
    s.cgroup = q.cgroup.starts_with("/") ? q.cgroup : "/" + q.cgroup;
    s.name = s.cgroup.substr(s.cgroup.rfind('/') + 1);
    s.how = "named by service.cgroup";
    out.service = s;
    return out;
  }
  if (!q.container.empty()) {
    for (pid_t pid : proc.pids()) {
      auto cg = cgroup_of(proc, pid);
      if (!cg || !names_container(*cg, q.container)) continue;
      attribute({pid}, "named by service.container", false);
      out.service->cgroup = *cg;
      return out;
    }
    return out;
  }
  if (!q.pid_file.empty()) {
    if (auto pid = pid_from_file(q.pid_file)) attribute({*pid}, "named by service.pid_file", true);
    return out;
  }
  if (!q.process_name.empty()) {
    if (auto pid = proc.find_process(q.process_name))
      attribute({*pid}, "named by service.process_name", true);
    return out;
  }
  if (!q.local || q.port == 0) return out;
  Found found;
  auto search = by_listener(proc, q, found);
  out.unattributed_listener = search.unattributed_listener;
  if (!search.service || found.roots.empty()) return out;
  out.service = search.service;
  attribute(found.roots, found.how, true);
  return out;
}

std::optional<std::pair<std::string, uint16_t>> url_host_port(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return std::nullopt;
  bool tls = url.compare(0, scheme, "https") == 0;
  auto rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  std::string host, port;
  if (rest.starts_with("[")) {
    auto close = rest.find(']');
    if (close == std::string::npos) return std::nullopt;
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else {
    auto colon = rest.find(':');
    host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (host.empty()) return std::nullopt;
  if (port.empty()) return std::make_pair(host, uint16_t(tls ? 443 : 80));
  auto n = number<uint16_t>(port);
  if (!n) return std::nullopt;
  return std::make_pair(host, *n);
}

namespace {

// An address of one of this host's interfaces, or this host's own name. Names
// are not resolved: a lookup could block, and CI targets use IPs or localhost.
bool is_this_host(const std::string& host) {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && host == name) return true;
  if (!is_ip_literal(host)) return false;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a && !found; a = a->ifa_next) {
    if (!a->ifa_addr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    int family = a->ifa_addr->sa_family;
    if (family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    else if (family == AF_INET6)
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, text,
                sizeof text);
    found = host == text;
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

bool in_container(const ProcReader& proc) {
  std::error_code ec;
  if (fs::exists(proc.root() / ".dockerenv", ec) ||
      fs::exists(proc.root() / "run/.containerenv", ec))
    return true;
  auto cgroup = proc.read("1/cgroup").value_or("");
  for (const char* word : {"docker", "kubepods", "containerd", "libpod"})
    if (cgroup.find(word) != std::string::npos) return true;
  return false;
}

ServiceSearch find_service(const Profile& profile, std::optional<pid_t> started) {
  ServiceQuery q;
  q.started = started;
  q.self = getpid();
  if (profile.service) {
    q.pid_file = profile.service->pid_file;
    q.process_name = profile.service->process_name;
    q.cgroup = profile.service->cgroup;
    q.container = profile.service->container;
  }
  if (auto hp = url_host_port(profile.target.url)) {
    q.host = hp->first;
    q.port = hp->second;
    q.local = is_loopback_url(profile.target.url) || is_this_host(q.host);
  }
  auto out = find_service(ProcReader("/"), CgroupReader("/"), q);
  if (!out.service && !q.local && in_container(ProcReader("/")))
    out.note =
        "perfgate runs in a container and the target is not on it: the service's "
        "processes are out of sight, so it is judged as a remote service (the host_cpu "
        "rule) and has no CPU figures";
  return out;
}

}  // namespace perfgate
