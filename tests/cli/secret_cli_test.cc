// Secrets: header values taken from the environment reach the
// server but are never written anywhere else. Every command that reads the
// profile or the store runs with the most verbose log, and every byte it
// leaves behind (stdout, stderr, each file in the test folder, the SQLite
// file and its journals) is searched for each secret.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::CommandResult;
using testing::TempDir;
namespace fs = std::filesystem;

/// A unique, random-looking value per variable, so that finding it anywhere
/// can only mean perfgate wrote it.
std::string random_secret(const std::string& tag) {
  std::random_device rd;
  char hex[33];
  std::snprintf(hex, sizeof hex, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return "pg" + tag + hex;
}

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

/// A loopback HTTP/1.1 server that answers every request with "ok" after a
/// fixed 5 ms (so the load's size does not depend on this machine's speed) and
/// counts, per expected header, the requests that carried it with its value.
class HeaderCaptureServer {
 public:
  explicit HeaderCaptureServer(std::map<std::string, std::string> expected)
      : expected_(std::move(expected)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 64) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("header capture server: cannot listen");
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~HeaderCaptureServer() {
    stopping_ = true;
    acceptor_.join();
    std::vector<std::thread> threads;  // joined unlocked: they lock to count
    {
      std::lock_guard lock(mutex_);
      threads.swap(connections_);
    }
    for (auto& t : threads) t.join();
    close(fd_);
  }

  uint16_t port() const { return port_; }
  uint64_t requests() const { return requests_; }
  uint64_t requests_with_every_secret() const { return with_secrets_; }
  uint64_t requests_with(const std::string& header) const {
    std::lock_guard lock(mutex_);
    auto it = hits_.find(header);
    return it == hits_.end() ? 0 : it->second;
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      timeval tick{0, 50'000};  // recv returns every 50 ms to look at stopping_
      setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof tick);
      std::lock_guard lock(mutex_);
      connections_.emplace_back([this, client] { serve(client); });
    }
  }

  void serve(int fd) {
    std::string buffer;
    char chunk[4096];
    while (!stopping_) {
      auto end = buffer.find("\r\n\r\n");
      if (end != std::string::npos) {
        check_head(buffer.substr(0, end));
        buffer.erase(0, end + 4);  // GET requests only: no body follows
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        static const std::string kResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        if (send(fd, kResponse.data(), kResponse.size(), MSG_NOSIGNAL) < 0) break;
        continue;
      }
      ssize_t n = recv(fd, chunk, sizeof chunk, 0);
      if (n > 0)
        buffer.append(chunk, static_cast<size_t>(n));
      else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        break;
    }
    close(fd);
  }

  void check_head(const std::string& head) {
    ++requests_;
    size_t found = 0;
    for (size_t start = head.find("\r\n"); start != std::string::npos;) {
      size_t line_start = start + 2;
      size_t line_end = head.find("\r\n", line_start);
      std::string line = head.substr(line_start, line_end - line_start);
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        for (const auto& [want_name, want_value] : expected_) {
          if (!iequals(name, want_name) || value != want_value) continue;
          ++found;
          std::lock_guard lock(mutex_);
          ++hits_[want_name];
        }
      }
      start = line_end;
    }
    if (found == expected_.size()) ++with_secrets_;
  }

  std::map<std::string, std::string> expected_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> with_secrets_{0};
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::vector<std::thread> connections_;
  std::map<std::string, uint64_t> hits_;
};

// Three built-in secret headers and one the profile names in `redact`; the
// values come from the environment. Short windows, wide limits: the gate's
// verdict is not what this test is about.
const char* kProfile = R"({
  "name": "secret-test",
  "target": {
    "url": "http://127.0.0.1:${TARGET_PORT}/",
    "headers": {
      "Authorization": "Bearer ${API_TOKEN}",
      "Cookie": "session=${SESSION_COOKIE}; theme=dark",
      "Proxy-Authorization": "Basic ${PROXY_CREDENTIALS}",
      "X-Tenant": "${TENANT_ID}",
      "Accept": "text/plain"
    }
  },
  "redact": ["X-Tenant"],
  "load": { "engine": "${ENGINE:-auto}", "threads": 1, "connections": 4,
            "duration": "200ms", "warmup": "100ms" },
  "repeat": { "count": 3, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": {
    "throughput": { "warn": "90%", "fail": "99%" },
    "latency_p99": { "warn": "900%", "fail": "990%" },
    "error_rate": { "max": "100%" }
  }
})";

