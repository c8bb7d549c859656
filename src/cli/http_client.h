#pragma once

// Internal to the CLI stage: the few HTTPS requests perfgate makes to a CI
// server's API (perfgate comment), through libcurl. Not the load engines: one
// request at a time, proxies from the environment honoured, TLS verified.

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "perfgate/core/units.h"

namespace perfgate {

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PATCH, PUT
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; may hold a secret, never logged
  std::string body;                  // sent when not empty
};

struct HttpResponse {
  long status = 0;
  std::string body;
};

/// `url` with any user:password@ replaced by ***@: what messages show of an
/// API address, which may carry credentials.
std::string without_userinfo(const std::string& url);

/// Sends requests with a bounded time each; a set `stop` flag (SIGINT,
/// SIGTERM) aborts the request under way.
class HttpClient {
 public:
  HttpClient(Nanos timeout, const std::atomic<bool>& stop) : timeout_(timeout), stop_(stop) {}

  /// The response, whatever its status. Throws Error when no response came
  /// (refused, timed out, TLS, interrupted); the message names the method and
  /// URL, never a header.
  HttpResponse send(const HttpRequest& request) const;

 private:
  Nanos timeout_;
  const std::atomic<bool>& stop_;
};

}  // namespace perfgate
