#include "perfgate/profile/profile.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "perfgate/profile/json_source_map.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
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

/// The problem lines of a profile that must be rejected.
std::vector<std::string> problems_of(std::string_view text, Vars vars = {}) {
  try {
    parse(text, std::move(vars));
  } catch (const ProfileError& e) {
    return e.lines();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

/// A valid profile with `extra` spliced into its top-level object.
std::string profile_with(const std::string& extra) {
  return R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/"})" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

/// The one problem of a one-line profile, without the "p.json:1: " prefix.
std::string only_problem(const std::string& text, Vars vars = {}) {
  auto lines = problems_of(text, std::move(vars));
  EXPECT_EQ(lines.size(), 1u) << ::testing::PrintToString(lines);
  if (lines.empty()) return "";
  std::string prefix = "p.json:1: ";
  EXPECT_EQ(lines[0].rfind(prefix, 0), 0u) << lines[0];
  return lines[0].substr(prefix.size());
}

/// The one problem of a valid profile with `extra` added.
std::string problem_with(const std::string& extra, Vars vars = {}) {
  return only_problem(profile_with(extra), std::move(vars));
}

constexpr const char* kFull = R"(// every key
{
  "$schema": "../../schemas/profile.schema.json",
  "name": "full.v1-x_y",
  "description": "all of it",
  "target": {
    "url": "https://example.test:8443/api?q=1",
    "method": "POST",
    "headers": {"Content-Type": "application/json", "Authorization": "Bearer abc"},
    "body": "{\"a\": 1}"
  },
  /* block comment with "quotes" and { braces } */
  "load": {"threads": 4, "connections": 64, "duration": "30s", "warmup": 0, "rate": 1500.5,
           "engine": "curl", "timeout": "750ms"},
  "repeat": {"count": 5, "discard": 1},
  "thresholds": {
    "throughput": {"warn": "3%", "fail": 5, "min": 1000},
    "latency_p50": {"max": "2ms"},
    "latency_p75": {"warn": "1%"},
    "latency_p90": {"fail": "2.5%"},
    "latency_p99": {"warn": "10%", "fail": "20%", "max": "50ms"},
    "latency_p999": {"max": "1.5s"},
    "latency_max": {"max": "250us"},
    "error_rate": {"warn": "0.5%", "max": "0.1%"}
  },
  "service": {
    "command": ["./server", "--port", "8443"],
    "ready_url": "http://127.0.0.1:8443/health",
    "ready_timeout": "1m",
    "cwd": "/tmp",
    "env": {"MODE": "bench", "DB_PASSWORD": "hunter2"}
  }
})";

// ------------------------------------------------------------------ accepted

TEST(ProfileTest, MinimalProfileGetsEveryDefault) {
  Profile p = parse(profile_with(""));
  EXPECT_EQ(p.name, "t");
  EXPECT_EQ(p.source, "p.json");
  EXPECT_EQ(p.target.method, "GET");
  EXPECT_TRUE(p.target.headers.empty());
  EXPECT_EQ(p.load.threads, 2);
  EXPECT_EQ(p.load.connections, 50);
  EXPECT_EQ(p.load.duration, seconds(10));
  EXPECT_EQ(p.load.warmup, seconds(2));
  EXPECT_EQ(p.load.rate, 0);
  EXPECT_EQ(p.load.engine, "auto");
  EXPECT_EQ(p.load.timeout, seconds(5));
  EXPECT_EQ(p.repeat.count, 10);
  EXPECT_EQ(p.repeat.discard, 2);
  EXPECT_EQ(p.thresholds, default_thresholds());
  EXPECT_FALSE(p.service.has_value());
  EXPECT_EQ(p.hash.size(), 64u);
}

TEST(ProfileTest, DefaultThresholdsAreTheDocumentedOnes) {
  ThresholdSet set = default_thresholds();
  ASSERT_EQ(set.size(), 4u);
  EXPECT_EQ(set["throughput_rps"].warn_pct, 3.0);
  EXPECT_EQ(set["throughput_rps"].fail_pct, 5.0);
  EXPECT_EQ(set["latency_p99_ms"].warn_pct, 10.0);
  EXPECT_EQ(set["latency_p99_ms"].fail_pct, 20.0);
  EXPECT_EQ(set["error_rate_pct"].max, 1.0);
  EXPECT_FALSE(set["error_rate_pct"].warn_pct.has_value());
  EXPECT_EQ(set["service_cpu_us_per_request"].warn_pct, 5.0);
  EXPECT_EQ(set["service_cpu_us_per_request"].fail_pct, 8.0);
}

TEST(ProfileTest, ReadsEveryKey) {
  Profile p = parse(kFull);
  EXPECT_EQ(p.name, "full.v1-x_y");
  EXPECT_EQ(p.description, "all of it");
  EXPECT_EQ(p.target.url, "https://example.test:8443/api?q=1");
  EXPECT_EQ(p.target.method, "POST");
  ASSERT_EQ(p.target.headers.size(), 2u);
  EXPECT_EQ(p.target.headers[0].first, "Content-Type");  // profile order kept
  EXPECT_EQ(p.target.headers[1].second, "Bearer abc");
  EXPECT_EQ(p.target.body, "{\"a\": 1}");
  EXPECT_EQ(p.load.threads, 4);
  EXPECT_EQ(p.load.connections, 64);
  EXPECT_EQ(p.load.duration, seconds(30));
  EXPECT_EQ(p.load.warmup, seconds(0));
  EXPECT_EQ(p.load.rate, 1500.5);
  EXPECT_EQ(p.load.engine, "curl");
  EXPECT_EQ(p.load.timeout, milliseconds(750));
  EXPECT_EQ(p.repeat.count, 5);
  EXPECT_EQ(p.repeat.discard, 1);
}

TEST(ProfileTest, ReadsThresholdsIntoMetricKeysAndUnits) {
  Profile p = parse(kFull);
  ASSERT_EQ(p.thresholds.size(), 8u);
  auto& t = p.thresholds;
  EXPECT_EQ(t["throughput_rps"].warn_pct, 3.0);
  EXPECT_EQ(t["throughput_rps"].fail_pct, 5.0);
  EXPECT_EQ(t["throughput_rps"].min, 1000.0);
  EXPECT_EQ(t["latency_p50_ms"].max, 2.0);
  EXPECT_EQ(t["latency_p75_ms"].warn_pct, 1.0);
  EXPECT_EQ(t["latency_p90_ms"].fail_pct, 2.5);
  EXPECT_EQ(t["latency_p99_ms"].max, 50.0);  // milliseconds
  EXPECT_EQ(t["latency_p999_ms"].max, 1500.0);
  EXPECT_EQ(t["latency_max_ms"].max, 0.25);
  EXPECT_EQ(t["error_rate_pct"].warn_pct, 0.5);
  EXPECT_EQ(t["error_rate_pct"].max, 0.1);  // percent
}

TEST(ProfileTest, WrittenThresholdsReplaceTheDefaults) {
  Profile p = parse(profile_with(R"("thresholds": {"latency_p90": {"warn": "7%"}})"));
  ASSERT_EQ(p.thresholds.size(), 1u);
  EXPECT_EQ(p.thresholds["latency_p90_ms"].warn_pct, 7.0);
  EXPECT_TRUE(parse(profile_with(R"("thresholds": {})")).thresholds.empty());
}

TEST(ProfileTest, ReadsTheService) {
  Profile p = parse(kFull);
  ASSERT_TRUE(p.service.has_value());
  EXPECT_EQ(p.service->command, (std::vector<std::string>{"./server", "--port", "8443"}));
  EXPECT_EQ(p.service->ready_url, "http://127.0.0.1:8443/health");
  EXPECT_EQ(p.service->ready_timeout, seconds(60));
  EXPECT_EQ(p.service->cwd, "/tmp");
  ASSERT_EQ(p.service->env.size(), 2u);
  EXPECT_EQ(p.service->env[0], (std::pair<std::string, std::string>{"MODE", "bench"}));
}

TEST(ProfileTest, ReadyUrlDefaultsToTargetUrl) {
  Profile p = parse(profile_with(R"("service": {"command": ["srv"]})"));
  ASSERT_TRUE(p.service.has_value());
  EXPECT_EQ(p.service->ready_url, "http://127.0.0.1:8080/");
  EXPECT_EQ(p.service->ready_timeout, seconds(30));
}

TEST(ProfileTest, DurationsMayBeNumbersOfSeconds) {
  Profile p = parse(profile_with(R"("load": {"duration": 1.5, "warmup": 0, "timeout": 2})"));
  EXPECT_EQ(p.load.duration, milliseconds(1500));
  EXPECT_EQ(p.load.warmup, seconds(0));
  EXPECT_EQ(p.load.timeout, seconds(2));
}

TEST(ProfileTest, IntegralFloatsCountAsIntegers) {
  EXPECT_EQ(parse(profile_with(R"("load": {"threads": 4.0})")).load.threads, 4);
}

// ------------------------------------------------------------------ syntax

TEST(ProfileTest, SyntaxErrorGivesLineAndColumn) {
  std::string text =
      "{\n  \"name\": \"x\",\n  \"target\": {\"url\": \"http://h/\"}\n  \"load\": {}\n}";
  try {
    parse(text);
    FAIL() << "accepted";
  } catch (const ProfileError& e) {
    EXPECT_STREQ(e.what(), e.lines()[0].c_str());
    // nlohmann points at the last byte of the offending token: the closing quote.
    EXPECT_EQ(std::string(e.what()).rfind("p.json:4:8: syntax error: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected '}'"), std::string::npos) << e.what();
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(e.problems()[0].line, 4);
    EXPECT_EQ(e.problems()[0].column, 8);
  }
}

TEST(ProfileTest, SyntaxErrorAtEndOfInput) {
  auto lines = problems_of("{\"name\": \"x\",\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("p.json:2:1: syntax error: ", 0), 0u) << lines[0];
}

TEST(ProfileTest, RootMustBeAnObject) {
  auto lines = problems_of("[1, 2]");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "p.json:1: a profile is a JSON object, got [1,2]");
}

// ------------------------------------------------------------------ problems

TEST(ProfileTest, ReportsEveryProblemWithItsLine) {
  std::string text = R"({
  "name": "hello",
  "target": {
    "url": "http://127.0.0.1:8080/"
  },
  "load": {
    "connections": "ten",
    "duration": "10.5.3",
    "conections": 5
  },
  "repeat": {"count": 0}
})";
  try {
    parse(text);
    FAIL() << "accepted";
  } catch (const ProfileError& e) {
    std::vector<std::string> expected = {
        "p.json:7: load.connections: must be a positive integer, got \"ten\"",
        "p.json:8: load.duration: must be a duration like \"10s\", got \"10.5.3\"",
        "p.json:9: load.conections: unknown key; did you mean \"connections\"?",
        "p.json:11: repeat.count: must be a positive integer, got 0",
    };
    EXPECT_EQ(e.lines(), expected);
    EXPECT_EQ(std::string(e.what()), expected[0]);
    EXPECT_EQ(e.problems()[2].key_path, "load.conections");
  }
}

