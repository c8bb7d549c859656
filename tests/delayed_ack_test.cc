// The note on a service held 40 ms a request by Nagle's algorithm and the
// client's delayed ACK: what Python's http.server does by default.
#include "perfgate/host/delayed_ack.h"

#include <gtest/gtest.h>

namespace perfgate {
namespace {

TEST(DelayedAckTest, FortyMillisecondsOnEveryRequestOfAnIdleServiceIsNamed) {
  // Measured: http.server, 16 connections, 0.86 ms of CPU a request.
  auto note = delayed_ack_note({43.9, 45.0, 864.2});
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("every request waited about 44 ms (p50 43.9, p90 45.0) while the service "
                       "spent 0.86 ms of CPU on it"),
            std::string::npos)
      << *note;
  EXPECT_NE(note->find("TCP_NODELAY"), std::string::npos);
  EXPECT_NE(note->find("disable_nagle_algorithm = True"), std::string::npos);
}

TEST(DelayedAckTest, OtherShapesSayNothing) {
  EXPECT_FALSE(delayed_ack_note({43.9, 45.0, std::nullopt}));  // the service unknown
  EXPECT_FALSE(delayed_ack_note({2.7, 4.0, 760}));             // answered at once
  EXPECT_FALSE(delayed_ack_note({43.9, 45.0, 30000}));         // busy working: 30 ms of CPU
  EXPECT_FALSE(delayed_ack_note({43.9, 90.0, 500}));           // not every request held
  EXPECT_FALSE(delayed_ack_note({120, 125, 500}));             // a longer wait of its own
}

}  // namespace
}  // namespace perfgate
