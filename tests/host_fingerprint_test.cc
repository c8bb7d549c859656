#include "perfgate/host/host_fingerprint.h"

#include <gtest/gtest.h>
#include <sys/utsname.h>

#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace perfgate {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_file;

fs::path fixture(const std::string& name) {
  return testing::source_dir() / "tests/fixtures/hosts" / name;
}

// A writable copy of a fixture tree, to vary one file at a time.
fs::path copy_fixture(const TempDir& dir, const std::string& name) {
  auto root = dir / name;
  fs::copy(fixture(name), root, fs::copy_options::recursive);
  return root;
}

TEST(HostFingerprint, ReadsEveryFieldOfAVm) {
  auto host = read_host_fingerprint(fixture("debian12-vm"));
  std::map<std::string, std::string> expected = {
      {"os", "Debian GNU/Linux 12 (bookworm)"},
      {"kernel", "6.1.0-18-cloud-amd64"},
      {"arch", "x86_64"},
      {"cpu_model", "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"},
      {"cpus", "4"},
      {"memory_gib", "15.6"},
      {"virtualization", "vm"},
      {"cpu_governor", "performance"},
      {"open_files_limit", "unknown"},  // a limit of this process, not of the fixture
      {"ephemeral_ports", "32768-60999"},
      {"tcp_tw_reuse", "2"},
      {"tcp_congestion_control", "cubic"},
      {"somaxconn", "4096"},
      {"perfgate_version", PERFGATE_VERSION},
      {"libcurl_version", host.fields.at("libcurl_version")},
  };
  EXPECT_EQ(host.fields, expected);
  EXPECT_NE(host.fields.at("libcurl_version"), "unknown");
}

TEST(HostFingerprint, ContainerWithMissingFilesReadsUnknown) {
  auto host = read_host_fingerprint(fixture("alpine-container"));
  EXPECT_EQ(host.fields.at("os"), "Alpine Linux v3.19");
  EXPECT_EQ(host.fields.at("kernel"), "5.15.0-1057-azure");
  EXPECT_EQ(host.fields.at("arch"), "unknown");
  EXPECT_EQ(host.fields.at("cpu_model"), "AMD EPYC 7763 64-Core Processor");
  EXPECT_EQ(host.fields.at("cpus"), "2");
  EXPECT_EQ(host.fields.at("memory_gib"), "7.8");
  EXPECT_EQ(host.fields.at("virtualization"), "container");  // on a VM, but the container is nearer
  EXPECT_EQ(host.fields.at("cpu_governor"), "unknown");
  EXPECT_EQ(host.fields.at("ephemeral_ports"), "1024-65535");
  EXPECT_EQ(host.fields.at("tcp_tw_reuse"), "unknown");
  EXPECT_EQ(host.fields.at("tcp_congestion_control"), "unknown");
  EXPECT_EQ(host.fields.at("somaxconn"), "128");
}

TEST(HostFingerprint, EmptyRootGivesUnknownNotAnError) {
  TempDir dir;
  auto host = read_host_fingerprint(dir.path());
  for (const char* name : {"os", "kernel", "arch", "cpu_model", "cpus", "memory_gib",
                           "virtualization", "cpu_governor", "open_files_limit", "ephemeral_ports",
                           "tcp_tw_reuse", "tcp_congestion_control", "somaxconn"})
    EXPECT_EQ(host.fields.at(name), "unknown") << name;
  EXPECT_EQ(host.fields.at("perfgate_version"), PERFGATE_VERSION);
  EXPECT_EQ(host.key().size(), 16u);
}

TEST(HostFingerprint, MalformedFilesGiveUnknown) {
  TempDir dir;
  auto root = copy_fixture(dir, "debian12-vm");
  write_file(root / "proc/meminfo", "MemTotal: lots\n");
  write_file(root / "proc/sys/net/ipv4/ip_local_port_range", "\n");
  write_file(root / "etc/os-release", "NAME=x\n");
  auto host = read_host_fingerprint(root);
  EXPECT_EQ(host.fields.at("memory_gib"), "unknown");
  EXPECT_EQ(host.fields.at("ephemeral_ports"), "unknown");
  EXPECT_EQ(host.fields.at("os"), "unknown");
}

TEST(HostFingerprint, VirtualizationFromFlagsAndMarkers) {
  TempDir dir;
  auto root = copy_fixture(dir, "debian12-vm");
  auto cpuinfo = testing::read_file(root / "proc/cpuinfo");
  for (auto at = cpuinfo.find(" hypervisor"); at != std::string::npos;
       at = cpuinfo.find(" hypervisor"))
    cpuinfo.erase(at, 11);
  write_file(root / "proc/cpuinfo", cpuinfo);
  EXPECT_EQ(read_host_fingerprint(root).fields.at("virtualization"), "none");

  write_file(root / "proc/1/cgroup", "11:cpu:/kubepods/burstable/pod1234/abcd\n");
  EXPECT_EQ(read_host_fingerprint(root).fields.at("virtualization"), "container");

  write_file(root / "proc/1/cgroup", "0::/\n");
  fs::create_directories(root / "run");
  write_file(root / "run/.containerenv", "");
  EXPECT_EQ(read_host_fingerprint(root).fields.at("virtualization"), "container");
}

TEST(HostFingerprint, KeyIsStableShortHex) {
  auto a = read_host_fingerprint(fixture("debian12-vm")).key();
  auto b = read_host_fingerprint(fixture("debian12-vm")).key();
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, read_host_fingerprint(fixture("alpine-container")).key());
}

TEST(HostFingerprint, KeyFollowsIdentityFieldsOnly) {
  TempDir dir;
  auto root = copy_fixture(dir, "debian12-vm");
  auto before = read_host_fingerprint(root).key();

  write_file(root / "proc/sys/net/core/somaxconn", "65535\n");
  write_file(root / "proc/sys/net/ipv4/tcp_congestion_control", "bbr\n");
  EXPECT_EQ(read_host_fingerprint(root).key(), before);

  auto cpuinfo = testing::read_file(root / "proc/cpuinfo");
  for (auto at = cpuinfo.find("8375C"); at != std::string::npos; at = cpuinfo.find("8375C"))
    cpuinfo.replace(at, 5, "8488C");
  write_file(root / "proc/cpuinfo", cpuinfo);
  EXPECT_NE(read_host_fingerprint(root).key(), before);
}

TEST(HostFingerprint, KeyCoversEachIdentityField) {
  HostFingerprint base = read_host_fingerprint(fixture("debian12-vm"));
  for (const auto& name : HostFingerprint::identity_fields()) {
    HostFingerprint changed = base;
    changed.fields[name] += "x";
    EXPECT_NE(changed.key(), base.key()) << name;
  }
  EXPECT_EQ(HostFingerprint::identity_fields(),
            (std::vector<std::string>{"os", "kernel", "arch", "cpu_model", "cpus", "memory_gib"}));
}

TEST(HostFingerprint, LiveHostUsesUnameAndLimits) {
  auto host = read_host_fingerprint("/");
  utsname name{};
  ASSERT_EQ(uname(&name), 0);
  EXPECT_EQ(host.fields.at("arch"), name.machine);
  const auto& limit = host.fields.at("open_files_limit");
  EXPECT_TRUE(limit == "unlimited" || limit.find_first_not_of("0123456789") == std::string::npos)
      << limit;
  EXPECT_NE(host.fields.at("perfgate_version"), "unknown");
}

}  // namespace
}  // namespace perfgate
