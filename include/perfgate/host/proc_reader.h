#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfgate {

/// A /proc or /sys file's whole text; nullopt when it is missing or unreadable.
/// Such files may vanish or be unreadable (containers, other kernels): a missing
/// file is an unknown field, never an error.
std::optional<std::string> read_text(const std::filesystem::path& path);

/// One line of /proc/stat, in clock ticks (USER_HZ) since boot.
struct CpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;

  /// Every field above: guest time is already inside user and nice.
  uint64_t total() const;
  /// Not idle and not waiting for I/O.
  uint64_t busy() const { return total() - idle - iowait; }
  friend bool operator==(const CpuTimes&, const CpuTimes&) = default;
};

/// /proc/stat: the whole host and each core.
struct CpuStat {
  CpuTimes all;
  std::vector<CpuTimes> cores;  // cpu0, cpu1, ... in file order
};

/// /proc/meminfo, in KiB.
struct MemInfo {
  uint64_t total_kib = 0, available_kib = 0, swap_total_kib = 0, swap_free_kib = 0;

  double available_pct() const;
  uint64_t swap_used_kib() const { return swap_total_kib - swap_free_kib; }
};

/// One interface of /proc/net/dev; counters since boot.
struct NetDevice {
  std::string name;
  uint64_t rx_bytes = 0, rx_packets = 0, rx_errs = 0, rx_drop = 0;
  uint64_t tx_bytes = 0, tx_packets = 0, tx_errs = 0, tx_drop = 0;
};

struct LoadAvg {
  double one = 0, five = 0, fifteen = 0;
};

/// One /proc/pressure file: "some" always, "full" on memory and io (and on cpu
/// since Linux 5.13, where it reads zero at the system level).
struct Pressure {
  double some_avg10 = 0;
  uint64_t some_total_us = 0;
  double full_avg10 = 0;
  uint64_t full_total_us = 0;
};

/// /proc/PID/task/TID/schedstat (Linux's CONFIG_SCHED_INFO): nanoseconds on a CPU
/// and nanoseconds runnable but waiting on a run queue.
struct Schedstat {
  uint64_t run_ns = 0, wait_ns = 0;
};

/// The fields of /proc/PID/stat (or of one thread's task/TID/stat) perfgate uses.
struct ProcStat {
  pid_t pid = 0;
  std::string comm;
  char state = '?';
  pid_t ppid = 0;
  pid_t pgid = 0;
  uint64_t utime_ticks = 0, stime_ticks = 0;
  int processor = -1;  // the CPU it last ran on (field 39); -1 when not given

  uint64_t cpu_ticks() const { return utime_ticks + stime_ticks; }
};

// Pure parsers of each file's text; malformed lines are skipped, never thrown.
CpuStat parse_cpu_stat(std::string_view text);
MemInfo parse_meminfo(std::string_view text);
std::vector<NetDevice> parse_net_dev(std::string_view text);
/// Tcp RetransSegs of /proc/net/snmp (the header line names the columns).
std::optional<uint64_t> parse_tcp_retrans(std::string_view text);
std::optional<LoadAvg> parse_loadavg(std::string_view text);
std::optional<Pressure> parse_pressure(std::string_view text);
std::optional<Schedstat> parse_schedstat(std::string_view text);
/// comm sits in parentheses and may itself hold spaces and ")": split at the last ")".
std::optional<ProcStat> parse_proc_stat(std::string_view text);
/// VmRSS of /proc/PID/status in KiB; absent for kernel threads and zombies.
std::optional<uint64_t> parse_vm_rss_kib(std::string_view text);

/// Reads /proc under a root folder: "/" on the live host, a captured tree in tests.
/// A missing or unreadable file is an absent value, never an error: containers and
/// older kernels lack some of them.
class ProcReader {
 public:
  explicit ProcReader(std::filesystem::path root = "/");

  std::optional<CpuStat> cpu() const;
  std::optional<MemInfo> memory() const;
  std::vector<NetDevice> net_devices() const;
  std::optional<uint64_t> tcp_retrans() const;
  std::optional<LoadAvg> loadavg() const;
  /// `resource` is "cpu", "memory" or "io"; absent without PSI (before 4.20, or off).
  std::optional<Pressure> pressure(std::string_view resource) const;
  /// The threads of a process: `pid` is a number or "self".
  std::vector<ProcStat> threads(std::string_view pid) const;
  std::optional<ProcStat> process(pid_t pid) const;
  /// The run-queue wait of all of a process's threads so far, in ns: `pid` is a
  /// number or "self". Absent when the kernel keeps no schedstat or it is gone.
  std::optional<uint64_t> wait_ns(std::string_view pid) const;
  /// Each thread's schedstat, by thread id: nanosecond CPU time where the
  /// stat files have only 10 ms ticks. Empty without schedstat.
  std::vector<std::pair<pid_t, Schedstat>> task_schedstats(std::string_view pid) const;
  std::optional<uint64_t> rss_kib(std::string_view pid) const;
  /// `pid` and its descendants (children found by their ppid), `pid` first.
  /// ... without `except` and its own descendants (perfgate, under a
  /// service that is its ancestor: its threads are not the service's).
  std::vector<pid_t> process_tree(pid_t pid, pid_t except = 0) const;
  /// The first process whose comm is `name`; the lowest PID wins.
  std::optional<pid_t> find_process(std::string_view name) const;
  /// Every process of the host.
  std::vector<ProcStat> processes() const;
  /// A /proc file as text, e.g. "sys/net/ipv4/tcp_tw_reuse".
  std::optional<std::string> read(const std::string& relative) const;
  /// A symlink's target, e.g. "12/ns/net"; absent when it is gone or unreadable.
  std::optional<std::string> link(const std::string& relative) const;
  /// The targets of /proc/PID/fd/* ("socket:[123]", paths); absent when the
  /// folder cannot be listed (another user's process, or the process is gone).
  std::optional<std::vector<std::string>> fd_links(pid_t pid) const;
  /// The numeric entries of /proc, lowest first: every PID, readable or not.
  std::vector<pid_t> pids() const;
  /// The folder this reader is rooted at ("/" on the live host).
  std::filesystem::path root() const { return proc_.parent_path(); }

 private:
  std::filesystem::path proc_;
};

/// Clock ticks per second of the /proc counters (USER_HZ, 100 on Linux).
double ticks_per_second();

}  // namespace perfgate
