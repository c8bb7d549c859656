#pragma once

// The service's executable as a file: where a command is found, and the
// section names (and some contents) of a 64-bit ELF file, to tell runtimes an
// instrument cannot run before anything is started.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace perfgate {

/// The executable `command` runs, looked up on $PATH as execvp would; empty
/// when it is not found.
std::filesystem::path find_executable(const std::string& command);

/// The words a service runs: `sh -c "exec app --port $PORT"` is
/// {app, --port, $PORT} (leading VAR=value and exec dropped), since that is what
/// the shell starts; any other command is itself.
std::vector<std::string> effective_argv(const std::vector<std::string>& command);

/// `program` as execvp finds it from `cwd`: a name with a '/' from there, else
/// the first executable on `path` (relative entries from `cwd` too); canonical,
/// empty when not found.
std::filesystem::path resolve_program(const std::string& program, const std::filesystem::path& cwd,
                                      const std::string& path);

/// The program a service command starts (effective_argv's first word) as
/// resolve_program finds it from `cwd` (empty: here) on $PATH, else as
/// find_executable does; `file` is empty when neither finds it.
struct ServedProgram {
  std::vector<std::string> argv;
  std::filesystem::path file;
};
ServedProgram served_program(const std::vector<std::string>& command,
                             const std::filesystem::path& cwd);

/// The sections of a 64-bit little-endian ELF file by name, with the contents
/// (at most 4 MiB each) of those named in `wanted`; empty for anything else.
std::map<std::string, std::string> elf_sections(const std::filesystem::path& file,
                                                const std::vector<std::string>& wanted);

}  // namespace perfgate
