#include "perfgate/load/fd_limit.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <string>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

TEST(FdLimit, NeedsOneFilePerConnectionAndAMargin) {
  EXPECT_EQ(fds_needed(1000), 1064u);
  EXPECT_EQ(fds_needed(0), 64u);
}

TEST(FdLimit, KeepsASoftLimitThatIsEnough) {
  EXPECT_EQ(soft_limit_for(1064, 4096, 8192, 1000), 4096u);
}

TEST(FdLimit, RaisesTheSoftLimitUpToTheHardOne) {
  EXPECT_EQ(soft_limit_for(10064, 1024, 524288, 10000), 10064u);
  EXPECT_EQ(soft_limit_for(10064, 1024, 10064, 10000), 10064u);
}

TEST(FdLimit, SaysHowToFixAHardLimitTooLow) {
  try {
    soft_limit_for(10064, 1024, 4096, 10000);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("10000 connections need 10064 open files"), std::string::npos);
    EXPECT_NE(message.find("hard limit (ulimit -Hn) is 4096"), std::string::npos);
  }
}

TEST(FdLimit, RaisesThisProcessLimit) {
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  if (before.rlim_max < 2000) GTEST_SKIP() << "hard limit below 2000";
  uint64_t soft = ensure_fd_limit(1500);
  EXPECT_GE(soft, 1564u);
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, soft);
  if (before.rlim_max != RLIM_INFINITY) {
    EXPECT_THROW(ensure_fd_limit(static_cast<int>(before.rlim_max)), Error);
  }
}

}  // namespace
}  // namespace perfgate
