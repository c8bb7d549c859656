// Hostile input below the CLI: profiles built to crash, hang or leak, each
// refused with a clear problem, or kept out of what the store receives.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sqlite3.h>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "perfgate/core/printable.h"
#include "perfgate/core/units.h"
#include "perfgate/load/arrival_schedule.h"
#include "perfgate/load/load_engine.h"
#include "perfgate/profile/profile.h"
#include "perfgate/report/bench_report.h"
#include "perfgate/store/baseline_store.h"
#include "perfgate/store/shard.h"
#include "perfgate/store/store_maintenance.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using Vars = std::map<std::string, std::string>;

EnvLookup env_of(Vars vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Profile parse(std::string_view text, Vars vars = {}) {
  return parse_profile(text, "p.json", env_of(std::move(vars)));
}

/// The first problem line of a profile that must be rejected.
std::string first_problem(std::string_view text, Vars vars = {}) {
  try {
    parse(text, std::move(vars));
  } catch (const ProfileError& e) {
    return e.lines().front();
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 200);
  return "";
}

std::string profile_with(const std::string& target_extra, const std::string& extra = "") {
  return "{\"name\": \"t\",\n \"target\": {\"url\": \"http://127.0.0.1:8080/\"" + target_extra +
         "}" + extra + "}";
}

TEST(HostileProfile, NestedTwentyThousandLevelsIsRefusedWithItsLineNotAStackOverflow) {
  std::string deep =
      profile_with("", ",\n \"description\": " + std::string(20000, '[') + std::string(20000, ']'));
  std::string line = first_problem(deep);
  EXPECT_EQ(line.rfind("p.json:3:", 0), 0u) << line;
  EXPECT_NE(line.find("nested deeper than 64 levels"), std::string::npos) << line;
}

TEST(HostileProfile, BracketsInsideStringsAndCommentsAreNotNesting) {
  std::string text = profile_with("", ",\n \"description\": \"" + std::string(100, '[') + "\" // " +
                                          std::string(100, '{') + "\n");
  EXPECT_NO_THROW(parse(text));
}

TEST(HostileProfile, ALargerThanSixteenMebibyteProfileIsRefused) {
  std::string text =
      profile_with("", ",\n \"description\": \"" + std::string(16 * 1024 * 1024, 'x') + "\"");
  EXPECT_NE(first_problem(text).find("larger than 16 MiB"), std::string::npos);
}

TEST(HostileProfile, SubstitutionThatWouldExpandPast64MebibytesIsRefused) {
  std::string refs;
  for (int i = 0; i < 600; ++i) refs += "${BIG}";
  std::string text = profile_with("", ",\n \"description\": \"" + refs + "\"");
  std::string line = first_problem(text, {{"BIG", std::string(128 * 1024, 'x')}});
  EXPECT_NE(line.find("expand to more than 64 MiB"), std::string::npos) << line;
}

TEST(HostileProfile, ANumberPastADoublesRangeNamesItsLine) {
  std::string line = first_problem(profile_with("", ",\n \"load\": {\"rate\": 1e309}"));
  EXPECT_EQ(line,
            "p.json:3:19: number 1e309 is out of range (at most about 1.8e308, and "
            "integers fit 64 bits)");
}

TEST(HostileProfile, AnOutOfRangeDurationSaysItsLimitNotItsForm) {
  std::string line =
      first_problem(profile_with("", ",\n \"load\": {\"duration\": \"99999999999h\"}"));
  EXPECT_NE(line.find("load.duration: must be at most 24h"), std::string::npos) << line;
  EXPECT_TRUE(is_overlong_duration("99999999999h"));
  EXPECT_TRUE(is_overlong_duration("999999999999999999999"));
  EXPECT_FALSE(is_overlong_duration("10s"));
  EXPECT_FALSE(is_overlong_duration("ten seconds"));
  EXPECT_FALSE(is_overlong_duration("1.2.3s"));
}

TEST(HostileProfile, NulAndControlCharactersInTheUrlAreRefused) {
  for (std::string bad : {"\\u0000", "\\u001b[2J", "\\u007f", "\\u0007"}) {
    std::string text =
        "{\"name\": \"t\", \"target\": {\"url\": \"http://127.0.0.1:8080/a" + bad + "\"}}";
    EXPECT_NE(first_problem(text).find("target.url: must not contain control characters or NUL"),
              std::string::npos)
        << bad;
  }
}

TEST(HostileProfile, NulAndControlCharactersInHeaderValuesAreRefused) {
  for (std::string bad : {"\\u0000", "\\u001b]0;x\\u0007", "\\u007f"}) {
    std::string line = first_problem(profile_with(", \"headers\": {\"X-A\": \"a" + bad + "\"}"));
    EXPECT_NE(line.find("target.headers.X-A: must not contain control characters or NUL"),
              std::string::npos)
        << line;
  }
  std::string line = first_problem(
      profile_with(", \"headers\": {\"X-A\": \"" + std::string(65 * 1024, 'a') + "\"}"));
  EXPECT_NE(line.find("target.headers.X-A: is longer than 64 KiB"), std::string::npos) << line;
  // A tab is folding whitespace in a field value, and stays allowed.
  EXPECT_NO_THROW(parse(profile_with(", \"headers\": {\"X-A\": \"a\\tb\"}")));
}

TEST(HostileProfile, AHeaderValueFromTheEnvironmentIsNotStored) {
  Profile p =
      parse(profile_with(", \"headers\": {\"X-Custom\": \"pre-${CUSTOM}\", \"X-Plain\": \"shown\"},"
                         " \"requests\": [{\"path\": \"/a\"},"
                         " {\"path\": \"/b\", \"headers\": {\"X-Custom\": \"literal\","
                         " \"X-Other\": \"${OTHER}\"}}]"),
            {{"CUSTOM", "hunter2"}, {"OTHER", "swordfish"}});
  // The load still sends the values.
  EXPECT_EQ(p.target.headers[0].second, "pre-hunter2");
  EXPECT_EQ(p.redacted_json.find("hunter2"), std::string::npos) << p.redacted_json;
  EXPECT_EQ(p.redacted_json.find("swordfish"), std::string::npos) << p.redacted_json;
  auto j = nlohmann::json::parse(p.redacted_json);
  EXPECT_EQ(j["target"]["headers"]["X-Custom"], "<redacted>");
  EXPECT_EQ(j["target"]["headers"]["X-Plain"], "shown");
  EXPECT_EQ(j["target"]["requests"][0]["headers"]["X-Custom"], "<redacted>");  // inherited
  EXPECT_EQ(j["target"]["requests"][1]["headers"]["X-Custom"], "literal");
  EXPECT_EQ(j["target"]["requests"][1]["headers"]["X-Other"], "<redacted>");
}

TEST(HostileLoad, ARateOf1e300IsRefusedInsteadOfCountingForEver) {
  EXPECT_THROW(ArrivalSchedule(1e300, 1), Error);
  EXPECT_THROW(ArrivalSchedule(std::numeric_limits<double>::infinity(), 1), Error);
  EXPECT_THROW(ArrivalSchedule(std::numeric_limits<double>::quiet_NaN(), 1), Error);
  ArrivalSchedule fastest(ArrivalSchedule::kMaxRate, 4);
  EXPECT_EQ(fastest.due_before(0, std::chrono::microseconds(1)), 250u);
}

TEST(HostileOutput, PrintableEscapesControlBytesAndKeepsUtf8) {
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(printable(std::string("n\0l", 3)), "n\\x00l");
  EXPECT_EQ(printable("two\nlines\r"), "two\\x0alines\\x0d");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
  EXPECT_EQ(printable("csi\xc2\x9b"), "csi\\xc2\\x9b");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
}

TEST(HostileOutput, TheBenchBannerHidesTheUrlsPassword) {
  LoadPlan plan;
  plan.target.url = "http://user:hunter2@127.0.0.1:8080/x";
  plan.duration = std::chrono::seconds(1);
  std::string text = bench_report(plan, LoadResult{}, false);
  EXPECT_EQ(text.find("hunter2"), std::string::npos) << text;
  EXPECT_NE(text.find("@ http://user:<redacted>@127.0.0.1:8080/x"), std::string::npos) << text;
}

/// Accepts one connection on 127.0.0.1, reads the request, writes `answer`, closes.
class OneAnswerServer {
 public:
  explicit OneAnswerServer(std::string answer) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), len);
    listen(fd_, 4);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, answer = std::move(answer)] { serve(answer); });
  }
  ~OneAnswerServer() {
    thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

 private:
  void serve(const std::string& answer) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return;
    int client = accept(fd_, nullptr, nullptr);
    char request[4096];
    (void)!read(client, request, sizeof request);
    for (size_t sent = 0; sent < answer.size();) {
      ssize_t n = write(client, answer.data() + sent, answer.size() - sent);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    close(client);
  }
  int fd_;
  uint16_t port_ = 0;
  std::thread thread_;
};