class SecretCliTest : public ::testing::Test {
 protected:
  SecretCliTest() {
    testing::write_file(profile_, kProfile);
    fs::create_directories(dir_ / "store");
  }

  /// Runs perfgate with the secrets in its environment and keeps what it printed.
  CommandResult perfgate(const std::string& label, std::vector<std::string> args,
                         std::map<std::string, std::string> extra_env = {}) {
    args.insert(args.begin(), testing::perfgate_binary());
    auto env = env_;
    for (auto& [k, v] : extra_env) env[k] = v;
    auto r = testing::run_command(args, env, dir_.path());
    printed_.push_back({label + " stdout", r.out});
    printed_.push_back({label + " stderr", r.err});
    return r;
  }

  /// The report flags of `perfgate run`, each to its own file under `prefix`.
  std::vector<std::string> run_args(const std::string& prefix, const std::string& log_level) {
    auto out = [&](const std::string& name) { return (dir_ / (prefix + name)).string(); };
    return {"--log-level",
            log_level,
            "run",
            profile_.string(),
            "--store",
            store_.string(),
            "--junit",
            out("junit.xml"),
            "--json",
            out("result.json"),
            "--summary",
            out("summary.md"),
            "--gitlab-load-performance",
            out("load-performance.json"),
            "--openmetrics",
            out("metrics.txt"),
            "--commit",
            "c0ffee",
            "--branch",
            "main"};
  }

  /// Each secret's random part (so a value cut short is found too) absent from
  /// every printed stream and from every file under the test folder: reports,
  /// the HTML page, the SQLite file and its -wal/-shm, whatever else appeared.
  void expect_no_secret_anywhere(size_t min_files) {
    std::vector<std::pair<std::string, std::string>> haystacks = printed_;
    size_t files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir_.path())) {
      if (!entry.is_regular_file()) continue;
      haystacks.push_back({entry.path().string(), testing::read_file(entry.path())});
      ++files;
    }
    EXPECT_GE(files, min_files) << "the reports and the store should all be there";
    for (const auto& [variable, secret] : secrets_) {
      std::string random_part = secret.substr(secret.size() - 24);
      for (const auto& [where, text] : haystacks) {
        EXPECT_EQ(text.find(random_part), std::string::npos)
            << variable << "'s value found in " << where << ":\n"
            << text.substr(0, 4000);
      }
    }
  }

  TempDir dir_;
  fs::path profile_ = dir_ / "profile.json";
  fs::path store_ = dir_ / "store" / "perfgate.db";
  std::map<std::string, std::string> secrets_ = {
      {"API_TOKEN", random_secret("tok")},
      {"SESSION_COOKIE", random_secret("ses")},
      {"PROXY_CREDENTIALS", random_secret("prx")},
      {"TENANT_ID", random_secret("ten")},
  };
  std::map<std::string, std::string> expected_headers_ = {
      {"Authorization", "Bearer " + secrets_["API_TOKEN"]},
      {"Cookie", "session=" + secrets_["SESSION_COOKIE"] + "; theme=dark"},
      {"Proxy-Authorization", "Basic " + secrets_["PROXY_CREDENTIALS"]},
      {"X-Tenant", secrets_["TENANT_ID"]},
  };
  HeaderCaptureServer server_{expected_headers_};
  std::map<std::string, std::string> env_ = [this] {
    auto env = secrets_;
    env["TARGET_PORT"] = std::to_string(server_.port());
    return env;
  }();
  std::vector<std::pair<std::string, std::string>> printed_;
};

