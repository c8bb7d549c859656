#pragma once

// Reading /proc as `ps` and `taskset -p` would, for end-to-end tests that check
// where perfgate's processes and threads really run.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace perfgate::testing {

/// A /proc file's whole text ("" when it is gone: a process may end meanwhile).
std::string proc_text(const std::filesystem::path& path);

/// A field of /proc/PID/status (or a task's): "PPid", "Cpus_allowed_list".
std::string status_field(const std::string& status, const std::string& name);

/// The live processes whose parent is `parent`.
std::vector<pid_t> children_of(pid_t parent);

/// The services a perfgate run started: the children of its keepers (its
/// children named perfgate-keeper), whose child each service is.
std::vector<pid_t> services_of(pid_t perfgate);

/// Whether the process is gone: it no longer exists, or is a zombie nobody
/// reaped yet (this machine's init may reap late).
bool process_gone(pid_t pid);

/// Whether `word` is in the process's command line (arguments joined by spaces).
bool cmdline_has(pid_t pid, const std::string& word);

/// Whether this process may run on CPUs 0 and 1: the placement tests put the
/// load on one and the service on the other.
bool two_cpus_allowed();

}  // namespace perfgate::testing
