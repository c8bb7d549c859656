// The profile keys beyond the spine: request mixes, bodies from files, TLS and
// HTTP/2 options, services perfgate only watches, saturation rules, redaction.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "perfgate/profile/profile.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

EnvLookup no_env() {
  return [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
}

Profile parse(const std::string& text, const std::string& source = "p.json") {
  return parse_profile(text, source, no_env());
}

std::string with_target(const std::string& extra) {
  return R"({"name": "t", "target": {"url": "http://127.0.0.1:8080/api", )" + extra + "}}";
}

std::vector<std::string> problems_of(const std::string& text) {
  try {
    parse(text);
  } catch (const ProfileError& e) {
    return e.lines();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& line : lines)
    if (line.find(what) != std::string::npos) return true;
  return false;
}

TEST(ProfileOptionsTest, RequestMixInheritsFromTarget) {
  auto p = parse(with_target(R"("method": "POST", "headers": {"A": "1", "B": "2"}, "body": "x",
    "requests": [{"name": "create", "weight": 3},
                 {"name": "read", "method": "GET", "path": "/items/1", "headers": {"b": "3"}, "body": ""}])"));
  ASSERT_EQ(p.requests.size(), 2u);
  EXPECT_EQ(p.requests[0].name, "create");
  EXPECT_EQ(p.requests[0].weight, 3);
  EXPECT_EQ(p.requests[0].method, "POST");
  EXPECT_EQ(p.requests[0].body, "x");
  EXPECT_EQ(p.requests[0].url, "http://127.0.0.1:8080/api");
  EXPECT_EQ(p.requests[1].url, "http://127.0.0.1:8080/items/1");
  EXPECT_EQ(p.requests[1].method, "GET");
  EXPECT_EQ(p.requests[1].body, "");
  ASSERT_EQ(p.requests[1].headers.size(), 2u);  // "b" replaces "B" by name
  EXPECT_EQ(p.requests[1].headers[1].second, "3");
}

TEST(ProfileOptionsTest, MixProblemsNameTheEntry) {
  auto lines = problems_of(with_target(
      R"("requests": [{"weight": 0}, {"url": "ftp://x/"}, 5, {"path": "x"}, {"colour": 1}])"));
  EXPECT_TRUE(mentions(lines, "target.requests[0].weight: must be a number from 0.001 to 1000000"))
      << lines[0];
  EXPECT_TRUE(mentions(lines, "target.requests[1].url"));
  EXPECT_TRUE(mentions(lines, "target.requests[2]: must be an object"));
  EXPECT_TRUE(mentions(lines, "target.requests[3].path: must start with \"/\""));
  EXPECT_TRUE(mentions(lines, "target.requests[4].colour: unknown key"));
  EXPECT_TRUE(mentions(problems_of(with_target(R"("requests": [])")),
                       "target.requests: must be a non-empty array"));
}

TEST(ProfileOptionsTest, MixChangesTheHashAndWeightsToo) {
  auto a = parse(with_target(R"("requests": [{"weight": 1}, {"path": "/b"}])"));
  auto b = parse(with_target(R"("requests": [{"weight": 2}, {"path": "/b"}])"));
  auto none = parse(with_target(R"("method": "GET")"));
  EXPECT_NE(a.hash, b.hash);
  EXPECT_NE(a.hash, none.hash);
}

TEST(ProfileOptionsTest, BodyFileIsReadRelativeToTheProfile) {
  testing::TempDir dir;
  testing::write_file(dir / "body.json", "{\"big\": true}");
  auto text = with_target(R"("method": "POST", "body_file": "body.json")");
  auto p = parse(text, (dir / "p.json").string());
  EXPECT_EQ(p.target.body, "{\"big\": true}");
  EXPECT_EQ(p.target.body_file, "body.json");
  auto before = p.hash;
  testing::write_file(dir / "body.json", "{\"big\": false}");
  EXPECT_NE(parse(text, (dir / "p.json").string()).hash, before);  // the bytes, not the name
  auto lines = problems_of(with_target(R"("body_file": "missing.bin")"));
  EXPECT_TRUE(mentions(lines, "target.body_file: cannot read")) << lines[0];
  EXPECT_TRUE(mentions(problems_of(with_target(R"("body": "a", "body_file": "b")")),
                       "give either body or body_file"));
}

TEST(ProfileOptionsTest, TlsAndHttpVersion) {
  auto p = parse(with_target(R"("tls_verify": false, "http_version": "2")"));
  EXPECT_FALSE(p.target.tls_verify);
  EXPECT_EQ(p.target.http_version, "2");
  EXPECT_TRUE(parse(with_target(R"("method": "GET")")).target.tls_verify);
  EXPECT_TRUE(mentions(problems_of(with_target(R"("tls_verify": "no")")),
                       "target.tls_verify: must be true or false"));
  EXPECT_TRUE(mentions(problems_of(with_target(R"("http_version": "3")")),
                       "target.http_version: must be \"1.1\" or \"2\""));
  auto native_h2 =
      R"({"name": "t", "target": {"url": "http://h/", "http_version": "2"}, "load": {"engine": "native"}})";
  EXPECT_TRUE(mentions(problems_of(native_h2), "load.engine: \"native\" speaks HTTP/1.1 only"));
}

TEST(ProfileOptionsTest, ConnectTimeout) {
  auto p = parse(
      R"({"name": "t", "target": {"url": "http://h/"}, "load": {"connect_timeout": "300ms"}})");
  EXPECT_EQ(p.load.connect_timeout, std::chrono::milliseconds(300));
  EXPECT_EQ(parse(with_target(R"("method": "GET")")).load.connect_timeout, std::chrono::seconds(2));
}

TEST(ProfileOptionsTest, WatchedServiceNeedsNoCommand) {
  auto p = parse(
      R"({"name": "t", "target": {"url": "http://h/"}, "service": {"process_name": "nginx"}})");
  ASSERT_TRUE(p.service);
  EXPECT_TRUE(p.service->command.empty());
  EXPECT_EQ(p.service->process_name, "nginx");
  auto q = parse(
      R"({"name": "t", "target": {"url": "http://h/"}, "service": {"pid_file": "/run/x.pid"}})");
  EXPECT_EQ(q.service->pid_file, "/run/x.pid");
  EXPECT_TRUE(mentions(
      problems_of(R"({"name": "t", "target": {"url": "http://h/"}, "service": {"cwd": "/"}})"),
      "service.command: required key is missing"));
}

TEST(ProfileOptionsTest, SaturationRulesAndDefaults) {
  auto d = parse(with_target(R"("method": "GET")")).saturation;
  EXPECT_EQ(d.interval, std::chrono::milliseconds(250));
  EXPECT_EQ(d.generator_thread_cpu_pct, 90);
  auto p = parse(R"({"name": "t", "target": {"url": "http://h/"},
    "saturation": {"interval": "100ms", "generator_cpu": "80%", "foreign_cpu": "10%", "steal": 2}})");
  EXPECT_EQ(p.saturation.interval, std::chrono::milliseconds(100));
  EXPECT_EQ(p.saturation.generator_thread_cpu_pct, 80);
  EXPECT_EQ(p.saturation.foreign_cpu_pct, 10);
  EXPECT_EQ(p.saturation.steal_pct, 2);
  EXPECT_EQ(p.saturation.host_cpu_pct, 90);
  auto lines = problems_of(
      R"({"name": "t", "target": {"url": "http://h/"}, "saturation": {"stael": "5%", "host_cpu": "150%"}})");
  EXPECT_TRUE(mentions(lines, "saturation.stael: unknown key; did you mean \"steal\"?"));
  EXPECT_TRUE(mentions(lines, "saturation.host_cpu: must be at most 100%"));
}

TEST(ProfileOptionsTest, SaturationIsNotInTheHash) {
  auto a = parse(R"({"name": "t", "target": {"url": "http://h/"}})");
  auto b = parse(R"({"name": "t", "target": {"url": "http://h/"}, "saturation": {"steal": "1%"}})");
  EXPECT_EQ(a.hash, b.hash);
}

TEST(ProfileOptionsTest, RedactListHidesMoreHeaders) {
  auto p = parse(R"({"name": "t", "target": {"url": "http://h/",
    "headers": {"X-Internal-Key2": "s3cr3t-value", "X-Plain": "visible"},
    "requests": [{"headers": {"X-Internal-Key2": "other-s3cr3t"}}]},
    "redact": ["x-internal-key2"]})");
  EXPECT_EQ(p.redact.size(), 1u);
  EXPECT_EQ(p.redacted_json.find("s3cr3t"), std::string::npos) << p.redacted_json;
  EXPECT_NE(p.redacted_json.find("visible"), std::string::npos);
  auto j = nlohmann::json::parse(p.redacted_json);
  EXPECT_EQ(j["target"]["headers"]["X-Internal-Key2"], "<redacted>");
  EXPECT_EQ(j["target"]["requests"][0]["headers"]["X-Internal-Key2"], "<redacted>");
}

TEST(ProfileOptionsTest, RedactedJsonOfEveryKeyIsItselfAValidProfile) {
  auto example = testing::source_dir() / "docs" / "profile-example.json";
  auto p = load_profile(example, no_env());
  auto again =
      parse_profile(p.redacted_json, (example.parent_path() / "again.json").string(), no_env());
  EXPECT_EQ(again.requests.size(), p.requests.size());
  EXPECT_EQ(again.saturation.foreign_cpu_pct, p.saturation.foreign_cpu_pct);
  EXPECT_EQ(again.redact, p.redact);
}

}  // namespace
}  // namespace perfgate
