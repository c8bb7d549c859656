// Every kind of bad input through the real binary: one line on stderr saying
// what and where, exit 3, and a pre-seeded store left byte for byte as it was.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

/// A listening socket on 127.0.0.1. `garbage`: accepts and writes bytes that are
/// not HTTP, then closes; otherwise never accepts, so connections hang unanswered.
class FakeServer {
 public:
  explicit FakeServer(bool garbage) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), len);
    listen(fd_, 64);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    if (garbage) thread_ = std::thread([this] { serve_garbage(); });
  }
  ~FakeServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  void serve_garbage() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int client = accept(fd_, nullptr, nullptr);
      if (client < 0) continue;
      constexpr char kJunk[] = "\x16\x03\x01 SSH-2.0-notHTTP \x00\xff garbage\r\n\r\n";
      (void)!write(client, kJunk, sizeof kJunk - 1);
      close(client);
    }
  }
  int fd_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Built once: a demo server, the fake servers, and a store holding one real run.
struct World {
  TempDir dir;
  testing::DemoServerProcess demo;
  FakeServer garbage{true};
  FakeServer silent{false};
  uint16_t dead_port = testing::unused_port();
  fs::path store = dir / "seed.db";
  fs::path text_file = dir / "notes.txt";
  fs::path foreign_db = dir / "app.db";
  fs::path good_profile = dir / "good.json";

  std::string url() const { return demo.url(); }
};

constexpr const char* kGood = R"({
  "name": "bad-input",
  "target": { "url": "URL" },
  "load": { "threads": 1, "connections": 2, "duration": "100ms", "warmup": "0s", "timeout": "300ms" },
  "repeat": { "count": 1, "discard": 0 }
})";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

World& world() {
  static std::unique_ptr<World> w = [] {
    auto made = std::make_unique<World>();
    testing::write_file(made->good_profile, replace_all(kGood, "URL", made->url()));
    auto seeded =
        testing::run_command({testing::perfgate_binary(), "run", made->good_profile.string(),
                              "--store", made->store.string()});
    if (seeded.exit_code < 0 || seeded.exit_code > 2)
      throw std::runtime_error("cannot seed the store: " + seeded.err);
    testing::write_file(made->text_file, "not a database\n");
    sqlite3* db = nullptr;
    sqlite3_open(made->foreign_db.c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('x')", nullptr,
                 nullptr, nullptr);
    sqlite3_close(db);
    return made;
  }();
  return *w;
}

struct BadCase {
  const char* name;
  /// The profile written to bad.json before the run; "" writes none. URL,
  /// DEMO_PORT, DEAD_PORT, GARBAGE_PORT and SILENT_PORT are replaced.
  std::string profile;
  /// The arguments after the binary; the same words are replaced, plus PROFILE,
  /// STORE, TEXT, FOREIGN, DIR.
  std::vector<std::string> args;
  const char* expected;             // a substring of the one stderr line
  const char* known_gap = nullptr;  // why this case fails today; skipped until fixed
};

std::string with(const std::string& from, const std::string& to) {
  return replace_all(kGood, from, to);
}

std::vector<std::string> run_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run", "PROFILE", "--store", "STORE"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string service(const std::string& command, const std::string& ready) {
  return with(R"("repeat":)", R"("service": { "command": )" + command +
                                  R"(, "ready_url": "http://127.0.0.1:DEAD_PORT/", )" + ready +
                                  R"( }, "repeat":)");
}

// kGood in paired mode against `origin`, with the fewest pairs that can fail at
// the default limits' level (three tested metrics: 98.33 % each, 7 kept pairs).
std::string paired(const std::string& origin, const std::string& count = "8") {
  return with(R"("repeat": { "count": 1, "discard": 0 })",
              R"("repeat": { "count": )" + count +
                  R"(, "discard": 1 }, "paired": { "baseline": { "origin": ")" + origin +
                  R"(" } })");
}

