#include "perfgate/core/cpu_list.h"

#include <gtest/gtest.h>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

TEST(CpuListTest, ParsesTheKernelsListForm) {
  EXPECT_EQ(parse_cpu_list("0"), (CpuList{0}));
  EXPECT_EQ(parse_cpu_list("1-3"), (CpuList{1, 2, 3}));
  EXPECT_EQ(parse_cpu_list("0,2-3,7\n"), (CpuList{0, 2, 3, 7}));
  EXPECT_EQ(parse_cpu_list("3,1,1-2"), (CpuList{1, 2, 3}));  // sorted, unique
}

TEST(CpuListTest, RejectsWhatNamesNoCpu) {
  for (const char* bad : {"", "a", "1-", "-1", "3-1", "1,,2", "4096", " 1"})
    EXPECT_THROW(parse_cpu_list(bad), Error) << bad;
}

TEST(CpuListTest, FormatsRangesAsTheKernelDoes) {
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list({1}), "1");
  EXPECT_EQ(format_cpu_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(format_cpu_list(parse_cpu_list("0-3,6")), "0-3,6");
}

}  // namespace
}  // namespace perfgate
