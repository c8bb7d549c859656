#include "perfgate/host/shared_executable.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <vector>

#include "perfgate/host/executable_file.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

fs::path canonical_or_empty(const fs::path& p) {
  std::error_code ec;
  auto c = fs::canonical(p, ec);
  return ec ? fs::path() : c;
}

bool inside(const fs::path& file, const fs::path& dir) {
  auto f = file.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++f)
    if (f == file.end() || *f != *d) return false;
  return true;
}

// An argument such as app.py or config/server.toml that exists in the checkout:
// the shared program then runs each side's own files (python app.py).
bool names_own_file(const std::vector<std::string>& argv, const fs::path& cwd) {
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string arg = argv[i];
    if (auto eq = arg.find('='); eq != std::string::npos && arg[0] == '-') arg = arg.substr(eq + 1);
    if (arg.empty() || arg[0] == '-') continue;
    auto file = canonical_or_empty(cwd / arg);
    if (!file.empty() && inside(file, cwd)) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> shared_installed_executable(const ServiceSpec& candidate,
                                                       const ServiceSpec& baseline,
                                                       const std::string& path) {
  if (candidate.command.empty() || baseline.command.empty()) return std::nullopt;
  auto cand_cwd = canonical_or_empty(candidate.cwd.empty() ? "." : candidate.cwd);
  auto base_cwd = canonical_or_empty(baseline.cwd.empty() ? "." : baseline.cwd);
  if (cand_cwd.empty() || base_cwd.empty() || cand_cwd == base_cwd) return std::nullopt;
  auto cand_argv = effective_argv(candidate.command);
  auto base_argv = effective_argv(baseline.command);
  auto cand_exe = resolve_program(cand_argv[0], cand_cwd, path);
  auto base_exe = resolve_program(base_argv[0], base_cwd, path);
  if (cand_exe.empty() || base_exe.empty()) return std::nullopt;
  struct stat a {
  }, b{};
  if (stat(cand_exe.c_str(), &a) != 0 || stat(base_exe.c_str(), &b) != 0) return std::nullopt;
  if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) return std::nullopt;
  if (inside(cand_exe, cand_cwd) || inside(cand_exe, base_cwd)) return std::nullopt;
  if (names_own_file(cand_argv, cand_cwd) || names_own_file(base_argv, base_cwd))
    return std::nullopt;
  return cand_exe.string();
}

std::string shared_executable_warning(const std::string& executable) {
  return "both paired sides run " + executable +
         ", outside both checkouts: paired mode may compare one build with itself (a build "
         "that installs outside its checkout, e.g. make install into /usr/local or one shared "
         "venv); install each side into its own prefix inside its checkout (e.g. "
         "--prefix=$PWD/.install) and start that";
}

}  // namespace perfgate
