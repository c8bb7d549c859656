#include "perfgate/core/bounded_read.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "support/test_support.h"

namespace perfgate {
namespace {

TEST(BoundedReadTest, AnEndlessFileStopsOneBytePastTheLimit) {
  auto read = read_bounded("/dev/zero", 100'000);
  EXPECT_TRUE(read.too_large);
  EXPECT_EQ(read.bytes.size(), 100'001u);
  EXPECT_EQ(read.error, 0);
}

TEST(BoundedReadTest, AFileWithinTheLimitIsReadWhole) {
  testing::TempDir dir;
  testing::write_file(dir / "body", "exactly");
  auto read = read_bounded(dir / "body", 7);
  EXPECT_FALSE(read.too_large);
  EXPECT_EQ(read.bytes, "exactly");
  EXPECT_TRUE(read_bounded(dir / "body", 6).too_large);
}

TEST(BoundedReadTest, SaysWhyAFileCannotBeRead) {
  testing::TempDir dir;
  EXPECT_EQ(read_bounded(dir / "missing", 10).error, ENOENT);
  EXPECT_EQ(read_bounded(dir.path(), 10).error, EISDIR);
}

}  // namespace
}  // namespace perfgate
