#include "perfgate/host/shared_executable.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <vector>

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

// The words a service runs: `sh -c "exec app --port $PORT"` is `app --port $PORT`
// (leading VAR=value and exec dropped), since that is what the shell starts.
std::vector<std::string> effective_argv(const std::vector<std::string>& command) {
  if (command.size() < 3 || command[1] != "-c") return command;
  auto shell = fs::path(command[0]).filename().string();
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

// argv[0] as execvp finds it from `cwd`: a name with a '/' from there, else
// the first executable on PATH (relative PATH entries from `cwd` too).
fs::path resolve(const std::string& program, const fs::path& cwd, const std::string& path) {
  if (program.empty()) return {};
  if (program.find('/') != std::string::npos) return canonical_or_empty(cwd / program);
  std::istringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = cwd / (dir.empty() ? fs::path(".") : fs::path(dir)) / program;
    if (access(candidate.c_str(), X_OK) == 0) return canonical_or_empty(candidate);
  }
  return {};
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
  auto cand_exe = resolve(cand_argv[0], cand_cwd, path);
  auto base_exe = resolve(base_argv[0], base_cwd, path);
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
