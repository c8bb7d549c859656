#pragma once

#include <cstdint>

namespace perfgate {

/// Open files a load run needs: one socket per connection plus a margin for
/// the process's own files (epoll, stdio, the store, libcurl's internals).
uint64_t fds_needed(int connections);

/// The soft RLIMIT_NOFILE to set so that `needed` files fit, given the current
/// soft and hard limits: `soft` itself when it is enough, else `needed`.
/// Throws Error, saying how to fix it, when even the hard limit is too low.
uint64_t soft_limit_for(uint64_t needed, uint64_t soft, uint64_t hard, int connections);

/// Raises this process's soft open-files limit to what `connections` need (up
/// to the hard limit); throws Error when that is not enough. Returns the soft
/// limit in force afterwards.
uint64_t ensure_fd_limit(int connections);

}  // namespace perfgate
