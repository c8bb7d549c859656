#pragma once

// The shape of an HTTP/1.1 request on the wire, as the native engine and the
// curl engine's HTTP/1.1 path send it: the URL's parts and the request's bytes.

#include <cstdint>
#include <string>
#include <string_view>

#include "perfgate/profile/profile.h"

namespace perfgate {

/// The parts of a plain http:// URL the native engine needs.
struct HttpUrl {
  std::string host;  // as written, for the Host header
  uint16_t port = 80;
  std::string host_header;  // host[:port] as written in the URL
  std::string path_query;   // "/" when the URL has none
};

/// Parses "http://host[:port][/path][?query]" (case-insensitive scheme);
/// throws Error naming the URL for anything else.
HttpUrl parse_http_url(std::string_view url);

/// The exact bytes of one request, built once and sent for every request of
/// that shape: request line, Host, the target's headers, Content-Length
/// when there is a body, then the body.
std::string serialize_request(const TargetSpec& target, const HttpUrl& url);

}  // namespace perfgate