TEST_F(SecretCliTest, SecretHeadersReachTheServerAndNoOutputHoldsThem) {
  // Both engines send the headers, at the most verbose log levels.
  auto native = perfgate("run native", run_args("native-", "trace"), {{"ENGINE", "native"}});
  ASSERT_LE(native.exit_code, 2) << native.out << native.err;  // a verdict, whichever
  uint64_t after_native = server_.requests_with_every_secret();
  EXPECT_GT(after_native, 0u) << "the native engine did not send the secret headers";
  auto curl = perfgate("run curl", run_args("curl-", "debug"), {{"ENGINE", "curl"}});
  ASSERT_LE(curl.exit_code, 2) << curl.out << curl.err;  // judged against the native run
  EXPECT_GT(server_.requests_with_every_secret(), after_native)
      << "the curl engine did not send the secret headers";
  EXPECT_EQ(server_.requests_with_every_secret(), server_.requests());

  // Runs that end in an error: nothing listening, and a secret that would
  // inject a header (its value must not be echoed in the error).
  auto unreachable = perfgate("run unreachable", run_args("unreachable-", "trace"),
                              {{"TARGET_PORT", std::to_string(testing::unused_port())}});
  EXPECT_EQ(unreachable.exit_code, 3) << unreachable.out << unreachable.err;
  auto injected =
      perfgate("run injected", run_args("injected-", "trace"),
               {{"API_TOKEN", secrets_["API_TOKEN"] + "\r\nX-Injected: " + secrets_["API_TOKEN"]}});
  EXPECT_EQ(injected.exit_code, 3) << injected.out << injected.err;
  EXPECT_NE(injected.err.find("Authorization"), std::string::npos) << injected.err;

  // Everything that reads the profile or the store back.
  auto html = (dir_ / "report.html").string();
  EXPECT_EQ(perfgate("report",
                     {"--log-level", "trace", "report", "--html", html, "--store", store_.string()})
                .exit_code,
            0);
  auto exported = perfgate("store export",
                           {"--log-level", "trace", "store", "export", "--store", store_.string()});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("<redacted>"), std::string::npos) << "the header names are kept";
  EXPECT_EQ(perfgate("store check",
                     {"--log-level", "trace", "store", "check", "--store", store_.string()})
                .exit_code,
            0);
  perfgate("export", {"--log-level", "trace", "export", "--format", "github-action-benchmark",
                      "--store", store_.string()});
  auto validate = perfgate("validate", {"--log-level", "trace", "validate", profile_.string()});
  EXPECT_EQ(validate.exit_code, 0) << validate.err;
  expect_no_secret_anywhere(12);
}

TEST_F(SecretCliTest, BenchSendsHeadersAndPrintsNoneOfThem) {
  std::vector<std::string> args = {"--log-level",
                                   "trace",
                                   "bench",
                                   "-t",
                                   "1",
                                   "-c",
                                   "2",
                                   "-d",
                                   "300ms",
                                   "--latency",
                                   "--json",
                                   (dir_ / "bench.json").string(),
                                   "http://127.0.0.1:" + std::to_string(server_.port()) + "/"};
  // bench has no `redact`: only the built-in secret headers are sent.
  for (auto name : {"Authorization", "Cookie", "Proxy-Authorization"}) {
    args.push_back("-H");
    args.push_back(std::string(name) + ": " + expected_headers_[name]);
  }
  auto r = perfgate("bench", args);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (auto name : {"Authorization", "Cookie", "Proxy-Authorization"})
    EXPECT_GT(server_.requests_with(name), 0u) << name;
  // A -H without its colon is an error whose message must not echo the value.
  auto typo = perfgate(
      "bench typo", {"bench", "-d", "100ms", "-H", "Authorization Bearer " + secrets_["API_TOKEN"],
                     "http://127.0.0.1:" + std::to_string(server_.port()) + "/"});
  EXPECT_EQ(typo.exit_code, 3) << typo.out << typo.err;
  expect_no_secret_anywhere(1);
}

// A password in the target URL is a secret too (curl sends it as
// "Authorization: Basic"). DISABLED: src/gate/gate.cc copies profile.target.url
// unredacted into the result (console, JUnit, JSON, Markdown) and into the
// "cannot reach" error; enable once it uses the redacted URL.
TEST_F(SecretCliTest, PasswordInTheUrlIsNotWritten) {
  auto text = std::string(kProfile);
  text.replace(text.find("http://127.0.0.1"), 16, "http://user:${API_TOKEN}@127.0.0.1");
  text.replace(text.find("${ENGINE:-auto}"), 15, "curl");
  testing::write_file(profile_, text);
  auto r = perfgate("run", run_args("url-", "trace"));
  EXPECT_LE(r.exit_code, 2) << r.out << r.err;
  EXPECT_GT(server_.requests(), 0u);
  auto unreachable = perfgate("run unreachable", run_args("unreachable-", "trace"),
                              {{"TARGET_PORT", std::to_string(testing::unused_port())}});
  EXPECT_EQ(unreachable.exit_code, 3);
  expect_no_secret_anywhere(6);
}

