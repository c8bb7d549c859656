#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfgate/error.h"
#include "perfgate/metrics.h"
#include "perfgate/units.h"

namespace perfgate {

/// The request every connection sends.
struct TargetSpec {
  std::string url;
  std::string method = "GET";
  std::vector<std::pair<std::string, std::string>> headers;  // in profile order
  std::string body;
};

struct LoadSpec {
  int threads = 2;
  int connections = 50;
  Nanos duration = std::chrono::seconds(10);
  Nanos warmup = std::chrono::seconds(2);
  double rate = 0;                          // requests/s over all connections; 0 = closed model
  std::string engine = "auto";              // auto | curl | native
  Nanos timeout = std::chrono::seconds(5);  // per request, connect included
};

struct RepeatSpec {
  int count = 10;
  int discard = 2;
};

/// A command perfgate starts before the load and stops after it.
struct ServiceSpec {
  std::vector<std::string> command;
  std::string ready_url;  // polled until it answers 2xx/3xx; defaults to target.url
  Nanos ready_timeout = std::chrono::seconds(30);
  std::string cwd;  // empty = perfgate's working directory
  std::vector<std::pair<std::string, std::string>> env;
};

struct Profile {
  std::string name;
  std::string description;
  std::filesystem::path source;  // the file it came from ("<string>" in tests)
  TargetSpec target;
  LoadSpec load;
  RepeatSpec repeat;
  ThresholdSet thresholds;  // metric key -> limits (defaults filled when absent)
  std::optional<ServiceSpec> service;

  /// SHA-256 (hex) of what changes results: target, load and repeat, before
  /// environment substitution (a rotated token or another port is the same test).
  /// Thresholds, names and descriptions are left out.
  std::string hash;
  /// The profile as parsed, canonical JSON, secret-looking header values replaced
  /// by "<redacted>": what the store keeps.
  std::string redacted_json;
};

/// One problem found in a profile, with where it is.
struct ProfileProblem {
  int line = 0;          // 1-based; 0 when unknown
  std::string key_path;  // "load.connections"; empty for syntax errors
  std::string message;   // "must be a positive integer, got \"ten\""
  int column = 0;        // 1-based, for syntax errors; 0 when not known
};

/// Every problem of a profile at once, so that one edit fixes them all.
class ProfileError : public Error {
 public:
  ProfileError(std::string source, std::vector<ProfileProblem> problems);
  const std::vector<ProfileProblem>& problems() const { return problems_; }
  /// One line per problem: "hello.json:7: load.connections: must be ..."
  std::vector<std::string> lines() const;

 private:
  std::string source_;
  std::vector<ProfileProblem> problems_;
};

/// Looks up an environment variable for `${NAME}` and `${NAME:-default}` in
/// profile strings.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup process_environment();

/// Reads, validates and normalizes a profile (JSON with // and /* */ comments).
/// Throws ProfileError listing every problem, or Error when unreadable.
Profile load_profile(const std::filesystem::path& path, const EnvLookup& env);
Profile parse_profile(std::string_view text, const std::string& source_name, const EnvLookup& env);

/// The defaults documented in the README, used when a profile has no `thresholds`.
ThresholdSet default_thresholds();

/// Header names whose values are never stored or printed.
bool is_secret_header(std::string_view name);

}  // namespace perfgate
