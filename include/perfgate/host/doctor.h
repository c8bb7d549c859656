#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/units.h"
#include "perfgate/host/host_sampler.h"
#include "perfgate/host/proc_reader.h"

namespace perfgate {

enum class CheckStatus { kOk, kWarn, kInfo };  // info: could not be checked here

/// One preflight finding: `perfgate doctor` prints one row per check.
struct DoctorCheck {
  std::string name;   // "open files limit"
  std::string value;  // "1024"
  CheckStatus status = CheckStatus::kOk;
  std::string advice;  // how to fix it; empty when ok
};

/// What the checks look at, read apart from judging so tests give fixture trees.
struct DoctorFacts {
  std::optional<uint64_t> open_files_limit;  // RLIMIT_NOFILE soft limit
  std::optional<std::pair<int, int>> ephemeral_ports;
  std::optional<int> tcp_tw_reuse;
  std::optional<std::string> governor;  // cpu0's scaling_governor; absent in most VMs
  std::optional<MemInfo> memory;
  std::optional<Pressure> cpu_pressure;
  std::optional<HostSample> cpu_sample;  // the host over about a second, perfgate apart
};

/// The facts found under `root` (proc/ and sys/); the limit and the sample are
/// left to the caller, since they describe the live process.
DoctorFacts read_doctor_facts(const std::filesystem::path& root);
/// The live host's facts; with `sample` > 0, watches the CPU that long.
DoctorFacts gather_doctor_facts(Nanos sample);

/// The checks, in a fixed order. `connections` is the profile's (0 = no profile).
std::vector<DoctorCheck> doctor_checks(const DoctorFacts& facts, int connections);

std::string_view to_string(CheckStatus status);  // "ok", "warn", "info"
/// check / value / status / advice, aligned for a terminal.
std::string doctor_table(const std::vector<DoctorCheck>& checks);
bool has_warnings(const std::vector<DoctorCheck>& checks);

}  // namespace perfgate
