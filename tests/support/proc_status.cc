#include "support/proc_status.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <system_error>

#include "perfgate/host/placement.h"

namespace perfgate::testing {

namespace fs = std::filesystem;

std::string proc_text(const fs::path& path) {
  // A task that exits between the open and the read fails the read with ESRCH,
  // which libstdc++ throws from the stream buffer: the task is gone, so is its text.
  try {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  } catch (const std::ios_base::failure&) {
    return "";
  }
}

std::string status_field(const std::string& status, const std::string& name) {
  auto at = status.find("\n" + name + ":");
  if (at == std::string::npos) return "";
  auto start = status.find_first_not_of(" \t", at + name.size() + 2);
  return status.substr(start, status.find('\n', start) - start);
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (status_field(proc_text(entry.path() / "status"), "PPid") == std::to_string(parent))
      out.push_back(std::stoi(name));
  }
  return out;
}

std::vector<pid_t> services_of(pid_t perfgate) {
  std::vector<pid_t> out;
  for (pid_t keeper : children_of(perfgate)) {
    if (proc_text("/proc/" + std::to_string(keeper) + "/comm") != "perfgate-keeper\n") continue;
    auto services = children_of(keeper);
    out.insert(out.end(), services.begin(), services.end());
  }
  return out;
}

bool process_gone(pid_t pid) {
  auto line = proc_text("/proc/" + std::to_string(pid) + "/stat");
  if (line.empty()) return true;
  auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

bool cmdline_has(pid_t pid, const std::string& word) {
  auto text = proc_text("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text.find(word) != std::string::npos;
}

bool two_cpus_allowed() {
  CpuList allowed = allowed_cpus();
  auto has = [&](int cpu) {
    return std::find(allowed.begin(), allowed.end(), cpu) != allowed.end();
  };
  return has(0) && has(1);
}

}  // namespace perfgate::testing