TEST(ProfileTest, MissingKeyPointsAtItsParent) {
  std::string text = "{\n  \"name\": \"x\",\n  \"target\": {\n    \"method\": \"GET\"\n  }\n}";
  auto lines = problems_of(text);
  EXPECT_EQ(lines, std::vector<std::string>{"p.json:3: target.url: required key is missing"});
}

TEST(ProfileTest, NameAndTargetAreRequired) {
  auto lines = problems_of("{\n}");
  std::vector<std::string> expected = {"p.json:1: name: required key is missing",
                                       "p.json:1: target: required key is missing"};
  EXPECT_EQ(lines, expected);
}

TEST(ProfileTest, UnknownKeyFarFromAnyListsTheChoices) {
  EXPECT_EQ(problem_with(R"("repeat": {"zzzzzzzzz": 1})"),
            "repeat.zzzzzzzzz: unknown key; expected one of: count, discard, max_count, budget");
  EXPECT_EQ(problem_with(R"("treshold": {})"),
            "treshold: unknown key; did you mean \"thresholds\"?");
}

TEST(ProfileTest, ChecksTheName) {
  EXPECT_EQ(problems_of(R"({"name": "a b", "target": {"url": "http://h/"}})")[0],
            "p.json:1: name: must be letters, digits, '.', '_' or '-' (it names the test in the "
            "store), got \"a b\"");
  EXPECT_EQ(problems_of(R"({"name": "", "target": {"url": "http://h/"}})").size(), 1u);
  EXPECT_EQ(problems_of(R"({"name": 5, "target": {"url": "http://h/"}})")[0],
            "p.json:1: name: must be a string, got 5");
}

std::string url_problem(const std::string& url) {
  auto lines = problems_of(R"({"name": "t", "target": {"url": ")" + url + R"("}})");
  return lines.empty() ? "" : lines[0];
}

TEST(ProfileTest, AcceptsOnlyHttpUrlsWithAHost) {
  EXPECT_EQ(url_problem("ftp://h/"),
            "p.json:1: target.url: scheme \"ftp\" is not supported; use http:// or https://");
  EXPECT_EQ(url_problem("localhost:8080"),
            "p.json:1: target.url: must be an absolute http:// or https:// URL, got "
            "\"localhost:8080\"");
  EXPECT_EQ(url_problem("http:///x"), "p.json:1: target.url: has no host: \"http:///x\"");
  EXPECT_EQ(url_problem("http://h:99999/"),
            "p.json:1: target.url: port must be a number from 1 to 65535, got \"99999\": "
            "\"http://h:99999/\"");
  EXPECT_NE(url_problem("http://h /"), "");
  for (const char* ok : {"http://[::1]:8080/", "https://u:p@example.com", "http://h:1/?a#b"})
    EXPECT_EQ(parse(R"({"name": "t", "target": {"url": ")" + std::string(ok) + R"("}})").target.url,
              ok);
}

TEST(ProfileTest, ChecksTheRequestShape) {
  EXPECT_EQ(
      only_problem(R"({"name": "t", "target": {"url": "http://h/", "method": "get"}})"),
      "target.method: must be an uppercase HTTP method like \"GET\" or \"POST\", got \"get\"");
  EXPECT_EQ(only_problem(R"({"name": "t", "target": {"url": "http://h/", "headers": {"A": 1}}})"),
            "target.headers.A: must be a string, got 1");
  EXPECT_EQ(
      only_problem(R"({"name": "t", "target": {"url": "http://h/", "headers": {"A B": "x"}}})"),
      "target.headers.A B: is not a valid HTTP header name");
  EXPECT_EQ(only_problem(
                R"({"name": "t", "target": {"url": "http://h/", "headers": {"A": "x\r\nB: y"}}})"),
            "target.headers.A: must not contain a line break");
  EXPECT_EQ(only_problem(R"({"name": "t", "target": {"url": "http://h/", "headers": []}})"),
            "target.headers: must be an object, got []");
}

TEST(ProfileTest, ChecksTheLoadShape) {
  EXPECT_EQ(problem_with(R"("load": {"threads": 8, "connections": 4})"),
            "load.connections: must be at least threads (8), got 4");
  EXPECT_EQ(problem_with(R"("load": {"threads": 64})"),
            "load.connections: must be at least threads (64), got 50 (the default)");
  EXPECT_EQ(problem_with(R"("load": {"connections": 1000001})"),
            "load.connections: must be at most 1000000, got 1000001");
  EXPECT_EQ(problem_with(R"("load": {"threads": 2.5})"),
            "load.threads: must be a positive integer, got 2.5");
  EXPECT_EQ(problem_with(R"("load": {"rate": -1})"),
            "load.rate: must be 0 (the closed model) or a rate from 0.001 to 100000000 "
            "requests/s, got -1");
  EXPECT_EQ(problem_with(R"("load": {"rate": 1e-10})"),
            "load.rate: must be 0 (the closed model) or a rate from 0.001 to 100000000 "
            "requests/s, got 1e-10");
  EXPECT_EQ(problem_with(R"("load": {"engine": "wrk"})"),
            "load.engine: must be \"auto\", \"curl\" or \"native\", got \"wrk\"");
}

TEST(ProfileTest, NativeEngineServesPlainHttpOnly) {
  auto lines = problems_of(R"({"name": "t", "target": {"url": "https://h/"},
                                "load": {"engine": "native"}})");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "p.json:2: load.engine: \"native\" serves plain http:// only; use \"curl\" or "
            "\"auto\" for https://");
}

TEST(ProfileTest, RejectsAbsurdDurations) {
  EXPECT_EQ(problem_with(R"("load": {"duration": "48h"})"),
            "load.duration: must be at most 24h, got \"48h\"");
  EXPECT_EQ(problem_with(R"("load": {"duration": "0s"})"),
            "load.duration: must be longer than 0s, got \"0s\"");
  EXPECT_EQ(problem_with(R"("load": {"warmup": "2h"})"),
            "load.warmup: must be at most 1h, got \"2h\"");
  EXPECT_EQ(problem_with(R"("load": {"timeout": 0})"),
            "load.timeout: must be longer than 0s, got 0");
  EXPECT_EQ(problem_with(R"("load": {"duration": -3})"),
            "load.duration: must be a duration like \"10s\", got -3");
  EXPECT_EQ(problem_with(R"("load": {"duration": 1e300})"),
            "load.duration: must be at most 24h, got 1e+300");
  EXPECT_EQ(problem_with(R"("load": {"duration": true})"),
            "load.duration: must be a duration like \"10s\", got true");
}

TEST(ProfileTest, ChecksRepeats) {
  EXPECT_EQ(problem_with(R"("repeat": {"count": 10001})"),
            "repeat.count: must be at most 10000, got 10001");
  EXPECT_EQ(problem_with(R"("repeat": {"count": 3, "discard": 3})"),
            "repeat.discard: must be less than count (3), got 3");
  EXPECT_EQ(problem_with(R"("repeat": {"count": 1})"),
            "repeat.discard: must be less than count (1), got 2 (the default; set it explicitly)");
  EXPECT_EQ(problem_with(R"("repeat": {"discard": -1})"),
            "repeat.discard: must be an integer >= 0, got -1");
  EXPECT_EQ(parse(profile_with(R"("repeat": {"count": 1, "discard": 0})")).repeat.count, 1);
}

TEST(ProfileTest, ChecksThresholds) {
  EXPECT_EQ(problem_with(R"("thresholds": {"throughput": {"warn": "10%", "fail": "5%"}})"),
            "thresholds.throughput.warn: must not exceed fail (5%), got 10%");
  EXPECT_EQ(problem_with(R"("thresholds": {"latency_p99": {"max": 50}})"),
            "thresholds.latency_p99.max: must be a duration with a unit like \"50ms\", got 50");
  EXPECT_EQ(problem_with(R"("thresholds": {"latency_p99": {"min": 5}})"),
            "thresholds.latency_p99.min: unknown key; did you mean \"max\"?");
  EXPECT_EQ(problem_with(R"("thresholds": {"error_rate": {"max": "150%"}})"),
            "thresholds.error_rate.max: must be at most 100%, got \"150%\"");
  EXPECT_EQ(problem_with(R"("thresholds": {"throughput": {"fail": "120%"}})"),
            "thresholds.throughput.fail: must be at most 100%, got \"120%\"");
  EXPECT_EQ(problem_with(R"("thresholds": {"throughput": {"min": 0}})"),
            "thresholds.throughput.min: must be a positive number, got 0");
  EXPECT_EQ(problem_with(R"("thresholds": {"error_rate": {"warn": "three"}})"),
            "thresholds.error_rate.warn: must be a percentage like \"5%\", got \"three\"");
  EXPECT_EQ(problem_with(R"("thresholds": {"latency_p75": {}})"),
            "thresholds.latency_p75: sets no limit; give warn, fail or max");
  EXPECT_EQ(problem_with(R"("thresholds": {"latency_99": {"max": "1s"}})"),
            "thresholds.latency_99: unknown key; did you mean \"latency_p99\"?");
}

TEST(ProfileTest, ChecksTheService) {
  EXPECT_EQ(problem_with(R"("service": {})"), "service.command: required key is missing");
  EXPECT_EQ(problem_with(R"("service": {"command": []})"),
            "service.command: must be a non-empty array of strings, got []");
  EXPECT_EQ(problem_with(R"("service": {"command": ["x", ""]})"),
            "service.command[1]: must be a non-empty string, got \"\"");
  EXPECT_EQ(problem_with(R"("service": {"command": ["x"], "ready_url": "tcp://h:1"})"),
            "service.ready_url: scheme \"tcp\" is not supported; use http:// or https://");
  EXPECT_EQ(problem_with(R"("service": {"command": ["x"], "env": {"1X": "y"}})"),
            "service.env.1X: is not a valid environment variable name (letters, digits, _)");
}

TEST(ProfileTest, ReportsDuplicateKeys) {
  auto lines =
      problems_of("{\"name\": \"a\",\n\"target\": {\"url\": \"http://h/\"},\n\"name\": \"b\"}");
  EXPECT_EQ(lines, std::vector<std::string>{
                       "p.json:3: name: duplicate key (first on line 1); only one may be given"});
}

// ------------------------------------------------------------------ environment

TEST(ProfileTest, SubstitutesEnvironmentVariables) {
  Profile p = parse(R"({"name": "t-${SUFFIX}", "target": {"url": "http://h:${PORT:-8080}/",
      "headers": {"Authorization": "Bearer ${TOKEN}", "X": "$${LITERAL} ${EMPTY:-fallback}"}}})",
                    {{"SUFFIX", "a"}, {"TOKEN", "t0k"}, {"EMPTY", ""}});
  EXPECT_EQ(p.name, "t-a");
  EXPECT_EQ(p.target.url, "http://h:8080/");
  EXPECT_EQ(p.target.headers[0].second, "Bearer t0k");
  EXPECT_EQ(p.target.headers[1].second, "${LITERAL} fallback");
  EXPECT_EQ(parse(profile_with(R"("description": "${D}")"), {{"D", ""}}).description, "");
}

TEST(ProfileTest, SubstitutesInsideDurationsAndCommands) {
  Profile p = parse(profile_with(R"("load": {"duration": "${DUR:-3s}"},
                                    "service": {"command": ["${PERFGATE}", "demo-server"]})"),
                    {{"PERFGATE", "/bin/perfgate"}});
  EXPECT_EQ(p.load.duration, seconds(3));
  EXPECT_EQ(p.service->command[0], "/bin/perfgate");
}

TEST(ProfileTest, UnsetVariableIsAProblemAtItsKey) {
  std::string text = "{\"name\": \"t\",\n \"target\": {\n  \"url\": \"http://${HOST}/\"}}";
  EXPECT_EQ(problems_of(text),
            std::vector<std::string>{"p.json:3: target.url: environment variable HOST is not set "
                                     "(write ${HOST:-default} to give a default)"});
  EXPECT_EQ(problem_with(R"("load": {"duration": "${D}"})"),
            "load.duration: environment variable D is not set (write ${D:-default} to give a "
            "default)");
  EXPECT_EQ(problem_with(R"("description": "${OPEN")"),
            "description: unterminated \"${\" (write \"$${\" for a literal \"${\")");
  EXPECT_EQ(problem_with(R"("description": "${A B}")"),
            "description: \"${A B}\" names no variable (letters, digits, _)");
}

TEST(ProfileTest, ProcessEnvironmentReadsGetenv) {
  ::setenv("PERFGATE_PROFILE_TEST_VAR", "yes", 1);
  EnvLookup env = process_environment();
  EXPECT_EQ(env("PERFGATE_PROFILE_TEST_VAR"), "yes");
  EXPECT_EQ(env("PERFGATE_PROFILE_TEST_UNSET_VAR"), std::nullopt);
  ::unsetenv("PERFGATE_PROFILE_TEST_VAR");
}

// ------------------------------------------------------------------ hash

std::string hash_of(const std::string& extra, Vars vars = {}) {
  return parse(profile_with(extra), std::move(vars)).hash;
}

TEST(ProfileTest, HashIgnoresThresholdsNamesAndService) {
  std::string base = hash_of(R"("load": {"connections": 10})");
  EXPECT_EQ(hash_of(R"("load": {"connections": 10}, "thresholds": {"throughput": {"warn": "1%"}})"),
            base);
  EXPECT_EQ(hash_of(R"("load": {"connections": 10}, "description": "other")"), base);
  EXPECT_EQ(hash_of(R"("load": {"connections": 10}, "service": {"command": ["x"]})"), base);
  EXPECT_EQ(parse(R"({"name": "other", "target": {"url": "http://127.0.0.1:8080/"},
                      "load": {"connections": 10}})")
                .hash,
            base);
}

TEST(ProfileTest, HashChangesWithWhatChangesResults) {
  std::string base = hash_of("");
  std::vector<std::string> changes = {
      R"("load": {"connections": 51})",
      R"("load": {"duration": "11s"})",
      R"("load": {"threads": 1})",
      R"("load": {"rate": 100})",
      R"("load": {"engine": "curl"})",
      R"("repeat": {"count": 11})",
      R"("target": {"url": "http://127.0.0.1:8081/"})",
      R"("target": {"url": "http://127.0.0.1:8080/", "method": "POST"})",
      R"("target": {"url": "http://127.0.0.1:8080/", "headers": {"Accept": "*/*"}})",
      R"("target": {"url": "http://127.0.0.1:8080/", "body": "x"})",
  };
  for (const auto& change : changes) {
    std::string text = profile_with(change);
    // `target` may appear twice in the splice; the last one wins in the parser,
    // so build these without the default target.
    if (change.find("\"target\"") != std::string::npos) text = R"({"name": "t", )" + change + "}";
    EXPECT_NE(parse(text).hash, base) << change;
  }
}

TEST(ProfileTest, HashKeepsDefaultsAndUnitsNormalized) {
  std::string base = hash_of("");
  EXPECT_EQ(hash_of(R"("load": {"duration": "10s", "warmup": 2, "connections": 50.0})"), base);
  EXPECT_EQ(hash_of(R"("load": {"duration": "10000ms"}, "repeat": {"count": 10})"), base);
}

TEST(ProfileTest, HashIgnoresEnvironmentValuesOrderAndComments) {
  std::string templated =
      R"({"name": "t", "target": {"url": "http://127.0.0.1:${PORT:-8080}/",
          "headers": {"Authorization": "Bearer ${TOKEN}"}}})";
  std::string a = parse(templated, {{"PORT", "1111"}, {"TOKEN", "old"}}).hash;
  EXPECT_EQ(parse(templated, {{"PORT", "2222"}, {"TOKEN", "new"}}).hash, a);
  std::string reordered =
      "// comment\n{\"target\": {/* c */ \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"},\n"
      "\"url\": \"http://127.0.0.1:${PORT:-8080}/\"}, \"name\": \"t\"}";
  EXPECT_EQ(parse(reordered, {{"TOKEN", "x"}}).hash, a);
  // The template is what counts: the expanded text written out is another test.
  EXPECT_NE(parse(R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/",
                      "headers": {"Authorization": "Bearer old"}}})")
                .hash,
            a);
}

