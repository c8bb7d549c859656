#include "perfgate/host/doctor.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace perfgate {
namespace fs = std::filesystem;
namespace {

std::string fmt_pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v);
  return buf;
}

std::optional<int> first_int(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  int v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

std::optional<std::string> first_word(const fs::path& path) {
  std::ifstream in(path);
  std::string word;
  if (in >> word) return word;
  return std::nullopt;
}

DoctorCheck unknown(std::string name) {
  return {std::move(name), "unknown", CheckStatus::kInfo, "not readable on this host"};
}

// Each connection holds a descriptor; the engine and libcurl need a few more.
DoctorCheck open_files(const DoctorFacts& f, int connections) {
  if (!f.open_files_limit) return unknown("open files limit");
  uint64_t needed = static_cast<uint64_t>(connections) + 64;
  DoctorCheck c{"open files limit", std::to_string(*f.open_files_limit), CheckStatus::kOk, ""};
  if (*f.open_files_limit < needed) {
    c.status = CheckStatus::kWarn;
    c.advice = "below " + std::to_string(needed) + " for " + std::to_string(connections) +
               " connections: raise it (ulimit -n, LimitNOFILE=)";
  }
  return c;
}

// Short-lived connections hold their port in TIME_WAIT for 60 s: a narrow range
// runs out under reconnect-heavy load.
DoctorCheck ports(const DoctorFacts& f) {
  if (!f.ephemeral_ports) return unknown("ephemeral port range");
  auto [low, high] = *f.ephemeral_ports;
  int width = high - low + 1;
  DoctorCheck c{
      "ephemeral port range",
      std::to_string(low) + "-" + std::to_string(high) + " (" + std::to_string(width) + " ports)",
      CheckStatus::kOk, ""};
  if (width < 16384) {
    c.status = CheckStatus::kWarn;
    c.advice = "widen it: sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"";
  }
  return c;
}

DoctorCheck tw_reuse(const DoctorFacts& f) {
  if (!f.tcp_tw_reuse) return unknown("tcp_tw_reuse");
  DoctorCheck c{"tcp_tw_reuse", std::to_string(*f.tcp_tw_reuse), CheckStatus::kOk, ""};
  if (*f.tcp_tw_reuse == 0) {
    c.status = CheckStatus::kWarn;
    c.advice = "reconnects may exhaust ports: sysctl -w net.ipv4.tcp_tw_reuse=1";
  } else if (*f.tcp_tw_reuse == 2) {
    c.advice = "reuse on loopback only: set 1 when the target is remote";
  }
  return c;
}

// Frequency scaling makes the same code run at another speed from one run to the next.
DoctorCheck governor(const DoctorFacts& f) {
  if (!f.governor)
    return {"CPU governor", "not exposed", CheckStatus::kInfo,
            "no cpufreq here (VM or container): the host decides"};
  DoctorCheck c{"CPU governor", *f.governor, CheckStatus::kOk, ""};
  if (*f.governor != "performance") {
    c.status = CheckStatus::kWarn;
    c.advice = "set it to performance: cpupower frequency-set -g performance";
  }
  return c;
}

DoctorCheck foreign_cpu(const DoctorFacts& f) {
  if (!f.cpu_sample) return {"other processes' CPU", "not sampled", CheckStatus::kInfo, ""};
  double v = f.cpu_sample->foreign_cpu_pct;
  DoctorCheck c{"other processes' CPU", fmt_pct(v) + " of the host", CheckStatus::kOk, ""};
  if (v > 10) {
    c.status = CheckStatus::kWarn;
    c.advice = "other work competes with the load: stop it or use a dedicated runner";
  }
  return c;
}

DoctorCheck steal(const DoctorFacts& f) {
  if (!f.cpu_sample) return {"CPU steal", "not sampled", CheckStatus::kInfo, ""};
  double v = f.cpu_sample->steal_pct;
  DoctorCheck c{"CPU steal", fmt_pct(v), CheckStatus::kOk, ""};
  if (v > 1) {
    c.status = CheckStatus::kWarn;
    c.advice = "the hypervisor takes CPU from this VM: use dedicated or bare-metal runners";
  }
  return c;
}

DoctorCheck swap(const DoctorFacts& f) {
  if (!f.memory) return unknown("swap in use");
  uint64_t used = f.memory->swap_used_kib();
  DoctorCheck c{"swap in use", std::to_string(used / 1024) + " MiB", CheckStatus::kOk, ""};
  if (used > 0) {
    c.status = CheckStatus::kWarn;
    c.advice = "paging slows both sides unpredictably: free memory or swapoff -a";
  }
  return c;
}

DoctorCheck pressure(const DoctorFacts& f) {
  if (!f.cpu_pressure)
    return {"CPU pressure (PSI)", "not available", CheckStatus::kInfo,
            "this kernel has no /proc/pressure (before 4.20, or psi=0)"};
  double v = f.cpu_pressure->some_avg10;
  DoctorCheck c{"CPU pressure (PSI)", "some avg10 " + fmt_pct(v), CheckStatus::kOk, ""};
  if (v > 10) {
    c.status = CheckStatus::kWarn;
    c.advice = "tasks wait for CPU: the host is oversubscribed";
  }
  return c;
}

}  // namespace

