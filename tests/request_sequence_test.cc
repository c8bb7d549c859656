// The cost phase's script: exactly N requests, in the same order every time.
#include "perfgate/load/request_sequence.h"

#include <gtest/gtest.h>

#include "perfgate/core/error.h"
#include "perfgate/load/demo_server.h"

namespace perfgate {
namespace {

Profile profile_for(const std::string& url) {
  Profile p;
  p.target.url = url;
  return p;
}

TEST(RequestSequenceTest, MixOrderFollowsTheWeightsTheSameEveryTime) {
  std::vector<TargetSpec> mix(2);
  mix[0].weight = 3;
  mix[1].weight = 1;
  auto order = fixed_mix_order(mix, 8);
  ASSERT_EQ(order.size(), 8u);
  EXPECT_EQ(std::count(order.begin(), order.end(), 0u), 6);
  EXPECT_EQ(order, fixed_mix_order(mix, 8));
  // Spread out, not 6 then 2: no run of more than three of the heavier entry.
  int run = 0, longest = 0;
  for (size_t k : order) longest = std::max(longest, run = k == 0 ? run + 1 : 0);
  EXPECT_LE(longest, 3);
  EXPECT_EQ(fixed_mix_order({TargetSpec{}}, 3), (std::vector<size_t>{0, 0, 0}));
}

TEST(RequestSequenceTest, SendsExactlyTheCountOverEveryConnection) {
  DemoServer server(DemoServerOptions{});
  std::atomic<bool> stop{false};
  auto out = send_sequence(profile_for(server.url()), 10, 4, std::chrono::seconds(5), stop);
  EXPECT_EQ(out.answered, 10);
  EXPECT_EQ(out.failed, 0);
  EXPECT_EQ(server.requests_served(), 10u);
}

TEST(RequestSequenceTest, CountsFailuresWithoutThrowing) {
  DemoServerOptions o;
  o.error_every = 5;
  DemoServer server(o);
  std::atomic<bool> stop{false};
  auto out = send_sequence(profile_for(server.url()), 10, 1, std::chrono::seconds(5), stop);
  EXPECT_EQ(out.answered, 10);
  EXPECT_EQ(out.failed, 2);
  EXPECT_NE(out.first_failure.find("status 500"), std::string::npos);
}

TEST(RequestSequenceTest, RefusesWhatItCannotSend) {
  std::atomic<bool> stop{false};
  EXPECT_THROW(
      send_sequence(profile_for("https://127.0.0.1:1/"), 1, 1, std::chrono::seconds(1), stop),
      Error);
  // Nothing listens on port 1 of loopback (a privileged port nobody binds here).
  EXPECT_THROW(
      send_sequence(profile_for("http://127.0.0.1:1/"), 1, 1, std::chrono::seconds(1), stop),
      Error);
}

}  // namespace
}  // namespace perfgate