std::string probe_error(const std::string& answer) {
  OneAnswerServer server(answer);
  TargetSpec target;
  target.url = server.url();
  try {
    probe_target(target, std::chrono::seconds(5));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HostileTarget, AHugeResponseHeaderIsNamedNotOutOfMemory) {
  std::string line =
      probe_error("HTTP/1.1 200 OK\r\nX-Big: " + std::string(10 * 1024 * 1024, 'a') + "\r\n\r\n");
  EXPECT_EQ(line.find("Out of memory"), std::string::npos) << line;
  EXPECT_NE(line.find("headers are too large"), std::string::npos) << line;
}

TEST(HostileTarget, AnHttp09AnswerIsNamedAsSuch) {
  std::string line = probe_error("hello, no status line here\n");
  EXPECT_NE(line.find("no HTTP status line"), std::string::npos) << line;
}

// Issue 41, item 10: a branch, commit or reason that is not UTF-8 was stored,
// and every export, `history --json` and import after threw nlohmann's
// type_error 316. Such bytes are replaced where text becomes JSON.
TEST(HostileStore, BytesThatAreNotUtf8StillExportAndImport) {
  testing::TempDir dir;
  RunRecord run = testing::synthetic_run(1, 1000, 5, "br\xff\xfe");
  run.ci.commit = "c0\xc3";
  run.host.fields["cpu_model"] = "cpu\x80";
  run.saturation.reasons = {"proc \xfe at 99%"};
  auto store = BaselineStore::open(dir / "s.db");
  store.record(run);
  store.set_review(1, {"accepted", "why\xff", "me", "2026-12-01T00:00:00Z"});
  std::string line;
  ASSERT_NO_THROW(line = to_json_line(*store.run(1)));
  EXPECT_EQ(run_from_json_line(line).ci.branch, "br\xef\xbf\xbd\xef\xbf\xbd");
  std::ostringstream exported;
  ASSERT_NO_THROW(export_runs(store, exported));
  // An import checks each line against the stored runs: the bad one among them.
  std::istringstream good(to_json_line(testing::synthetic_run(2, 1000, 5), false) + "\n");
  EXPECT_EQ(import_runs(store, good, "good.jsonl").added, 1);
  std::istringstream again(exported.str());
  EXPECT_NO_THROW(import_runs(store, again, "exported.jsonl"));
}

// Issue 41, item 5: a window's duration is its throughput's denominator. One
// of 1 ns, or of 0 for responses, would stand as a baseline no build reaches;
// a real short window (a run cut by a signal) still reads.
TEST(HostileStore, AnImportedWindowPastAnyLoadMachinesThroughputIsRefused) {
  auto with_duration = [](int64_t ns) {
    auto j = nlohmann::json::parse(to_json_line(testing::synthetic_run(1, 1000, 5), false));
    j["iterations"][0]["duration_ns"] = ns;
    return j.dump();
  };
  auto refused = [&](int64_t ns, const std::string& why) {
    try {
      run_from_json_line(with_duration(ns));
      ADD_FAILURE() << ns << " ns was imported";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(1, "responses in 1 ns is past any load machine's throughput (1e8 req/s at most)");
  refused(0, "iterations[0].duration_ns: 0 for ");
  EXPECT_NO_THROW(run_from_json_line(with_duration(1'000'000)));  // 1 ms: a short real window
}

// Issue 41, item 14: PRAGMA user_version = -1 indexed the migrations with
// size_t(-1) and crashed.
TEST(HostileStore, ANegativeSchemaVersionIsRefusedNotACrash) {
  testing::TempDir dir;
  auto path = dir / "s.db";
  BaselineStore::open(path).record(testing::synthetic_run(1, 1000, 5));
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA user_version = -1", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  for (auto mode : {BaselineStore::Mode::kReadWrite, BaselineStore::Mode::kReadOnly}) {
    try {
      BaselineStore::open(path, mode);
      ADD_FAILURE() << "opened";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("schema version -1, which no perfgate writes"),
                std::string::npos)
          << e.what();
    }
  }
}

// Issue 41, item 15: a 300,000-deep array where a shard's run is, or an export
// line, overflowed the stack in the recursive dump(). Refused at the read.
TEST(HostileJson, ADocumentNestedThreeHundredThousandDeepIsRefused) {
  std::string deep = std::string(300'000, '[') + std::string(300'000, ']');
  testing::TempDir dir;
  testing::write_file(dir / "shard.json", R"({"shard": {"format": 1}, "run": )" + deep + "}");
  try {
    read_shard_file(dir / "shard.json");
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("JSON nested deeper than 100 levels"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(run_from_json_line(deep), Error);
}

// Issue 41, item 20: a shard "format" that is an array printed nlohmann's words.
TEST(HostileJson, AShardFormatThatIsAnArrayIsNamedInPerfgatesWords) {
  testing::TempDir dir;
  testing::write_file(dir / "shard.json", R"({"shard": {"format": [1, 2]}, "run": {}})");
  try {
    read_shard_file(dir / "shard.json");
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(": shard format [1,2], this perfgate reads format"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace perfgate
