// Which dump files a count sums (counted_dump_files): every process's counts
// since `zero` once, children that exited during the count included, nothing
// written before the mark or after the closing dump.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "perfgate/host/callgrind_session.h"

#include "perfgate/core/error.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using Files = std::vector<std::string>;

// The parent (100) forked children 201 and 202 during the count, each dumping
// before its fork (parts .2, .3); 201 exited (its final dump), 202 still ran and
// answered the closing dump (.1). Files before the mark: the parent's empty final
// dump, a warm-up fork's part and a warm-up child's final dump.
TEST(CountedDumpFiles, SumsEachProcessOnceSinceTheMark) {
  DumpMark mark = {"callgrind.out.100", "callgrind.out.100.1", "callgrind.out.150"};
  Files after_dump = {"callgrind.out.100",
                      "callgrind.out.100.1",
                      "callgrind.out.100.2",
                      "callgrind.out.100.3",
                      "callgrind.out.100.4",
                      "callgrind.out.150",
                      "callgrind.out.201",
                      "callgrind.out.202",
                      "callgrind.out.202.1",
                      "valgrind.100.log",
                      "vgdb-from-vgdb-to-100-by-root-on-host"};
  // Later: the parent forked once more (.5, after the dump), 202 exited (its final
  // dump, after what was counted), 203 was forked after the dump and exited.
  Files after_exit = after_dump;
  after_exit.insert(after_exit.end(), {"callgrind.out.100.5", "callgrind.out.203"});
  EXPECT_EQ(counted_dump_files(mark, {100, 202}, after_dump, after_exit),
            (Files{"callgrind.out.100.2", "callgrind.out.100.3", "callgrind.out.100.4",
                   "callgrind.out.201", "callgrind.out.202.1", "callgrind.out.203"}));
}

// A child that forked a grandchild dumped a part before it and its final dump at
// exit: both count. A process that answered counts no final dump, even one
// already written.
TEST(CountedDumpFiles, AnEndedProcessCountsEveryDumpAndAnAnsweringOneOnlyItsParts) {
  Files files = {"callgrind.out.300", "callgrind.out.300.1", "callgrind.out.301",
                 "callgrind.out.400", "callgrind.out.400.1"};
  EXPECT_EQ(counted_dump_files({}, {400}, files, files),
            (Files{"callgrind.out.300", "callgrind.out.300.1", "callgrind.out.301",
                   "callgrind.out.400.1"}));
}

// Names that are not callgrind's dumps, or only look like them, are no dumps.
TEST(CountedDumpFiles, OtherNamesAreNotDumps) {
  Files files = {"callgrind.out.",           "callgrind.out.x1", "callgrind.out.12.a",
                 "callgrind.out.1234567890", "xcallgrind.out.5", "callgrind.out.12.3.4"};
  EXPECT_TRUE(counted_dump_files({}, {}, files, files).empty());
}

// The reading half of a count, on a folder of dumps: the counted ones summed,
// and its two errors, each one line that says what was lost.
class SumCountedDumps : public ::testing::Test {
 protected:
  void dump(const std::string& name, const std::string& ir) {
    testing::write_file(dir_ / name, "events: Ir\nsummary: " + ir + "\n\ntotals: " + ir + "\n");
  }
  testing::TempDir dir_;
};

TEST_F(SumCountedDumps, SumsTheDumpsOfTheLiveAndTheEndedOnce) {
  dump("callgrind.out.100.1", "1000");  // before the mark: the warm-up's
  DumpMark mark = {"callgrind.out.100.1"};
  dump("callgrind.out.100.2", "50");  // the parent's closing dump
  dump("callgrind.out.201", "700");   // a child that exited
  auto after_dump = Files{"callgrind.out.100.1", "callgrind.out.100.2", "callgrind.out.201"};
  auto counted = sum_counted_dumps(
      dir_.path(), mark, {100}, after_dump, [] { return std::vector<pid_t>{100}; },
      std::chrono::seconds(1));
  EXPECT_EQ(counted.totals.at("Ir"), 750);
  EXPECT_EQ(counted.processes, 2);
  EXPECT_EQ(counted.ended, 1);
}

TEST_F(SumCountedDumps, AProcessThatNeverEndsIsAnErrorAfterTheTimeout) {
  try {
    sum_counted_dumps(
        dir_.path(), {}, {100}, {},
        [] {
          return std::vector<pid_t>{100, 301};
        },
        std::chrono::milliseconds(50));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(first: PID 301) still ran"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("cost.timeout waits longer"), std::string::npos);
  }
}

TEST_F(SumCountedDumps, AnEndedProcessWithAnEmptyDumpIsAnError) {
  testing::write_file(dir_ / "callgrind.out.202", "");
  try {
    sum_counted_dumps(
        dir_.path(), {}, {100}, {}, [] { return std::vector<pid_t>{100}; },
        std::chrono::seconds(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("process 202 of the service ended without writing"),
              std::string::npos)
        << e.what();
  }
}

// Issue 50 item 5: a FIFO planted as the newest dump part held the count's
// read for good (a writer kept it open and never wrote); a link made it read
// whatever it named. Neither is read.
TEST_F(SumCountedDumps, AFifoOrALinkInADumpsPlaceIsRefusedUnread) {
  dump("elsewhere", "999");
  ASSERT_EQ(::symlink((dir_ / "elsewhere").c_str(), (dir_ / "callgrind.out.100.2").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir_ / "callgrind.out.100.3").c_str(), 0600), 0);
  // A writer holds the FIFO open, as a planted one's would: a blocking read
  // would wait for it for ever.
  int writer_end = ::open((dir_ / "callgrind.out.100.3").c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(writer_end, 0);
  for (const char* planted : {"callgrind.out.100.2", "callgrind.out.100.3"}) {
    SCOPED_TRACE(planted);
    auto listed = Files{planted};
    try {
      sum_counted_dumps(
          dir_.path(), {}, {100}, listed, [] { return std::vector<pid_t>{100}; },
          std::chrono::seconds(1));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is not a regular file"), std::string::npos) << e.what();
    }
  }
  ::close(writer_end);
}

}  // namespace
}  // namespace perfgate
