// The cost phase's hardware-counter path, with a fake PMU (CI's virtual
// machines have none): the counter is opened on the service before its exec,
// read around exactly N requests, and refused when multiplexed.
#include "gate/cost_phase.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "perfgate/core/error.h"
#include "perfgate/host/instruction_counter.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

// Counts `per_request` instructions per read after the first, as if each read
// came after that many requests; says what it saw of the process it counted.
struct FakePmu : InstructionCounter {
  struct Seen {
    pid_t pid = 0;
    std::string exe_at_open;  // what the counted process ran when the counter opened
    int reads = 0;
  };
  FakePmu(std::shared_ptr<Seen> seen, std::vector<double> values, std::string why = "")
      : seen_(std::move(seen)), values_(std::move(values)), why_(std::move(why)) {}
  std::string unavailable() override { return why_; }
  void open(pid_t pid) override {
    seen_->pid = pid;
    std::error_code ec;
    seen_->exe_at_open = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
  }
  double read() override {
    if (values_.empty()) throw Error("cost phase: the instruction counter was multiplexed");
    size_t at = std::min(reads_++, values_.size() - 1);
    ++seen_->reads;
    return values_[at];
  }
  std::shared_ptr<Seen> seen_;
  std::vector<double> values_;
  size_t reads_ = 0;
  std::string why_;
};

Profile counted_profile(uint16_t port, const std::string& instrument) {
  Profile p;
  p.name = "pmu";
  p.target.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  ServiceSpec s;
  s.command = {PERFGATE_COUNTED_SERVER, "--port", std::to_string(port)};
  s.ready_url = "http://127.0.0.1:" + std::to_string(port) + "/health";
  p.service = s;
  p.cost.instrument = instrument;
  p.cost.requests = 100;
  p.cost.warmup_requests = 10;
  p.cost.launches = 2;
  return p;
}

TEST(CostPhaseTest, HardwareCounterOpenedBeforeExecAndReadAroundTheRequests) {
  auto seen = std::make_shared<FakePmu::Seen>();
  CounterFactory pmu = [seen] {
    return std::make_unique<FakePmu>(seen, std::vector<double>{5000, 5000 + 100 * 2400.5});
  };
  auto profile = counted_profile(testing::unused_port(), "perf");
  auto instrument = find_instrument(profile, pmu);
  ASSERT_EQ(instrument.name, "perf") << instrument.unavailable;
  std::atomic<bool> stop{false};
  auto run = measure_cost(profile, instrument, stop, pmu);
  ASSERT_EQ(run.launches.size(), 2u);
  EXPECT_DOUBLE_EQ(run.launches[0].at("instructions_per_request"), 2400.5);
  EXPECT_FALSE(run.launches[0].contains("syscalls_per_request"));
  EXPECT_EQ(run.instrument, "perf");
  EXPECT_EQ(run.key.rfind("perf ", 0), 0u) << run.key;
  // Opened while the child still ran perfgate's own image: before its exec.
  EXPECT_GT(seen->pid, 0);
  EXPECT_EQ(seen->exe_at_open, fs::read_symlink("/proc/self/exe").string());
  EXPECT_NE(seen->exe_at_open, fs::path(PERFGATE_COUNTED_SERVER).string());
}

// Issue 47: after cost.launches a side the caller says how many launches a
// side its counts want; the phase adds them in turns, up to cost.max_launches,
// while its pace says the next pair ends within cost.budget.
TEST(CostPhaseTest, PairedLaunchesAreAddedWhileTheCountsAskWithinTheirLimits) {
  auto seen = std::make_shared<FakePmu::Seen>();
  CounterFactory pmu = [seen] {
    return std::make_unique<FakePmu>(seen, std::vector<double>{5000, 5000 + 100 * 2400.5});
  };
  auto candidate = counted_profile(testing::unused_port(), "perf");
  auto baseline = counted_profile(testing::unused_port(), "perf");
  candidate.cost.max_launches = 4;
  auto instrument = find_instrument(candidate, pmu);
  ASSERT_EQ(instrument.name, "perf") << instrument.unavailable;
  std::atomic<bool> stop{false};
  std::vector<size_t> asked_at;
  auto wanted = [&](int want) {
    return [&asked_at, want](const PairedCost& first) {
      asked_at.push_back(first.candidate.launches.size());
      EXPECT_EQ(first.baseline.launches.size(), first.candidate.launches.size());
      return want;
    };
  };
  auto more = measure_paired_cost(candidate, baseline, instrument, stop, pmu, wanted(9));
  EXPECT_EQ(asked_at, std::vector<size_t>{2});
  EXPECT_EQ(more.candidate.launches.size(), 4u);
  EXPECT_EQ(more.baseline.launches.size(), 4u);
  EXPECT_EQ(more.extension,
            "cost phase: counts undecided after 2 launches a side; 2 more a side counted "
            "(cost.max_launches 4)");
  // Decided at once: nothing added, nothing said.
  auto decided = measure_paired_cost(candidate, baseline, instrument, stop, pmu, wanted(0));
  EXPECT_EQ(decided.candidate.launches.size(), 2u);
  EXPECT_EQ(decided.extension, "");
  // A budget the first launches spent: none added, and the note says why.
  candidate.cost.budget = std::chrono::milliseconds(1);
  auto spent = measure_paired_cost(candidate, baseline, instrument, stop, pmu, wanted(3));
  EXPECT_EQ(spent.candidate.launches.size(), 2u);
  EXPECT_NE(spent.extension.find("none added, the next pair would end past cost.budget 1ms"),
            std::string::npos)
      << spent.extension;
}

