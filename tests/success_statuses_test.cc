// Which statuses are successes (SuccessStatuses), and how StatusCounts keeps a
// request's own judgement through the store, which has no column for it.
#include "perfgate/core/success_statuses.h"

#include <gtest/gtest.h>

#include "perfgate/core/load_result.h"

namespace perfgate {
namespace {

std::optional<std::pair<int, int>> term(std::string_view text) {
  std::string why;
  return SuccessStatuses::parse_term(text, why);
}

TEST(SuccessStatusesTest, DefaultIs2xxAnd3xxOnly) {
  SuccessStatuses d;
  EXPECT_TRUE(d.contains(200));
  EXPECT_TRUE(d.contains(399));
  EXPECT_FALSE(d.contains(101));
  EXPECT_FALSE(d.contains(199));
  EXPECT_FALSE(d.contains(404));
  EXPECT_FALSE(d.contains(0));
}

TEST(SuccessStatusesTest, TermsAreCodesClassesAndRanges) {
  EXPECT_EQ(term("404"), (std::pair{404, 404}));
  EXPECT_EQ(term("4xx"), (std::pair{400, 499}));
  EXPECT_EQ(term("2XX"), (std::pair{200, 299}));
  EXPECT_EQ(term("200-204"), (std::pair{200, 204}));
  for (auto bad : {"", "1xx", "101", "100-299", "600", "2x", "abc", "299-200", "20", "4044", "200-",
                   "-200", "2xxx"})
    EXPECT_FALSE(term(bad).has_value()) << bad;
}

TEST(SuccessStatusesTest, Row12_A404ListedAsSuccessIsNoFailure) {
  SuccessStatuses s;
  s.ranges = {{200, 299}, {404, 404}};
  StatusCounts counts;
  for (int status : {200, 404, 404, 301, 500, 101}) counts.count(status, s.contains(status));
  EXPECT_EQ(counts.of_class(4), 2u);  // reports still see the true classes
  EXPECT_EQ(counts.failed(), 3u);     // 301 (not listed), 500, 101
}

TEST(SuccessStatusesTest, Row12_TheStoredClassesKeepTheFailureCount) {
  SuccessStatuses s;
  s.ranges = {{200, 200}, {404, 404}};
  StatusCounts counts;
  for (int status : {200, 204, 404, 404, 500, 101}) counts.count(status, s.contains(status));
  StatusCounts read_back;
  read_back.by_class = counts.stored_classes();  // what the store gives back
  EXPECT_EQ(read_back.failed(), counts.failed());
  EXPECT_EQ(counts.failed(), 3u);  // 204, 500, 101
  uint64_t total = 0;
  for (auto n : read_back.by_class) total += n;
  EXPECT_EQ(total, 6u);
}

TEST(SuccessStatusesTest, DefaultJudgementStoresTheTrueClasses) {
  StatusCounts counts;
  for (int status : {200, 302, 404, 503, 101}) counts.count(status);
  EXPECT_EQ(counts.stored_classes(), counts.by_class);
  EXPECT_EQ(counts.failed(), 3u);
}

}  // namespace
}  // namespace perfgate
