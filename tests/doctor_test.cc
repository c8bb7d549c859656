#include "perfgate/host/doctor.h"

#include <gtest/gtest.h>

namespace perfgate {
namespace {

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(PERFGATE_SOURCE_DIR) / "tests/fixtures/proc" / name;
}

const DoctorCheck& find(const std::vector<DoctorCheck>& checks, const std::string& name) {
  for (const auto& c : checks)
    if (c.name == name) return c;
  throw std::runtime_error("no check " + name);
}

TEST(DoctorTest, DebianVmFacts) {
  auto f = read_doctor_facts(fixture("debian-vm/t0"));
  EXPECT_EQ(f.ephemeral_ports, std::pair(32768, 60999));
  EXPECT_EQ(f.tcp_tw_reuse, 2);
  EXPECT_EQ(f.governor, "schedutil");
  f.open_files_limit = 1024;
  auto a = take_snapshot(ProcReader(fixture("debian-vm/t0")), std::nullopt, {});
  auto b = take_snapshot(ProcReader(fixture("debian-vm/t1")), std::nullopt,
                         SteadyClock::time_point{} + std::chrono::seconds(1));
  f.cpu_sample = diff_snapshots(a, b, 100.0);
  auto checks = doctor_checks(f, 2000);
  EXPECT_EQ(find(checks, "open files limit").status, CheckStatus::kWarn);
  EXPECT_EQ(find(checks, "ephemeral port range").value, "32768-60999 (28232 ports)");
  EXPECT_EQ(find(checks, "ephemeral port range").status, CheckStatus::kOk);
  EXPECT_EQ(find(checks, "tcp_tw_reuse").status, CheckStatus::kOk);
  EXPECT_EQ(find(checks, "CPU governor").status, CheckStatus::kWarn);
  EXPECT_EQ(find(checks, "other processes' CPU").value,
            "28.0% of the host");  // steal is not theirs
  EXPECT_EQ(find(checks, "other processes' CPU").status, CheckStatus::kWarn);
  EXPECT_EQ(find(checks, "swap in use").value, "97 MiB");
  EXPECT_EQ(find(checks, "CPU steal").value, "5.0%");
  EXPECT_EQ(find(checks, "CPU steal").status, CheckStatus::kWarn);
  EXPECT_EQ(find(checks, "CPU pressure (PSI)").value, "some avg10 2.5%");
  EXPECT_TRUE(has_warnings(checks));
}

TEST(DoctorTest, CleanBareMetalWithoutPsi) {
  auto f = read_doctor_facts(fixture("no-psi"));
  f.open_files_limit = 65536;
  auto checks = doctor_checks(f, 50);
  EXPECT_EQ(find(checks, "CPU governor").value, "performance");
  EXPECT_EQ(find(checks, "CPU governor").status, CheckStatus::kOk);
  EXPECT_EQ(find(checks, "CPU pressure (PSI)").status, CheckStatus::kInfo);
  EXPECT_EQ(find(checks, "swap in use").status, CheckStatus::kOk);
  // tw_reuse 0 is the one finding on this host.
  EXPECT_EQ(find(checks, "tcp_tw_reuse").status, CheckStatus::kWarn);
  int warnings = 0;
  for (const auto& c : checks) warnings += c.status == CheckStatus::kWarn;
  EXPECT_EQ(warnings, 1);
}

TEST(DoctorTest, ContainerHasNarrowPortsAndNoGovernor) {
  auto checks = doctor_checks(read_doctor_facts(fixture("container")), 50);
  EXPECT_EQ(find(checks, "ephemeral port range").value, "40000-45000 (5001 ports)");
  EXPECT_EQ(find(checks, "ephemeral port range").status, CheckStatus::kWarn);
  EXPECT_EQ(find(checks, "CPU governor").status, CheckStatus::kInfo);
  EXPECT_EQ(find(checks, "open files limit").status, CheckStatus::kInfo);
}

TEST(DoctorTest, TableHasHeaderAndOneRowPerCheck) {
  std::vector<DoctorCheck> checks = {{"a", "1", CheckStatus::kOk, ""},
                                     {"longer name", "22", CheckStatus::kWarn, "fix it"}};
  EXPECT_EQ(doctor_table(checks),
            "check        value  status  advice\n"
            "a            1      ok\n"
            "longer name  22     warn    fix it\n");
  EXPECT_FALSE(has_warnings({checks[0]}));
}

}  // namespace
}  // namespace perfgate