const std::vector<BadCase>& cases() {
  static const std::vector<BadCase> table = {
      {"malformed_json", R"({ "name": "x",, })", run_args(), "bad.json:1:"},
      {"truncated_json", R"({ "name": "x",)", run_args(), "bad.json:1:"},
      {"array_not_object", "[1, 2]", run_args(), "bad.json"},
      {"empty_profile", " ", run_args(), "bad.json"},
      {"comment_never_closed", "/* oops\n{}", run_args(), "bad.json"},
      {"threads_is_a_string", with(R"("threads": 1)", R"("threads": "one")"), run_args(),
       "bad.json:4: load.threads"},
      {"url_is_a_number", with(R"("URL")", "80"), run_args(), "target.url"},
      {"repeat_is_a_string", with(R"({ "count": 1, "discard": 0 })", R"("ten")"), run_args(),
       "repeat"},
      {"headers_is_a_list", with(R"("URL" })", R"("URL", "headers": ["a"] })"), run_args(),
       "target.headers"},
      {"unknown_top_key", with(R"("name")", R"("nmae": "x", "name")"), run_args(), "nmae"},
      {"unknown_load_key", with(R"("threads")", R"("conections": 5, "threads")"), run_args(),
       "load.conections"},
      {"negative_connections", with(R"("connections": 2)", R"("connections": -5)"), run_args(),
       "load.connections"},
      {"zero_threads", with(R"("threads": 1)", R"("threads": 0)"), run_args(), "load.threads"},
      {"zero_repeat_count", with(R"("count": 1)", R"("count": 0)"), run_args(), "repeat.count"},
      {"discard_all_repeats", with(R"("discard": 0)", R"("discard": 1)"), run_args(),
       "repeat.discard"},
      {"negative_duration", with(R"("100ms")", R"("-1s")"), run_args(), "load.duration"},
      {"duration_without_unit_word", with(R"("100ms")", R"("10 parsecs")"), run_args(),
       "load.duration"},
      {"duration_of_a_year", with(R"("100ms")", R"("8760h")"), run_args(), "load.duration"},
      {"connections_a_billion", with(R"("connections": 2)", R"("connections": 1000000000)"),
       run_args(), "load.connections"},
      {"negative_rate", with(R"("timeout")", R"("rate": -10, "timeout")"), run_args(), "load.rate"},
      {"bad_percent_threshold",
       with(R"("repeat")", R"("thresholds": { "throughput": { "warn": "lots" } }, "repeat")"),
       run_args(), "thresholds.throughput.warn"},
      // Issue 26: one signal, two limits, twice the share of the false-fail budget.
      {"reciprocal_cost_limits",
       with(R"("repeat")",
            R"("thresholds": { "service_cpu_per_request": { "fail": "8%" },
                "requests_per_service_cpu": { "warn": "5%" } }, "repeat")"),
       run_args(), "thresholds.requests_per_service_cpu: is the reciprocal"},
      {"missing_url", with(R"("url": "URL")", R"("method": "GET")"), run_args(), "target.url"},
      {"ftp_scheme", with("URL", "ftp://127.0.0.1/"), run_args(), "ftp"},
      {"file_scheme", with("URL", "file:///etc/passwd"), run_args(), "file"},
      {"no_host", with("URL", "http://"), run_args(), "target.url"},
      {"missing_profile_file", "", {"run", "DIR/nope.json", "--store", "STORE"}, "nope.json"},
      {"profile_under_a_file",
       "",
       {"run", "TEXT/profile.json", "--store", "STORE"},
       "profile.json"},
      {"directory_as_profile", "", {"run", "DIR", "--store", "STORE"}, "DIR"},
      {"host_does_not_resolve", with("URL", "http://perfgate-test.invalid:8080/"), run_args(),
       "perfgate-test.invalid"},
      {"port_without_listener", with("URL", "http://127.0.0.1:DEAD_PORT/"), run_args(),
       "127.0.0.1:DEAD_PORT"},
      {"tls_to_plain_http", with("URL", "https://127.0.0.1:DEMO_PORT/"), run_args(),
       "127.0.0.1:DEMO_PORT"},
      {"server_not_http", with("URL", "http://127.0.0.1:GARBAGE_PORT/"), run_args(),
       "127.0.0.1:GARBAGE_PORT"},
      {"server_never_answers", with("URL", "http://127.0.0.1:SILENT_PORT/"), run_args(),
       "127.0.0.1:SILENT_PORT"},
      {"service_command_missing",
       service(R"(["/nonexistent/perfgate-service"])", R"("ready_timeout": "5s")"), run_args(),
       "/nonexistent/perfgate-service"},
      {"service_never_ready", service(R"(["sleep", "30"])", R"("ready_timeout": "500ms")"),
       run_args(), "ready"},
      {"service_exits_at_once", service(R"(["false"])", R"("ready_timeout": "5s")"), run_args(),
       "exit"},
      {"run_without_profile", "", {"run", "--store", "STORE"}, "profile"},
      {"run_unknown_flag", kGood, run_args({"--frobnicate"}), "frobnicate"},
      {"run_flag_without_value", kGood, {"run", "PROFILE", "--store"}, "--store"},
      {"bench_negative_connections", "", {"bench", "URL", "-c", "-5"}, "-c"},
      {"bench_bad_duration", "", {"bench", "URL", "-d", "soon"}, "-d"},
      {"bench_zero_threads", "", {"bench", "URL", "-t", "0"}, "threads (0)"},
      {"bench_unsupported_scheme", "", {"bench", "gopher://127.0.0.1/"}, "gopher"},
      {"validate_without_profile", "", {"validate"}, "profile"},
      {"validate_unknown_flag", kGood, {"validate", "PROFILE", "--fast"}, "--fast"},
      {"store_is_a_text_file", kGood, {"run", "PROFILE", "--store", "TEXT"}, "notes.txt"},
      {"store_is_foreign_sqlite", kGood, {"run", "PROFILE", "--store", "FOREIGN"}, "app.db"},
      {"store_is_a_directory", kGood, {"run", "PROFILE", "--store", "DIR"}, "DIR"},
      {"junit_into_missing_unwritable_path", kGood,
       run_args({"--junit", "/dev/null/reports/junit.xml"}), "/dev/null/reports/junit.xml"},
      {"paired_baseline_unreachable", paired("http://127.0.0.1:DEAD_PORT"), run_args(),
       "cannot reach http://127.0.0.1:DEAD_PORT/"},
      {"paired_origin_with_a_path", paired("http://127.0.0.1:DEAD_PORT/v1"), run_args(),
       "paired.baseline.origin: must be an origin"},
      {"paired_too_few_pairs", paired("http://127.0.0.1:DEAD_PORT", "3"), run_args(),
       "at least 7 kept pairs"},
      {"paired_sharded", paired("http://127.0.0.1:DEAD_PORT"),
       run_args({"--shard", "1/2", "--json", "DIR/shard.json"}), "cannot be sharded"},
      {"calibrate_paired",
       paired("http://127.0.0.1:DEAD_PORT"),
       {"calibrate", "PROFILE", "--runs", "2", "--store", "STORE"},
       "paired"},
      {"store_check_on_text_file", "", {"store", "check", "--store", "TEXT"}, "notes.txt"},
      // Issue 50: a commit label the store cannot keep; the cost section's keys.
      {"paired_commit_past_one_kib",
       replace_all(paired("http://127.0.0.1:DEAD_PORT"), R"(" } })",
                   R"(", "commit": ")" + std::string(1100, 'a') + R"(" } })"),
       run_args(), "paired.baseline.commit: must be at most 1024 bytes (a commit id), got 1100"},
      {"cost_requests_a_word", with(R"("repeat")", R"("cost": { "requests": "many" }, "repeat")"),
       run_args(), "cost.requests: must be \"auto\" or a positive integer"},
      {"cost_one_launch", with(R"("repeat")", R"("cost": { "launches": 1 }, "repeat")"), run_args(),
       "cost.launches: must be an integer from 2 to 50, got 1"},
      {"cost_count_time_zero", with(R"("repeat")", R"("cost": { "count_time": "0s" }, "repeat")"),
       run_args(), "cost.count_time"},
      // Issue 50 item 2: the target's server by another spelling of 127.0.0.1.
      {"paired_origin_decimal_loopback", paired("http://2130706433:DEMO_PORT"), run_args(),
       "paired.baseline.origin: is the target's port on another address of the same machine"},
      // Issue 50 item 14: found by `validate`, not after the load.
      {"cost_required_watched_service",
       with(R"("repeat")", R"("cost": { "required": true }, "repeat")"), run_args(),
       "cost: required: true needs a service perfgate starts (service.command)"},
  };
  return table;
}

