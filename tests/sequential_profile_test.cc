// `repeat.max_count`: read, bounded, kept by the store, and not in the hash.
#include <gtest/gtest.h>

#include "perfgate/profile/profile.h"

namespace perfgate {
namespace {

Profile parse(const std::string& repeat) {
  std::string text =
      R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/"}, "repeat": )" + repeat + "}";
  return parse_profile(text, "p.json", [](std::string_view) { return std::nullopt; });
}

TEST(SequentialProfileTest, MaxCountIsReadAndOffByDefault) {
  EXPECT_EQ(parse(R"({"count": 6, "discard": 1})").repeat.max_count, 0);
  EXPECT_EQ(parse(R"({"count": 6, "discard": 1, "max_count": 16})").repeat.max_count, 16);
}

TEST(SequentialProfileTest, MaxCountBelowCountOrPastTheBoundIsRejected) {
  for (const char* bad : {R"({"count": 6, "discard": 1, "max_count": 5})",
                          R"({"count": 6, "discard": 1, "max_count": 10001})",
                          R"({"count": 6, "discard": 1, "max_count": "many"})"}) {
    try {
      parse(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const ProfileError& e) {
      EXPECT_NE(std::string(e.what()).find("max_count"), std::string::npos) << e.what();
    }
  }
}

TEST(SequentialProfileTest, MaxCountIsStoredButNotHashed) {
  auto plain = parse(R"({"count": 6, "discard": 1})");
  auto longer = parse(R"({"count": 6, "discard": 1, "max_count": 16})");
  EXPECT_EQ(plain.hash, longer.hash);  // a longer run measures the same thing
  EXPECT_EQ(plain.redacted_json.find("max_count"), std::string::npos);
  EXPECT_NE(longer.redacted_json.find("\"max_count\":16"), std::string::npos)
      << longer.redacted_json;
}

// repeat.budget: a duration, off by default, stored, not hashed.
TEST(SequentialProfileTest, BudgetIsADurationStoredButNotHashed) {
  EXPECT_EQ(parse(R"({"count": 6, "discard": 1})").repeat.budget, Nanos(0));
  auto budgeted = parse(R"({"count": 6, "discard": 1, "max_count": 16, "budget": "80s"})");
  EXPECT_EQ(budgeted.repeat.budget, std::chrono::seconds(80));
  EXPECT_EQ(budgeted.hash, parse(R"({"count": 6, "discard": 1})").hash);
  EXPECT_NE(budgeted.redacted_json.find("\"budget\":\"80s\""), std::string::npos)
      << budgeted.redacted_json;
  try {
    parse(R"({"count": 6, "discard": 1, "budget": "soon"})");
    ADD_FAILURE() << "accepted a budget that is no duration";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("repeat.budget"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace perfgate