TEST(CostPhaseTest, MultiplexedCounterIsAnError) {
  auto seen = std::make_shared<FakePmu::Seen>();
  CounterFactory pmu = [seen] { return std::make_unique<FakePmu>(seen, std::vector<double>{}); };
  auto profile = counted_profile(testing::unused_port(), "perf");
  std::atomic<bool> stop{false};
  try {
    measure_cost(profile, find_instrument(profile, pmu), stop, pmu);
    FAIL() << "a multiplexed count was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiplexed"), std::string::npos) << e.what();
  }
}

TEST(CostPhaseTest, InstrumentChoiceSaysWhatIsMissing) {
  auto seen = std::make_shared<FakePmu::Seen>();
  CounterFactory none = [seen] {
    return std::make_unique<FakePmu>(seen, std::vector<double>{0}, "no PMU to count instructions");
  };
  auto perf = find_instrument(counted_profile(1, "perf"), none);
  EXPECT_EQ(perf.name, "");
  EXPECT_NE(perf.unavailable.find("no PMU"), std::string::npos);
  // auto falls back to callgrind, which this machine has (ci/install-deps.sh).
  auto fallback = find_instrument(counted_profile(1, "auto"), none);
  EXPECT_EQ(fallback.name, "callgrind") << fallback.unavailable;
  CounterFactory pmu = [seen] { return std::make_unique<FakePmu>(seen, std::vector<double>{0}); };
  EXPECT_EQ(find_instrument(counted_profile(1, "auto"), pmu).name, "perf");
  Profile watched = counted_profile(1, "callgrind");
  watched.service->command.clear();
  EXPECT_NE(find_instrument(watched, pmu).unavailable.find("only watched"), std::string::npos);
  CostRun skipped = measure_cost(watched, find_instrument(watched, pmu), {}, pmu);
  EXPECT_FALSE(skipped.skipped.empty());
  watched.cost.required = true;
  EXPECT_THROW(measure_cost(watched, find_instrument(watched, pmu), {}, pmu), Error);
}

// Runtimes Valgrind cannot run are named before anything starts.
TEST(CostPhaseTest, SanitizedServiceIsNamed) {
  auto seen = std::make_shared<FakePmu::Seen>();
  CounterFactory none = [seen] {
    return std::make_unique<FakePmu>(seen, std::vector<double>{0}, "no PMU");
  };
  Profile p = counted_profile(1, "callgrind");
  p.service->command = {"/bin/true"};
  EXPECT_EQ(find_instrument(p, none).name, "callgrind");
#if defined(__SANITIZE_ADDRESS__)
  p.service->command = {testing::perfgate_binary()};
  EXPECT_NE(find_instrument(p, none).unavailable.find("sanitizer (asan)"), std::string::npos);
  // Behind the recipe's `sh -c` wrapper the program that serves is looked at.
  p.service->command = {"sh", "-c", "PORT=1 exec " + testing::perfgate_binary() + " demo-server"};
  auto wrapped = find_instrument(p, none).unavailable;
  EXPECT_NE(wrapped.find("sanitizer (asan)"), std::string::npos) << wrapped;
  EXPECT_NE(wrapped.find("(started by sh)"), std::string::npos) << wrapped;
#endif
}

// A Go program (a .go.buildinfo section), started directly or through `sh -c`
// from the service's cwd, is named before anything starts (issue 47: behind
// the wrapper it used to fail later as "the service closed the connection").
TEST(CostPhaseTest, AGoProgramBehindAShellIsNamed) {
  testing::TempDir dir;
  auto info = dir / "buildinfo";
  testing::write_file(info, "\xff Go buildinf:");
  auto go = dir / "server";
  ASSERT_EQ(std::system(("objcopy --add-section .go.buildinfo=" + info.string() + " /bin/true " +
                         go.string())
                            .c_str()),
            0);
  auto seen = std::make_shared<FakePmu::Seen>();
  CounterFactory none = [seen] {
    return std::make_unique<FakePmu>(seen, std::vector<double>{0}, "no PMU");
  };
  Profile p = counted_profile(1, "callgrind");
  p.service->command = {go.string()};
  EXPECT_NE(find_instrument(p, none).unavailable.find("is a Go program"), std::string::npos);
  p.service->command = {"/bin/sh", "-c", "exec ./server --port \"$PORT\""};
  p.service->cwd = dir.path().string();
  auto wrapped = find_instrument(p, none);
  EXPECT_EQ(wrapped.name, "");
  EXPECT_NE(
      wrapped.unavailable.find("the service \"./server\" (started by /bin/sh) is a Go program"),
      std::string::npos)
      << wrapped.unavailable;
}

}  // namespace
}  // namespace perfgate
