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

/// The sections of a 64-bit little-endian ELF file by name, with the contents
/// (at most 4 MiB each) of those named in `wanted`; empty for anything else.
std::map<std::string, std::string> elf_sections(const std::filesystem::path& file,
                                                const std::vector<std::string>& wanted);

}  // namespace perfgate
