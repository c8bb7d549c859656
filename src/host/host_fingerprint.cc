#include "perfgate/host/host_fingerprint.h"

#include <curl/curl.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "perfgate/core/sha256.h"
#include "perfgate/host/proc_reader.h"

namespace perfgate {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kUnknown = "unknown";

std::string trim(std::string_view text) {
  auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

std::string first_line(const fs::path& path) {
  auto text = read_text(path);
  if (!text) return std::string(kUnknown);
  auto line = trim(text->substr(0, text->find('\n')));
  return line.empty() ? std::string(kUnknown) : line;
}

/// Lines of `text` split at the first `separator`, both sides trimmed.
std::vector<std::pair<std::string, std::string>> key_values(const std::string& text,
                                                            char separator) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto at = line.find(separator);
    if (at != std::string::npos)
      out.emplace_back(trim(line.substr(0, at)), trim(line.substr(at + 1)));
  }
  return out;
}

std::string unquote(const std::string& value) {
  bool quoted = value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
                value.back() == value.front();
  return quoted ? value.substr(1, value.size() - 2) : value;
}

// os-release(5): /etc/os-release, else /usr/lib/os-release.
std::string os_name(const fs::path& root) {
  for (const char* file : {"etc/os-release", "usr/lib/os-release"}) {
    auto text = read_text(root / file);
    if (!text) continue;
    for (const auto& [key, value] : key_values(*text, '='))
      if (key == "PRETTY_NAME" && !value.empty()) return unquote(value);
  }
  return std::string(kUnknown);
}

bool is_live(const fs::path& root) {
  return root.lexically_normal() == fs::path("/");
}

// uname() describes the running machine, so it only answers for the live root.
// A captured tree may hold proc/sys/kernel/arch (the sysctl newer kernels have).
std::string arch(const fs::path& root) {
  if (!is_live(root)) return first_line(root / "proc/sys/kernel/arch");
  utsname name{};
  return uname(&name) == 0 ? std::string(name.machine) : std::string(kUnknown);
}

struct CpuInfo {
  std::string model{kUnknown};
  int processors = 0;
  bool hypervisor = false;  // the CPUID flag a hypervisor sets for its guests
  bool present = false;
};

bool has_flag(const std::string& flags, std::string_view flag) {
  std::istringstream words(flags);
  std::string word;
  while (words >> word)
    if (word == flag) return true;
  return false;
}

CpuInfo cpu_info(const fs::path& root) {
  CpuInfo cpu;
  auto text = read_text(root / "proc/cpuinfo");
  if (!text) return cpu;
  cpu.present = true;
  for (const auto& [key, value] : key_values(*text, ':')) {
    if (key == "processor") ++cpu.processors;
    if (key == "model name" && cpu.model == kUnknown) cpu.model = value;
    if (key == "flags" && has_flag(value, "hypervisor")) cpu.hypervisor = true;
  }
  return cpu;
}

std::string memory_gib(const fs::path& root) {
  auto text = read_text(root / "proc/meminfo");
  if (!text) return std::string(kUnknown);
  for (const auto& [key, value] : key_values(*text, ':')) {
    if (key != "MemTotal") continue;
    char* end = nullptr;
    double kib = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) break;
    char out[32];
    std::snprintf(out, sizeof out, "%.1f", kib / (1024.0 * 1024.0));
    return out;
  }
  return std::string(kUnknown);
}

bool in_container(const fs::path& root) {
  std::error_code ec;
  if (fs::exists(root / ".dockerenv", ec) || fs::exists(root / "run/.containerenv", ec))
    return true;
  // cgroup v1 names the runtime in PID 1's path; with cgroup v2 namespaces it is
  // just "0::/", so the marker files above are the better witness.
  auto cgroup = read_text(root / "proc/1/cgroup").value_or("");
  for (const char* runtime : {"docker", "kubepods", "containerd", "lxc", "libpod"})
    if (cgroup.find(runtime) != std::string::npos) return true;
  return false;
}

// A container on a VM says "container": it is the nearer boundary.
std::string virtualization(const fs::path& root, const CpuInfo& cpu) {
  if (in_container(root)) return "container";
  if (!cpu.present) return std::string(kUnknown);
  return cpu.hypervisor ? "vm" : "none";
}

// The soft limit is the one the load engine runs into when it opens sockets.
std::string open_files_limit(const fs::path& root) {
  rlimit limit{};
  if (!is_live(root) || getrlimit(RLIMIT_NOFILE, &limit) != 0) return std::string(kUnknown);
  return limit.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(limit.rlim_cur);
}

// The kernel writes "32768\t60999"; a dash reads better in reports.
std::string port_range(const fs::path& root) {
  auto line = first_line(root / "proc/sys/net/ipv4/ip_local_port_range");
  std::istringstream words(line);
  std::string low, high;
  if (!(words >> low >> high)) return std::string(kUnknown);
  return low + "-" + high;
}

std::string libcurl_version() {
  const auto* info = curl_version_info(CURLVERSION_NOW);
  return info && info->version ? info->version : std::string(kUnknown);
}

}  // namespace

// What changes the figures a load test produces: another OS, kernel, CPU, core
// count or memory size is another series. Limits, sysctls, virtualization and
// tool versions are recorded for the reader but are not identity: a tuned sysctl
// or a perfgate upgrade must be judged against the old baseline, not start a
// new series without one.
const std::vector<std::string>& HostFingerprint::identity_fields() {
  static const std::vector<std::string> kFields = {"os",        "kernel", "arch",
                                                   "cpu_model", "cpus",   "memory_gib"};
  return kFields;
}

std::string HostFingerprint::key() const {
  std::string identity;
  for (const auto& name : identity_fields()) {
    auto it = fields.find(name);
    identity += name + "=" + (it == fields.end() ? std::string(kUnknown) : it->second) + "\n";
  }
  // A merged run of N shards is its own series: N machines, not one. Runs of one
  // machine have no such field, so their keys are what they always were.
  if (auto it = fields.find("shards"); it != fields.end())
    identity += "shards=" + it->second + "\n";
  // Pinned runs are their own series: where the service sits relative to the
  // load threads sets the throughput level. Unpinned runs have no such field.
  if (auto it = fields.find("placement"); it != fields.end())
    identity += "placement=" + it->second + "\n";
  // SHA-256 rather than std::hash: keys are stored, so they must never change.
  return sha256_hex(identity).substr(0, 16);
}

HostFingerprint read_host_fingerprint(const fs::path& root) {
  auto cpu = cpu_info(root);
  auto net = root / "proc/sys/net";
  HostFingerprint host;
  host.fields = {
      {"os", os_name(root)},
      {"kernel", first_line(root / "proc/sys/kernel/osrelease")},
      {"arch", arch(root)},
      {"cpu_model", cpu.model},
      {"cpus", cpu.present ? std::to_string(cpu.processors) : std::string(kUnknown)},
      {"memory_gib", memory_gib(root)},
      {"virtualization", virtualization(root, cpu)},
      {"cpu_governor", first_line(root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")},
      {"open_files_limit", open_files_limit(root)},
      {"ephemeral_ports", port_range(root)},
      {"tcp_tw_reuse", first_line(net / "ipv4/tcp_tw_reuse")},
      {"tcp_congestion_control", first_line(net / "ipv4/tcp_congestion_control")},
      {"somaxconn", first_line(net / "core/somaxconn")},
      {"perfgate_version", PERFGATE_VERSION},
      {"libcurl_version", libcurl_version()},
  };
  return host;
}

}  // namespace perfgate
