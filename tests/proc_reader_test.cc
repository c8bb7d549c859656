#include "perfgate/host/proc_reader.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace perfgate {
namespace {

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(PERFGATE_SOURCE_DIR) / "tests/fixtures/proc" / name;
}

TEST(ProcReaderTest, ReadsCpuOverallAndPerCore) {
  auto cpu = ProcReader(fixture("debian-vm/t1")).cpu();
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->all, (CpuTimes{1100, 0, 520, 8060, 100, 0, 10, 10}));
  ASSERT_EQ(cpu->cores.size(), 2u);
  EXPECT_EQ(cpu->cores[0].user, 560u);
  EXPECT_EQ(cpu->all.total(), 9800u);
  EXPECT_EQ(cpu->all.busy(), 1640u);
}

TEST(ProcReaderTest, ReadsMemoryAndSwap) {
  auto mem = ProcReader(fixture("debian-vm/t0")).memory();
  ASSERT_TRUE(mem);
  EXPECT_EQ(mem->total_kib, 4000000u);
  EXPECT_DOUBLE_EQ(mem->available_pct(), 25.0);
  EXPECT_EQ(mem->swap_used_kib(), 100000u);
}

TEST(ProcReaderTest, ReadsNetDevicesAndRetransmits) {
  ProcReader proc(fixture("debian-vm/t1"));
  auto net = proc.net_devices();
  ASSERT_EQ(net.size(), 2u);
  EXPECT_EQ(net[1].name, "eth0");
  EXPECT_EQ(net[1].rx_bytes, 6000u);
  EXPECT_EQ(net[1].rx_packets, 60u);
  EXPECT_EQ(net[1].rx_errs, 1u);
  EXPECT_EQ(net[1].rx_drop, 2u);
  EXPECT_EQ(net[1].tx_bytes, 4000u);
  EXPECT_EQ(proc.tcp_retrans(), 107u);
}

TEST(ProcReaderTest, ReadsLoadAndPressure) {
  ProcReader proc(fixture("debian-vm/t0"));
  ASSERT_TRUE(proc.loadavg());
  EXPECT_DOUBLE_EQ(proc.loadavg()->one, 1.5);
  EXPECT_DOUBLE_EQ(proc.loadavg()->fifteen, 0.9);
  auto io = proc.pressure("io");
  ASSERT_TRUE(io);
  EXPECT_DOUBLE_EQ(io->some_avg10, 1.0);
  EXPECT_EQ(io->some_total_us, 999u);
  EXPECT_DOUBLE_EQ(io->full_avg10, 0.5);
  EXPECT_EQ(io->full_total_us, 555u);
}

TEST(ProcReaderTest, KernelWithoutPressureHasNone) {
  ProcReader proc(fixture("no-psi"));
  EXPECT_FALSE(proc.pressure("cpu"));
  EXPECT_FALSE(proc.pressure("memory"));
  EXPECT_EQ(proc.tcp_retrans(), 0u);
  EXPECT_EQ(proc.memory()->swap_used_kib(), 0u);
}

TEST(ProcReaderTest, ContainerLacksSnmpAndPressure) {
  ProcReader proc(fixture("container"));
  EXPECT_FALSE(proc.tcp_retrans());
  EXPECT_FALSE(proc.pressure("cpu"));
  EXPECT_DOUBLE_EQ(proc.memory()->available_pct(), 3.0);
  EXPECT_EQ(proc.process_tree(1), std::vector<pid_t>{1});
}

TEST(ProcReaderTest, ThreadsOfSelfWithCommAndTicks) {
  auto threads = ProcReader(fixture("debian-vm/t0")).threads("self");
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_EQ(threads[1].pid, 101);
  EXPECT_EQ(threads[1].utime_ticks, 200u);
  EXPECT_EQ(threads[1].stime_ticks, 20u);
  EXPECT_EQ(threads[2].comm, "pg-sampler");
}

TEST(ProcReaderTest, ProcessTreeFollowsParents) {
  ProcReader proc(fixture("debian-vm/t0"));
  EXPECT_EQ(proc.process_tree(200), (std::vector<pid_t>{200, 201}));
  // Issue 50 item 8: perfgate under a service that is its ancestor is not the
  // service's: its subtree is left out.
  EXPECT_EQ(proc.process_tree(200, 201), (std::vector<pid_t>{200}));
  EXPECT_EQ(proc.process_tree(200, 999), (std::vector<pid_t>{200, 201}));
  EXPECT_EQ(proc.find_process("demo-worker"), 201);
  EXPECT_EQ(proc.rss_kib("200"), 10000u);
  EXPECT_FALSE(proc.rss_kib("300"));  // no VmRSS line, as for a kernel thread
}

TEST(ProcReaderTest, CommWithParenthesesAndSpaces) {
  auto s = parse_proc_stat("300 ((sd-pam)) S 1 300 300 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->comm, "(sd-pam)");
  EXPECT_EQ(s->ppid, 1);
  EXPECT_EQ(s->cpu_ticks(), 10u);
  auto spaced = parse_proc_stat("7 (Web Content) R 2 7 7 0 -1 0 0 0 0 0 11 4 0 0 20 0 1 0");
  ASSERT_TRUE(spaced);
  EXPECT_EQ(spaced->comm, "Web Content");
  EXPECT_EQ(spaced->state, 'R');
  EXPECT_FALSE(parse_proc_stat("garbage"));
}

// Field 39 says which CPU a task last ran on: the sampler's placement figure.
TEST(ProcReaderTest, ProcessorIsFieldThirtyNine) {
  auto s = parse_proc_stat(
      "101 (perfgate) S 1 101 101 0 -1 4194560 100 0 0 0 200 20 0 0 20 0 1 0 500 10000000 500 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->processor, 1);
  auto old_kernel = parse_proc_stat("7 (short) R 2 9 7 0 -1 0 0 0 0 0 11 4 0 0 20 0 1 0");
  ASSERT_TRUE(old_kernel);
  EXPECT_EQ(old_kernel->processor, -1);  // not given: unknown, not CPU 0
  EXPECT_EQ(old_kernel->pgid, 9);        // field 5: a lost keeper's group is ended by it
}

TEST(ProcReaderTest, MissingRootGivesAbsentValues) {
  ProcReader proc("/nonexistent-perfgate-root");
  EXPECT_FALSE(proc.cpu());
  EXPECT_FALSE(proc.memory());
  EXPECT_TRUE(proc.net_devices().empty());
  EXPECT_TRUE(proc.threads("self").empty());
}

TEST(ProcReaderTest, LiveHostAnswers) {
  ProcReader proc;
  ASSERT_TRUE(proc.cpu());
  EXPECT_GT(proc.cpu()->all.total(), 0u);
  EXPECT_FALSE(proc.threads("self").empty());
  EXPECT_GT(proc.rss_kib("self").value_or(0), 0u);
}

}  // namespace
}  // namespace perfgate
