// Which dump files a count sums (counted_dump_files): every process's counts
// since `zero` once, children that exited during the count included, nothing
// written before the mark or after the closing dump.
#include <gtest/gtest.h>

#include "perfgate/host/callgrind_session.h"

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

}  // namespace
}  // namespace perfgate