std::string substitute(std::string text, const World& w, const fs::path& profile) {
  const std::pair<std::string, std::string> words[] = {
      {"URL", w.url()},
      {"DEMO_PORT", std::to_string(w.demo.port())},
      {"DEAD_PORT", std::to_string(w.dead_port)},
      {"GARBAGE_PORT", std::to_string(w.garbage.port())},
      {"SILENT_PORT", std::to_string(w.silent.port())},
      {"PROFILE", profile.string()},
      {"STORE", w.store.string()},
      {"TEXT", w.text_file.string()},
      {"FOREIGN", w.foreign_db.string()},
      {"DIR", w.dir.path().string()}};
  for (const auto& [from, to] : words) text = replace_all(text, from, to);
  return text;
}

std::vector<std::string> store_files(const World& w) {
  return {testing::read_file(w.store), testing::read_file(w.text_file),
          testing::read_file(w.foreign_db)};
}

class BadInputCliTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInputCliTest, OneLineExit3StoreUntouched) {
  const auto& c = GetParam();
  if (c.known_gap) GTEST_SKIP() << "known gap: " << c.known_gap;
  auto& w = world();
  auto profile = w.dir / "bad.json";
  fs::remove(profile);
  if (!c.profile.empty()) testing::write_file(profile, substitute(c.profile, w, profile));
  // Progress and doctor logs also go to stderr; above them only errors remain.
  std::vector<std::string> argv = {testing::perfgate_binary(), "--log-level", "error"};
  for (const auto& arg : c.args) argv.push_back(substitute(arg, w, profile));
  auto before = store_files(w);
  auto r = testing::run_command(argv, {}, w.dir.path(), 30);
  auto expected = substitute(c.expected, w, profile);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(expected), std::string::npos) << "wanted \"" << expected << "\" in:\n"
                                                     << r.err;
  EXPECT_TRUE(store_files(w) == before) << "a store file changed";
}

INSTANTIATE_TEST_SUITE_P(BadInput, BadInputCliTest, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BadInputTable, HasAtLeastFortyCases) {
  EXPECT_GE(cases().size(), 40u);
}

}  // namespace
}  // namespace perfgate
