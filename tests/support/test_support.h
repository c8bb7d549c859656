#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace perfgate::testing {

/// A fresh folder under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& text);

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

/// Runs `argv` to completion with stdout and stderr captured; `env` entries are
/// added to (or override) the inherited environment. Kills it after `timeout_s`.
CommandResult run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {},
                          const std::filesystem::path& cwd = {}, int timeout_s = 120);

/// Validates a JSON file against schemas/result.schema.json with Debian's
/// python3-jsonschema (the schema itself checked first, so that a broken schema
/// cannot pass everything); exit 0 when valid, one line per problem on stdout.
CommandResult validate_result_json(const std::filesystem::path& document);

/// The real perfgate binary under test.
std::string perfgate_binary();
std::filesystem::path source_dir();

/// `perfgate demo-server` in a child process on a free loopback port, stopped
/// (by its PID) on destruction.
class DemoServerProcess {
 public:
  explicit DemoServerProcess(const std::vector<std::string>& extra_args = {});
  ~DemoServerProcess();
  DemoServerProcess(const DemoServerProcess&) = delete;
  DemoServerProcess& operator=(const DemoServerProcess&) = delete;
  uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/") const;
  /// The server's own count of responses, from GET /__stats.
  uint64_t requests_served() const;

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  TempDir dir_;
};

/// A loopback port where nothing listens (bound, then closed).
uint16_t unused_port();

/// GET over plain HTTP/1.1 to 127.0.0.1; returns the body ("" on failure).
std::string http_get(uint16_t port, const std::string& path);

}  // namespace perfgate::testing