// ------------------------------------------------------------------ redaction

TEST(ProfileTest, RedactedJsonHidesSecrets) {
  Profile p = parse(kFull);
  auto doc = nlohmann::json::parse(p.redacted_json);
  EXPECT_EQ(doc["target"]["headers"]["Authorization"], "<redacted>");
  EXPECT_EQ(doc["target"]["headers"]["Content-Type"], "application/json");
  EXPECT_EQ(doc["service"]["env"]["DB_PASSWORD"], "<redacted>");
  EXPECT_EQ(doc["service"]["env"]["MODE"], "bench");
  EXPECT_EQ(p.redacted_json.find("hunter2"), std::string::npos);
  EXPECT_EQ(p.redacted_json.find("Bearer abc"), std::string::npos);
  Profile with_password = parse(R"({"name": "t", "target": {"url": "http://me:pw@h/"}})");
  EXPECT_EQ(nlohmann::json::parse(with_password.redacted_json)["target"]["url"],
            "http://me:<redacted>@h/");
}

TEST(ProfileTest, RedactedJsonIsANormalizedProfile) {
  Profile p = parse(kFull);
  auto doc = nlohmann::json::parse(p.redacted_json);
  EXPECT_EQ(doc["load"]["warmup"], "0s");
  EXPECT_EQ(doc["load"]["timeout"], "750ms");
  EXPECT_EQ(doc["thresholds"]["latency_p99"]["max"], "50ms");
  EXPECT_EQ(doc["thresholds"]["error_rate"]["max"], "0.1%");
  EXPECT_EQ(doc["repeat"]["discard"], 1);
  // Read back, it is the same test with the same limits.
  Profile again = parse(p.redacted_json);
  EXPECT_EQ(again.thresholds, p.thresholds);
  EXPECT_EQ(again.load.duration, p.load.duration);
  Profile plain = parse(profile_with(R"("load": {"duration": "1.5s"})"));
  EXPECT_EQ(parse(plain.redacted_json).hash, plain.hash);
}

TEST(ProfileTest, RecognizesSecretHeaders) {
  for (const char* name :
       {"Authorization", "proxy-authorization", "Cookie", "Set-Cookie", "X-Auth-Token", "X-Api-Key",
        "apikey", "X-Session-Id", "X-Secret", "X-Password"})
    EXPECT_TRUE(is_secret_header(name)) << name;
  for (const char* name : {"Accept", "Content-Type", "User-Agent", "X-Request-Id"})
    EXPECT_FALSE(is_secret_header(name)) << name;
}

// ------------------------------------------------------------------ files

TEST(ProfileTest, LoadsAProfileFile) {
  testing::TempDir dir;
  testing::write_file(dir / "p.json", profile_with(""));
  Profile p = load_profile(dir / "p.json", env_of({}));
  EXPECT_EQ(p.source, dir / "p.json");
  testing::write_file(dir / "bad.json", "{\"target\": {\"url\": \"http://h/\"},\n\"name\": 1}");
  try {
    load_profile(dir / "bad.json", env_of({}));
    FAIL() << "accepted";
  } catch (const ProfileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind((dir / "bad.json").string() + ":2: name: ", 0), 0u)
        << e.what();
  }
}

