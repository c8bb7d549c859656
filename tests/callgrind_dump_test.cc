// Reading callgrind's dumps: real files as Valgrind 3.19 writes them, and the
// broken or foreign ones a cost phase must refuse with one line.
#include "perfgate/host/callgrind_dump.h"

#include <gtest/gtest.h>

#include "perfgate/core/error.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

const char* kCacheDump = R"(# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  ./server
part: 1

desc: I1 cache: 32768 B, 64 B, 8-way associative
desc: D1 cache: 32768 B, 64 B, 8-way associative
desc: LL cache: 8388608 B, 64 B, 16-way associative

desc: Timerange: Basic block 100 - 200
desc: Trigger: dump perfgate

positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw sysCount sysTime
summary: 1000000 300000 200000 1000 5000 2000 100 400 300 3000 12

fl= (1) ???
fn= (1) main
0 1000000 300000 200000 1000 5000 2000 100 400 300 3000 12

totals: 1000000 300000 200000 1000 5000 2000 100 400 300 3000 12
)";

TEST(CallgrindDumpTest, ReadsTheIdleDumpOfValgrind319) {
  // Written by Valgrind 3.19 for a process that ran nothing since its zero:
  // "totals: 0" for three events, trailing zero counts left out.
  auto text = testing::read_file(testing::source_dir() / "tests/fixtures/callgrind/idle-sleep.out");
  auto totals = parse_callgrind_dump(text, "idle-sleep.out");
  ASSERT_EQ(totals.size(), 3u);
  EXPECT_DOUBLE_EQ(totals.at("Ir"), 0);
  EXPECT_DOUBLE_EQ(totals.at("sysCount"), 0);
}

TEST(CallgrindDumpTest, PerRequestCostsWithTheCacheModel) {
  auto totals = parse_callgrind_dump(kCacheDump, "dump");
  auto costs = per_request_costs(totals, 1000);
  EXPECT_DOUBLE_EQ(costs.at("instructions_per_request"), 1000);
  EXPECT_DOUBLE_EQ(costs.at("syscalls_per_request"), 3);
  // accesses 1.5M; L1 misses 8000; LL misses 800: L1 hits 1,492,000, LL hits
  // 7,200, RAM 800: 1,492,000 + 36,000 + 28,000 = 1,556,000 over 1000 requests.
  EXPECT_DOUBLE_EQ(costs.at("estimated_cycles_per_request"), 1556);
}

TEST(CallgrindDumpTest, TotalsWinOverSummaryAndSumAcrossProcesses) {
  std::string text = "events: Ir\nsummary: 5\ntotals: 7\n";
  auto a = parse_callgrind_dump(text, "a");
  EXPECT_DOUBLE_EQ(a.at("Ir"), 7);
  auto b = parse_callgrind_dump("events: Ir sysCount\nsummary: 3 2\n", "b");
  add_totals(a, b);
  EXPECT_DOUBLE_EQ(a.at("Ir"), 10);
  EXPECT_DOUBLE_EQ(a.at("sysCount"), 2);
  auto costs = per_request_costs(a, 2);
  EXPECT_FALSE(costs.contains("estimated_cycles_per_request"));
}

TEST(CallgrindDumpTest, RefusesWhatIsNoDump) {
  auto refused = [](const std::string& text) {
    try {
      parse_callgrind_dump(text, "x.out");
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("x.out: ", 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      return true;
    }
    return false;
  };
  EXPECT_TRUE(refused(""));
  EXPECT_TRUE(
      refused("\x7f"
              "ELF\x02\x01\x01"));
  EXPECT_TRUE(refused("events: Ir\n"));                 // cut before its totals
  EXPECT_TRUE(refused("events: Ir\ntotals: 1 2\n"));    // more totals than events
  EXPECT_TRUE(refused("events: Ir\ntotals: -5\n"));     // not a count
  EXPECT_TRUE(refused("events: Ir\ntotals: 1e400\n"));  // not a count
  EXPECT_TRUE(refused("events: Ir\ntotals: 123456789012345678901234\n"));
  EXPECT_TRUE(refused("events: Ir\ntotals: 12345678901234567890\n"));  // past what a double holds
  EXPECT_FALSE(refused("events: Ir\ntotals: 999999999999999\n"));
  EXPECT_TRUE(refused("events: Ir Ir\ntotals: 1 2\n"));  // an event named twice
  // Nothing counted over the requests: the serving process was not counted.
  try {
    per_request_costs(parse_callgrind_dump("events: Ir\ntotals: 0\n", "d"), 10);
    ADD_FAILURE() << "Ir 0 passed as free requests";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("counted no instructions over 10 requests"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(per_request_costs(parse_callgrind_dump("events: Dr\ntotals: 1\n", "d"), 10), Error);
  EXPECT_THROW(per_request_costs(parse_callgrind_dump("events: Ir\ntotals: 1\n", "d"), 0), Error);
}

// Issue 50 item 15: a dump cut short by a full disk was "not a callgrind dump".
TEST(CallgrindDumpTest, ADumpCutShortIsSaidToBeCutShort) {
  try {
    parse_callgrind_dump("# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 85",
                         "x.out");
    FAIL() << "a cut dump was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.out: callgrind dump cut short (63 bytes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace perfgate
