#include "perfgate/load/fd_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

// Beyond the sockets: epoll fds, stdio, the store, log and /proc readers.
constexpr uint64_t kReservedFds = 64;

}  // namespace

uint64_t fds_needed(int connections) {
  return static_cast<uint64_t>(connections > 0 ? connections : 0) + kReservedFds;
}

uint64_t soft_limit_for(uint64_t needed, uint64_t soft, uint64_t hard, int connections) {
  if (soft >= needed) return soft;
  if (hard < needed)
    throw Error(std::to_string(connections) + " connections need " + std::to_string(needed) +
                " open files, but the hard limit (ulimit -Hn) is " + std::to_string(hard) +
                "; raise it (LimitNOFILE=, /etc/security/limits.conf, docker --ulimit "
                "nofile=) or use fewer load.connections");
  return needed;
}

uint64_t ensure_fd_limit(int connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
    throw Error(std::string("cannot read the open-files limit: ") + std::strerror(errno));
  uint64_t needed = fds_needed(connections);
  uint64_t soft = soft_limit_for(needed, limit.rlim_cur, limit.rlim_max, connections);
  if (soft == limit.rlim_cur) return soft;
  limit.rlim_cur = soft;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
    throw Error("cannot raise the open-files limit to " + std::to_string(soft) + ": " +
                std::strerror(errno));
  return soft;
}

}  // namespace perfgate