TEST(ProfileTest, UnreadableFileIsAnError) {
  testing::TempDir dir;
  auto path = dir / "missing.json";
  try {
    load_profile(path, env_of({}));
    FAIL() << "accepted";
  } catch (const ProfileError&) {
    FAIL() << "a missing file is not a profile problem";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot read profile " + path.string() + ": No such file or directory");
  }
  EXPECT_THROW(load_profile(dir.path(), env_of({})), Error);  // a folder
}

// ------------------------------------------------------------------ source map

TEST(ProfileJsonSourceMapTest, MapsKeysAndElementsToLines) {
  std::string text = R"(// "quoted": { not a key
{
  "a": {"b": 1,
        "c": [10,
              {"d": "x // not a comment"}]},
  /* "e": 2 */ "f": "\"}",
  "g\u00e9\n": true
})";
  JsonSourceMap map = JsonSourceMap::scan(text);
  EXPECT_EQ(map.line_of(""), 2);
  EXPECT_EQ(map.line_of("a"), 3);
  EXPECT_EQ(map.line_of("a.b"), 3);
  EXPECT_EQ(map.line_of("a.c"), 4);
  EXPECT_EQ(map.line_of("a.c[0]"), 4);
  EXPECT_EQ(map.line_of("a.c[1]"), 5);
  EXPECT_EQ(map.line_of("a.c[1].d"), 5);
  EXPECT_EQ(map.line_of("e"), 0);
  EXPECT_EQ(map.line_of("quoted"), 0);
  EXPECT_EQ(map.line_of("f"), 6);
  EXPECT_EQ(map.line_of("g\xc3\xa9\n"), 7);
  EXPECT_EQ(map.nearest_line("a.c[1].missing"), 5);
  EXPECT_EQ(map.nearest_line("nothing.here"), 2);
  EXPECT_TRUE(map.duplicates().empty());
}

