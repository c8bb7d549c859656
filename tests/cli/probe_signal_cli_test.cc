// The probe before a load (one request with libcurl, to tell an unreachable
// target from a slow one) ends on SIGINT/SIGTERM, not at load.timeout. The
// target accepts and never answers; the signal comes once it saw the probe's
// connection. The bound is run_command's timeout, far below load.timeout.
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <string>

#include "support/engine_fixtures.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::TempDir;

class ProbeSignalCliTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ProbeSignalCliTest, SignalEndsTheProbeOfASilentTarget) {
  TempDir dir;
  auto marker = dir / "connected";
  testing::LoopbackListener silent([&](int fd) {
    testing::write_file(marker, "");
    char buffer[4096];
    while (::recv(fd, buffer, sizeof buffer, 0) > 0) {
    }
  });
  testing::write_file(dir / "profile.json", R"({
  "name": "probe-signal",
  "target": { "url": "http://127.0.0.1:)" + std::to_string(silent.port()) +
                                                R"(/" },
  "load": { "threads": 1, "connections": 1, "duration": "300ms", "warmup": "0s", "timeout": "60s" },
  "repeat": { "count": 2, "discard": 0 }
})");
  std::string script =
      "\"$0\" run \"$1\" --store \"$2\" & pid=$!; "
      "while [ ! -e \"$3\" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
      "kill -" +
      std::string(GetParam()) + " $pid; wait $pid";
  auto r = testing::run_command(
      {"/bin/sh", "-c", script, testing::perfgate_binary(), (dir / "profile.json").string(),
       (dir / "perfgate.db").string(), marker.string()},
      {}, {}, 20);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  silent.stop();
}

INSTANTIATE_TEST_SUITE_P(Signals, ProbeSignalCliTest, ::testing::Values("INT", "TERM"));

}  // namespace
}  // namespace perfgate
