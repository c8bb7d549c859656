#include "perfgate/load/http_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

#include "ascii_case.h"
#include "perfgate/core/error.h"

namespace perfgate {
namespace {

bool has_header(const TargetSpec& target, std::string_view name) {
  return std::any_of(target.headers.begin(), target.headers.end(), [name](const auto& h) {
    return starts_with_nocase(h.first, name) && h.first.size() == name.size();
  });
}

// "host:port" -> port; throws for a port that is not 1..65535.
uint16_t parse_port(std::string_view text, std::string_view url) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535)
    throw Error("bad port in " + redacted_url(std::string(url)));
  return static_cast<uint16_t>(value);
}

}  // namespace

HttpUrl parse_http_url(std::string_view url) {
  if (!starts_with_nocase(url, "http://"))
    throw Error("not a plain http:// URL: " + redacted_url(std::string(url)));
  std::string_view rest = url.substr(7);
  size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  HttpUrl out;
  out.host_header = std::string(authority);
  if (authority.empty() || authority.find('@') != std::string_view::npos)
    throw Error("no host (or user info, which is not supported) in " +
                redacted_url(std::string(url)));
  // IPv6 literals ("[::1]:8080") keep their brackets in the Host header only.
  size_t colon = authority.rfind(':');
  bool bracketed = authority.front() == '[';
  if (colon != std::string_view::npos && (!bracketed || authority[colon - 1] == ']')) {
    out.port = parse_port(authority.substr(colon + 1), url);
    authority = authority.substr(0, colon);
  }
  if (bracketed) authority = authority.substr(1, authority.size() - 2);
  out.host = std::string(authority);
  std::string_view path = slash == std::string_view::npos ? "/" : rest.substr(slash);
  path = path.substr(0, path.find('#'));  // fragments never go on the wire
  out.path_query =
      path.empty() || path.front() != '/' ? "/" + std::string(path) : std::string(path);
  return out;
}

std::string serialize_request(const TargetSpec& target, const HttpUrl& url) {
  std::string out = target.method + " " + url.path_query + " HTTP/1.1\r\n";
  if (!has_header(target, "Host")) out += "Host: " + url.host_header + "\r\n";
  for (const auto& [name, value] : target.headers) out += name + ": " + value + "\r\n";
  bool sends_length = !target.body.empty() || target.method == "POST" || target.method == "PUT";
  if (sends_length && !has_header(target, "Content-Length"))
    out += "Content-Length: " + std::to_string(target.body.size()) + "\r\n";
  out += "\r\n";
  out += target.body;
  return out;
}

}  // namespace perfgate