// A ${VAR} in the URL's query or path, or in the body, is as secret as one in a
// header: the demo server gets the value; every output shows `${VAR}` instead.
TEST(SecretInUrlAndBodyCliTest, ExpandedValuesAreShownAsTheirVariables) {
  TempDir dir;
  testing::DemoServerProcess demo;
  const std::string query_secret = random_secret("qry");
  const std::string path_secret = random_secret("pth");
  const std::string body_secret = random_secret("bdy");
  auto profile = dir / "profile.json";
  testing::write_file(profile, R"({
  "name": "url-secret",
  "target": {
    "url": "http://127.0.0.1:)" + std::to_string(demo.port()) +
                                   R"(/${PATH_SECRET}/x?token=${QUERY_SECRET}&page=1",
    "method": "POST",
    "body": "{\"key\": \"${BODY_SECRET}\"}",
    "requests": [
      { "name": "inherits" },
      { "name": "own-url", "url": "http://127.0.0.1:)" +
                                   std::to_string(demo.port()) +
                                   R"(/q?k=${QUERY_SECRET}", "body": "${BODY_SECRET}" },
      { "name": "own-path", "path": "/${PATH_SECRET}" }
    ]
  },
  "load": { "threads": 1, "connections": 2, "duration": "200ms", "warmup": "0s" },
  "repeat": { "count": 2, "discard": 0 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { "error_rate": { "max": "100%" } }
})");
  std::map<std::string, std::string> env = {
      {"QUERY_SECRET", query_secret}, {"PATH_SECRET", path_secret}, {"BODY_SECRET", body_secret}};
  auto store = dir / "store.db";
  std::vector<std::pair<std::string, std::string>> printed;
  auto perfgate = [&](const std::string& label, std::vector<std::string> args) {
    args.insert(args.begin(), {testing::perfgate_binary(), "--log-level", "trace"});
    auto r = testing::run_command(args, env, dir.path());
    printed.push_back({label + " stdout", r.out});
    printed.push_back({label + " stderr", r.err});
    return r;
  };
  auto run =
      perfgate("run", {"run", profile.string(), "--store", store.string(), "--json",
                       (dir / "result.json").string(), "--junit", (dir / "junit.xml").string(),
                       "--summary", (dir / "summary.md").string()});
  ASSERT_LE(run.exit_code, 2) << run.out << run.err;
  EXPECT_GT(demo.requests_served(), 0u);
  const std::string shown = "/${PATH_SECRET}/x?token=${QUERY_SECRET}&page=1";
  EXPECT_NE(run.out.find(shown), std::string::npos) << run.out;
  EXPECT_NE(testing::read_file(dir / "result.json").find(shown), std::string::npos);
  auto exported = perfgate("store export", {"store", "export", "--store", store.string()});
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("${BODY_SECRET}"), std::string::npos) << exported.out;
  EXPECT_NE(exported.out.find("${QUERY_SECRET}"), std::string::npos) << exported.out;
  EXPECT_EQ(perfgate("validate", {"validate", profile.string()}).exit_code, 0);
  perfgate("history", {"history", "--store", store.string()});
  // The stored profile reads back (without the environment) to judge the run again.
  auto again = perfgate("compare", {"compare", "1", "--store", store.string()});
  EXPECT_LE(again.exit_code, 2) << again.err;
  // An error that names the URL: nothing listens there.
  auto dead = std::to_string(testing::unused_port());
  auto text = testing::read_file(profile);
  text.replace(text.find(std::to_string(demo.port())), std::to_string(demo.port()).size(), dead);
  testing::write_file(profile, text);
  auto unreachable = perfgate("unreachable", {"run", profile.string()});
  EXPECT_EQ(unreachable.exit_code, 3) << unreachable.err;
  EXPECT_NE(unreachable.err.find("?token=${QUERY_SECRET}"), std::string::npos) << unreachable.err;

  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir.path()))
    if (entry.is_regular_file() && entry.path() != profile) {
      printed.push_back({entry.path().string(), testing::read_file(entry.path())});
      ++files;
    }
  EXPECT_GE(files, 4u) << "the reports and the store should all be there";
  for (const auto& secret : {query_secret, path_secret, body_secret})
    for (const auto& [where, bytes] : printed)
      EXPECT_EQ(bytes.find(secret.substr(secret.size() - 24)), std::string::npos)
          << "a secret in " << where << ":\n"
          << bytes.substr(0, 4000);
}

}  // namespace
}  // namespace perfgate
