#pragma once

#include <atomic>

namespace perfgate {

/// Set by SIGINT/SIGTERM (the CLI installs the handler). The one piece of
/// process-wide state: a signal handler can reach nothing else, and neither can
/// the C callbacks that wait inside libraries (SQLite's busy handler). Everything
/// else is handed the flag by reference.
std::atomic<bool>& stop_requested();

}  // namespace perfgate
