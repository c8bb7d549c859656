#include "perfgate/host/instruction_counter.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

perf_event_attr instructions_attr() {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.inherit = 1;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return attr;
}

int open_counter(pid_t pid) {
  perf_event_attr attr = instructions_attr();
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

class PmuCounter : public InstructionCounter {
 public:
  ~PmuCounter() override {
    if (fd_ >= 0) close(fd_);
  }

  std::string unavailable() override {
    int fd = open_counter(0);
    if (fd >= 0) {
      close(fd);
      return "";
    }
    int err = errno;
    std::string paranoid;
    std::ifstream("/proc/sys/kernel/perf_event_paranoid") >> paranoid;
    if (err == EACCES || err == EPERM)
      return "perf_event_open refused (kernel.perf_event_paranoid " + paranoid + ")";
    return "no PMU to count instructions (perf_event_open: " + std::string(strerror(err)) + ")";
  }

  void open(pid_t pid) override {
    fd_ = open_counter(pid);
    if (fd_ < 0)
      throw Error("cost phase: perf_event_open on pid " + std::to_string(pid) + ": " +
                  strerror(errno));
  }

  double read() override {
    uint64_t values[3] = {0, 0, 0};  // value, time enabled, time running
    if (::read(fd_, values, sizeof values) != static_cast<ssize_t>(sizeof values))
      throw Error(std::string("cost phase: reading the instruction counter: ") + strerror(errno));
    if (values[2] < values[1])
      throw Error(
          "cost phase: the instruction counter was multiplexed with other users of the PMU "
          "(it ran " +
          std::to_string(values[1] ? 100 * values[2] / values[1] : 0) +
          "% of the time): a scaled estimate is not a count");
    return static_cast<double>(values[0]);
  }

 private:
  int fd_ = -1;
};

}  // namespace

std::unique_ptr<InstructionCounter> pmu_instruction_counter() {
  return std::make_unique<PmuCounter>();
}

}  // namespace perfgate
