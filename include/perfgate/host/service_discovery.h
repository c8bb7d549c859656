#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/host/proc_reader.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

/// One line of /proc/net/tcp or tcp6.
struct TcpSocket {
  std::string address;  // "127.0.0.1", "::1", "0.0.0.0", "::"
  uint16_t port = 0;
  uint64_t inode = 0;
  bool listening = false;  // state 0A
};

/// Malformed lines are skipped, never thrown.
std::vector<TcpSocket> parse_proc_net_tcp(std::string_view text, bool ipv6);
/// "0::/system.slice/x.service" of /proc/PID/cgroup: the cgroup v2 path, if any.
std::optional<std::string> parse_cgroup_v2_path(std::string_view text);

/// A cgroup v2 hierarchy under a root folder ("/" live, a captured tree in tests).
/// The mount point comes from /proc/mounts; hybrid hosts mount it at
/// /sys/fs/cgroup/unified.
class CgroupReader {
 public:
  explicit CgroupReader(const std::filesystem::path& root = "/");
  bool available() const { return !mount_.empty(); }
  /// cpu.stat usage_usec: every task that ever ran in the cgroup, exited ones too.
  std::optional<uint64_t> usage_usec(const std::string& cgroup) const;
  /// memory.current; absent where the memory controller is not enabled for it.
  std::optional<uint64_t> memory_bytes(const std::string& cgroup) const;
  /// cpu.pressure "some" total: how long any of its tasks waited for a CPU, in µs.
  std::optional<uint64_t> cpu_wait_usec(const std::string& cgroup) const;
  bool exists(const std::string& cgroup) const;

 private:
  std::filesystem::path mount_;
};

/// The service whose CPU is the service's, not foreign, and how it was found.
struct AttributedService {
  pid_t pid = 0;             // the root of its process tree; 0 for a cgroup named alone
  std::vector<pid_t> roots;  // every tree attributed (an SO_REUSEPORT group has several)
  std::string name;          // its comm, or the cgroup's last component
  std::string listener;      // "127.0.0.1:8080" when found through its socket
  std::string cgroup;        // attributed whole when not empty; else the process tree is
  std::string how;           // "started by perfgate", "listening on ...", "service.pid_file", ...

  /// "api-server pid 4242 (listening on 127.0.0.1:8080), cgroup /docker/3f2a"
  std::string describe() const;
  friend bool operator==(const AttributedService&, const AttributedService&) = default;
};

/// What to look for: the profile's names first, then the target's listener.
struct ServiceQuery {
  std::optional<pid_t> started;  // the service perfgate started
  std::string pid_file, process_name, cgroup, container;
  std::string host;  // the target's host, brackets stripped
  uint16_t port = 0;
  bool local = false;  // the host is this machine: look for its listener
  pid_t self = 0;      // perfgate: never the service, nor anything sharing its cgroup
};

struct ServiceSearch {
  std::optional<AttributedService> service;
  /// A local listener no visible process could be matched to (another PID
  /// namespace, permissions): its CPU stays foreign. "127.0.0.1:8080".
  std::string unattributed_listener;
  /// Why no service could be seen at all, when that is worth saying (perfgate
  /// in a container, the target elsewhere); empty otherwise.
  std::string note;
};

/// Whether the reader's /proc looks like a container's: /.dockerenv,
/// /run/.containerenv, or PID 1 in a docker, kubepods, containerd or libpod cgroup.
bool in_container(const ProcReader& proc);

/// Finds the service. A process found by PID or listener is attributed with its
/// descendants; when it lives in a cgroup of its own (see own_cgroup), the whole
/// cgroup is. Never throws: a process that vanishes mid-search is skipped.
ServiceSearch find_service(const ProcReader& proc, const CgroupReader& cgroups,
                           const ServiceQuery& query);

/// The live host's search for `profile`'s service: `started` is the PID of the
/// one perfgate started. Looks for the target's listener only when the target's
/// host is this machine (loopback, this host's name, or one of its addresses).
ServiceSearch find_service(const Profile& profile, std::optional<pid_t> started);

/// The host and port of an http(s) URL, brackets stripped; absent when malformed.
std::optional<std::pair<std::string, uint16_t>> url_host_port(const std::string& url);

/// Whether `cgroup` is the service's alone: not the root, not perfgate's own
/// cgroup nor one holding it, and not a slice or session scope that groups
/// unrelated processes (user.slice, user-1000.slice, session-3.scope,
/// init.scope, system.slice, machine.slice).
bool own_cgroup(const std::string& cgroup, const std::string& perfgate_cgroup);

/// The addresses `pids` listen on ("127.0.0.1:8000", "[::]:9090"), in the
/// first one's network namespace, each once; empty when none can be read.
std::vector<std::string> listening_on(const ProcReader& proc, const std::vector<pid_t>& pids);

/// The foreign-CPU reason's advice when a local listener was left unattributed.
std::string unattributed_advice(const std::string& listener);

}  // namespace perfgate
