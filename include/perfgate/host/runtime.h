#pragma once

// The language runtime a service runs on (Python, Node, Java), found in the
// program its command starts (through `sh -c` too), and what makes its counts
// repeat under the cost phase: an interpreter's hash seeds and a JIT's
// decisions move instruction counts from one launch to the next.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace perfgate {

struct Runtime {
  std::string name;     // "python", "node" or "java"
  std::string version;  // the first line of what `program --version` says, e.g. "Python 3.11.2"
  std::filesystem::path program;
  /// The `#!` line when `program` is a script named like the runtime: a
  /// version manager's shim (pyenv, asdf, nvm's wrappers). Under Valgrind,
  /// which traces children, every program it runs first starts traced too.
  std::string shim;
};

/// The runtime `command` (started in `cwd`, empty: here) runs, when its
/// program is one perfgate knows by name (python3, node, java, ...); its
/// version is asked of it (10 s at most; "" when it does not say).
std::optional<Runtime> detect_runtime(const std::vector<std::string>& command,
                                      const std::filesystem::path& cwd);

/// What the cost phase sets so that a runtime's counts repeat, and says it set.
struct SteadySettings {
  std::vector<std::string> command;        // the service command, flags added
  std::map<std::string, std::string> env;  // added to the service's environment
  std::string said;                        // one line for the log and the cost key; "" for none
};

/// Python: a fixed hash seed (PYTHONHASHSEED=0). Node: V8's predictable flags
/// (--predictable --predictable-gc-schedule --hash-seed=1 --random-seed=1
/// --no-opt) after the node word, also inside a `sh -c` script. Java: nothing
/// set (its JIT compiles on timers; -Xint steadies it at an interpreter's cost:
/// `said` names it). A variable or flag the command already sets is left alone.
SteadySettings steady_settings(const Runtime& runtime, const std::vector<std::string>& command,
                               const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace perfgate