DoctorFacts read_doctor_facts(const fs::path& root) {
  ProcReader proc(root);
  DoctorFacts f;
  if (auto text = proc.read("sys/net/ipv4/ip_local_port_range")) {
    std::istringstream in(*text);
    int low = 0, high = 0;
    if (in >> low >> high) f.ephemeral_ports = std::pair(low, high);
  }
  f.tcp_tw_reuse = first_int(proc.read("sys/net/ipv4/tcp_tw_reuse"));
  f.governor = first_word(root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  f.memory = proc.memory();
  f.cpu_pressure = proc.pressure("cpu");
  return f;
}

DoctorFacts gather_doctor_facts(Nanos sample) {
  DoctorFacts f = read_doctor_facts("/");
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) f.open_files_limit = limit.rlim_cur;
  if (sample <= Nanos(0)) return f;
  ProcReader proc;
  auto before = take_snapshot(proc, std::nullopt, SteadyClock::now());
  std::this_thread::sleep_for(sample);
  auto after = take_snapshot(proc, std::nullopt, SteadyClock::now());
  f.cpu_sample = diff_snapshots(before, after, ticks_per_second());
  return f;
}

std::vector<DoctorCheck> doctor_checks(const DoctorFacts& f, int connections) {
  return {open_files(f, connections),
          ports(f),
          tw_reuse(f),
          governor(f),
          foreign_cpu(f),
          swap(f),
          steal(f),
          pressure(f)};
}

std::string_view to_string(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kInfo:
      return "info";
  }
  return "info";
}

std::string doctor_table(const std::vector<DoctorCheck>& checks) {
  size_t name_w = 5, value_w = 5;
  for (const auto& c : checks) {
    name_w = std::max(name_w, c.name.size());
    value_w = std::max(value_w, c.value.size());
  }
  auto row = [&](const std::string& a, const std::string& b, std::string_view s,
                 const std::string& d) {
    std::string line = a + std::string(name_w - a.size() + 2, ' ') + b +
                       std::string(value_w - b.size() + 2, ' ') + std::string(s) +
                       std::string(8 - s.size(), ' ') + d;
    return line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  };
  std::string out = row("check", "value", "status", "advice");
  for (const auto& c : checks) out += row(c.name, c.value, to_string(c.status), c.advice);
  return out;
}

bool has_warnings(const std::vector<DoctorCheck>& checks) {
  return std::any_of(checks.begin(), checks.end(),
                     [](const DoctorCheck& c) { return c.status == CheckStatus::kWarn; });
}

}  // namespace perfgate
