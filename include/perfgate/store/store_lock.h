#pragma once

// How long perfgate waits for a store another process has locked. SQLite
// serializes writers; a writer that never finishes (a stuck job, a person's
// open sqlite3 shell) must cost a bounded wait, then a clear error.

#include <chrono>

#include "perfgate/core/error.h"
#include "perfgate/store/baseline_store.h"

namespace perfgate {

/// Another process held the store's lock past the wait this process allows.
class StoreLocked : public Error {
 public:
  using Error::Error;
};

/// How long one perfgate process waits, in all, for other processes' store locks.
inline constexpr std::chrono::milliseconds kDefaultLockWait{30'000};

/// Sets that wait (the CLI's --lock-wait); every wait after draws on it.
void set_store_lock_wait(std::chrono::milliseconds budget);

/// Takes the store's write lock and lets it go, so that a run learns before
/// its load whether it could store the result: throws StoreLocked when another
/// process holds the lock past the wait allowed, Error on a read-only store.
void check_store_lock(BaselineStore& store);

}  // namespace perfgate