TEST(ProfileJsonSourceMapTest, KeepsWhatItFoundBeforeMalformedText) {
  JsonSourceMap map = JsonSourceMap::scan("{\"a\": 1,\n\"b\": [1,, }");
  EXPECT_EQ(map.line_of("a"), 1);
  EXPECT_EQ(map.line_of("b"), 2);
}

TEST(ProfileJsonSourceMapTest, ComputesPositionsAndPaths) {
  std::string_view text = "ab\ncd\n";
  EXPECT_EQ(position_at(text, 0).line, 1);
  EXPECT_EQ(position_at(text, 4).line, 2);
  EXPECT_EQ(position_at(text, 4).column, 2);
  EXPECT_EQ(position_at(text, 99).line, 3);
  EXPECT_EQ(child_path("", "a"), "a");
  EXPECT_EQ(child_path("a", "b"), "a.b");
  EXPECT_EQ(element_path("a.b", 3), "a.b[3]");
  EXPECT_EQ(parent_path("a.b[3]"), "a.b");
  EXPECT_EQ(parent_path("a.b"), "a");
  EXPECT_EQ(parent_path("a"), "");
}

}  // namespace
}  // namespace perfgate

namespace perfgate {
namespace {

// Issue 48: `validate` said ok to a gate that could only ever pass or warn.
TEST(NeverFailsTest, AProfileWhoseLimitsAreAllWarnsCanNeverFail) {
  const char* base = R"({"name": "x", "target": {"url": "http://127.0.0.1:1/"}, "thresholds": )";
  auto warns = never_fails(parse(
      std::string(base) + R"({"throughput": {"warn": "5%"}, "latency_p99": {"warn": "10%"}}})"));
  ASSERT_EQ(warns.size(), 1u);
  EXPECT_NE(warns[0].find("no limit can fail this profile"), std::string::npos) << warns[0];
  // The defaults fail; so does a max alone, or a counted cost's own limits.
  EXPECT_TRUE(
      never_fails(parse(R"({"name": "x", "target": {"url": "http://127.0.0.1:1/"}})")).empty());
  EXPECT_TRUE(
      never_fails(parse(std::string(base) + R"({"latency_p99": {"max": "50ms"}}})")).empty());
  EXPECT_TRUE(never_fails(parse(std::string(base) + R"({"throughput": {"warn": "5%"}},
      "cost": {"instrument": "callgrind"}})"))
                  .empty());
}

TEST(NeverFailsTest, AFallOfAHundredPercentOrMoreIsOutOfReach) {
  auto why = never_fails(parse(
      R"({"name": "x", "target": {"url": "http://127.0.0.1:1/"},
          "thresholds": {"throughput": {"warn": "50%", "fail": "100%"}}})"));
  ASSERT_EQ(why.size(), 2u);  // and with it, no limit left that can fail
  EXPECT_NE(why[1].find("throughput_rps's fail limit is a fall of 100%"), std::string::npos)
      << why[1];
  // A rise has no such bound: p99 +150 % can happen.
  EXPECT_TRUE(never_fails(parse(R"({"name": "x", "target": {"url": "http://127.0.0.1:1/"},
          "thresholds": {"latency_p99": {"fail": "150%"}}})"))
                  .empty());
}

}  // namespace
}  // namespace perfgate
