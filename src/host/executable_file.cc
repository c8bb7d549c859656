#include "perfgate/host/executable_file.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace perfgate {
namespace fs = std::filesystem;
namespace {

template <typename T>
T little_endian(const std::string& bytes, size_t at) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T) && at + i < bytes.size(); ++i)
    value |= static_cast<T>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return value;
}

std::string read_at(std::ifstream& in, uint64_t offset, size_t size) {
  std::string bytes(size, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return bytes;
}

}  // namespace

std::map<std::string, std::string> elf_sections(const fs::path& exe,
                                                const std::vector<std::string>& wanted) {
  std::map<std::string, std::string> found;
  std::ifstream in(exe, std::ios::binary);
  std::string header = in ? read_at(in, 0, 64) : "";
  if (header.size() < 64 || header.compare(0, 4, "\177ELF") != 0 || header[4] != 2) return found;
  auto shoff = little_endian<uint64_t>(header, 0x28);
  auto shentsize = little_endian<uint16_t>(header, 0x3a);
  auto shnum = little_endian<uint16_t>(header, 0x3c);
  auto shstrndx = little_endian<uint16_t>(header, 0x3e);
  if (shentsize < 64 || shnum == 0 || shstrndx >= shnum || shnum > 4096) return found;
  std::string table = read_at(in, shoff, size_t{shentsize} * shnum);
  if (table.size() < size_t{shentsize} * shnum) return found;
  auto section = [&](size_t i, size_t max) {
    size_t at = i * shentsize;
    auto size = std::min<uint64_t>(little_endian<uint64_t>(table, at + 0x20), max);
    return read_at(in, little_endian<uint64_t>(table, at + 0x18), size);
  };
  std::string names = section(shstrndx, 1u << 20);
  for (size_t i = 0; i < shnum; ++i) {
    auto name = little_endian<uint32_t>(table, i * shentsize);
    if (name >= names.size()) continue;
    std::string n = names.c_str() + name;
    bool want = std::find(wanted.begin(), wanted.end(), n) != wanted.end();
    found[n] = want ? section(i, 4u << 20) : "";
  }
  return found;
}

fs::path find_executable(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    fs::path candidate = fs::path(dirs.substr(at, end - at)) / command;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    at = end + 1;
  }
  return {};
}

std::vector<std::string> effective_argv(const std::vector<std::string>& command) {
  if (command.size() < 3 || command[1] != "-c") return command;
  auto shell = std::filesystem::path(command[0]).filename().string();
  if (shell != "sh" && shell != "bash" && shell != "dash") return command;
  std::vector<std::string> words;
  std::istringstream in(command[2]);
  for (std::string w; in >> w;) {
    bool assignment = words.empty() && w.find('=') != std::string::npos && w[0] != '=' &&
                      w.find('/') > w.find('=');
    if (words.empty() && (w == "exec" || assignment)) continue;
    words.push_back(w);
  }
  return words.empty() ? command : words;
}

std::filesystem::path resolve_program(const std::string& program, const std::filesystem::path& cwd,
                                      const std::string& path) {
  namespace fs = std::filesystem;
  auto canonical = [](const fs::path& p) {
    std::error_code ec;
    auto c = fs::canonical(p, ec);
    return ec ? fs::path() : c;
  };
  if (program.empty()) return {};
  if (program.find('/') != std::string::npos) return canonical(cwd / program);
  std::istringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = cwd / (dir.empty() ? fs::path(".") : fs::path(dir)) / program;
    if (access(candidate.c_str(), X_OK) == 0) return canonical(candidate);
  }
  return {};
}

ServedProgram served_program(const std::vector<std::string>& command,
                             const std::filesystem::path& cwd) {
  ServedProgram out{effective_argv(command), {}};
  if (out.argv.empty()) return out;
  const char* path = std::getenv("PATH");
  std::error_code ec;
  auto here = cwd.empty() ? std::filesystem::current_path(ec) : cwd;
  out.file = resolve_program(out.argv.front(), here, path ? path : "/usr/bin:/bin");
  if (out.file.empty()) out.file = find_executable(out.argv.front());
  return out;
}

}  // namespace perfgate
