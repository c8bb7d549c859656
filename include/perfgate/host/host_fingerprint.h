#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace perfgate {

/// What the load machine is. Runs are only compared with runs whose key()
/// matches: another CPU or kernel is another series, not a baseline.
struct HostFingerprint {
  /// Ordered name -> value: os, kernel, arch, cpu_model, cpus, memory_gib,
  /// virtualization, open_files_limit, ephemeral_ports, tcp_tw_reuse,
  /// tcp_congestion_control, somaxconn, perfgate_version, libcurl_version.
  std::map<std::string, std::string> fields;

  /// The fields that must match for two runs to be comparable.
  static const std::vector<std::string>& identity_fields();
  /// Short hash of the identity fields.
  std::string key() const;
};

/// Reads the fingerprint from `root` (normally "/"; tests pass a fixture tree
/// holding proc/, sys/ and etc/os-release).
HostFingerprint read_host_fingerprint(const std::filesystem::path& root = "/");

}  // namespace perfgate
