#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>

#include "perfgate/core/units.h"

namespace perfgate {

/// One message between perfgate and a service's keeper, on their socket pair
/// (SOCK_SEQPACKET: each send arrives whole, and perfgate's death is an EOF).
struct KeeperMessage {
  enum Kind : int32_t {
    kStarted = 'p',     // keeper: the service's PID is `value`
    kForkFailed = 'f',  // keeper: no service, fork's errno is `value`
    kExited = 'x',      // keeper: the service ended, its wait status is `value`
    kDone = 'd',        // keeper: nothing of the service is left; it exits
    kStop = 's',        // perfgate: end the service, `value` ms of grace
  };
  int32_t kind = 0;
  int32_t value = 0;
};

/// The body of a service's keeper: a process perfgate forks, that forks the
/// service (`start`, which never returns) and stays its parent. The keeper is
/// a child subreaper, so that whatever the service starts stays its descendant
/// (a setsid, a double fork, a wiped environment notwithstanding): orphans come
/// to it, not to init. It tells perfgate the service's PID and, later, its wait
/// status. On kStop, or at EOF (perfgate is gone, even by SIGKILL), it sends
/// SIGTERM to the service's process group and to each process that comes to
/// it from outside the group, waits up to the grace for them, then SIGKILLs
/// its children until it has none; then it says kDone and exits.
///
/// When perfgate died (EOF) rather than said kStop, the keeper also empties
/// and removes `scratch` (when not empty): a folder of the service's files
/// only perfgate would have removed, e.g. the cost phase's dumps (its files,
/// not its subfolders: it holds none).
///
/// It runs in a child of a multithreaded process: async-signal-safe calls
/// only, and `start` and `scratch` must be built before the fork.
[[noreturn]] void keep_service(int socket_fd, Nanos default_grace,
                               const std::function<void()>& start, const char* scratch);

}  // namespace perfgate
