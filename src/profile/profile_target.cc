#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "perfgate/core/bounded_read.h"
#include "perfgate/core/checked.h"
#include "profile_sections.h"

namespace perfgate::profile_detail {
namespace {

constexpr std::array<std::string_view, 9> kTargetKeys = {
    "url",          "method",   "headers",         "body", "body_file", "tls_verify",
    "http_version", "requests", "success_statuses"};
constexpr std::array<std::string_view, 9> kRequestKeys = {
    "name", "weight", "url", "path", "method", "headers", "body", "body_file", "success_statuses"};
constexpr size_t kMaxSuccessTerms = 100;
constexpr size_t kMaxBodyBytes = 64 * 1024 * 1024;
constexpr size_t kMaxRequests = 1000;
constexpr size_t kMaxMixBodyBytes = 256 * 1024 * 1024;
// Servers refuse far less (8-16 KB is usual); past this a value is a mistake.
constexpr size_t kMaxHeaderValueBytes = 64 * 1024;

}  // namespace

static bool is_token_char(unsigned char c) {
  return std::isalnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

std::optional<std::string> name_problem(std::string_view name) {
  bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
  if (ok) return std::nullopt;
  return "must be letters, digits, '.', '_' or '-' (it names the test in the store), got " +
         json_quoted(name);
}

std::optional<std::string> header_name_problem(std::string_view name) {
  if (!name.empty() && std::all_of(name.begin(), name.end(), is_token_char)) return std::nullopt;
  return "is not a valid HTTP header name";
}

std::optional<std::string> env_name_problem(std::string_view name) {
  if (is_env_name(name)) return std::nullopt;
  return "is not a valid environment variable name (letters, digits, _)";
}

static std::optional<std::string> port_problem(std::string_view port) {
  bool digits =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
  if (digits && std::atoi(std::string(port).c_str()) >= 1 &&
      std::atoi(std::string(port).c_str()) <= 65535)
    return std::nullopt;
  return "port must be a number from 1 to 65535, got " + json_quoted(port);
}

/// Host and optional port of "user@host:port", "[::1]:8080" or "example.com".
static std::optional<std::string> authority_problem(std::string_view authority) {
  size_t at = authority.rfind('@');
  std::string_view host = at == std::string_view::npos ? authority : authority.substr(at + 1);
  size_t colon = host.rfind(':');
  if (!host.empty() && host[0] == '[') {
    size_t close = host.find(']');
    if (close == std::string_view::npos) return "has an unclosed IPv6 address \"[\"";
    colon = close + 1 < host.size() && host[close + 1] == ':' ? close + 1 : std::string_view::npos;
  }
  if (colon != std::string_view::npos) {
    if (auto why = port_problem(host.substr(colon + 1))) return why;
    host = host.substr(0, colon);
  }
  if (host.empty() || host == "[]") return "has no host";
  return std::nullopt;
}

/// A NUL or control byte: the native engine would send it raw while curl stops
/// at a NUL, so the probe and the load would send different requests.
static bool has_control_char(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

/// The URL as an error may quote it: without the password of its user info,
/// even when the URL is too broken to be parsed.
static std::string shown_url(std::string_view url) {
  std::string text(url);
  if (text.find("://") != std::string::npos) return json_quoted(redacted_url(text));
  size_t at = text.rfind('@', text.find_first_of("/?#"));
  if (at == std::string::npos) return json_quoted(text);
  return json_quoted("<redacted>" + text.substr(at));
}

static std::optional<std::string> url_problem(std::string_view url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos)
    return "must be an absolute http:// or https:// URL, got " + shown_url(url);
  std::string_view scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    return "scheme \"" + std::string(scheme) + "\" is not supported; use http:// or https://";
  if (url.find_first_of(" \t\r\n") != std::string_view::npos) return "must not contain whitespace";
  if (has_control_char(url)) return "must not contain control characters or NUL";
  std::string_view rest = url.substr(scheme_end + 3);
  if (auto why = authority_problem(rest.substr(0, rest.find_first_of("/?#"))))
    return *why + ": " + shown_url(url);
  return std::nullopt;
}

static bool is_method(std::string_view method) {
  return !method.empty() && method[0] >= 'A' && method[0] <= 'Z' &&
         std::all_of(method.begin(), method.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
         });
}

std::string read_url(const Section& section, std::string_view key) {
  auto url = section.string(key);
  if (url) {
    if (auto why = url_problem(*url)) section.problem(key, *why);
  }
  return url.value_or("");
}

namespace {

std::string method_of(const Section& s, const std::string& inherited) {
  auto method = s.string("method").value_or(inherited);
  if (!is_method(method))
    s.problem("method", "must be an uppercase HTTP method like \"GET\" or \"POST\", got " +
                            json_quoted(method));
  return method;
}

std::vector<std::pair<std::string, std::string>> headers_of(const Section& s) {
  auto headers = s.string_map("headers", header_name_problem);
  for (const auto& [name, value] : headers) {
    if (value.find_first_of("\r\n") != std::string::npos)
      s.problem(child_path("headers", name), "must not contain a line break");
    // A tab is folding whitespace, allowed in a field value.
    else if (std::any_of(value.begin(), value.end(),
                         [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }))
      s.problem(child_path("headers", name), "must not contain control characters or NUL");
    else if (value.size() > kMaxHeaderValueBytes)
      s.problem(child_path("headers", name), "is longer than 64 KiB; servers refuse far less");
  }
  // Header names are case-insensitive: "Host" and "host" would both be sent,
  // and a server may take either.
  for (size_t i = 0; i < headers.size(); ++i) {
    const auto& name = headers[i].first;
    for (size_t k = 0; k < i; ++k)
      if (lowercase(headers[k].first) == lowercase(name)) {
        s.problem(child_path("headers", name),
                  "repeats header " + json_quoted(headers[k].first) +
                      " (header names are case-insensitive); give it once");
        break;
      }
    // perfgate frames the body itself (Content-Length); a chunked header over
    // a raw body would make the server misread every request after it.
    if (lowercase(name) == "transfer-encoding")
      s.problem(child_path("headers", name),
                "must not be set: perfgate frames the body itself (with Content-Length)");
  }
  return headers;
}

// A Content-Length of the user's that is not the body's length makes the
// server read too little or wait for bytes that never come.
void check_content_length(const Section& s, const TargetSpec& target, bool own_headers) {
  for (const auto& [name, value] : target.headers) {
    if (lowercase(name) != "content-length") continue;
    std::string body = std::to_string(target.body.size());
    if (value == body) return;
    std::string why = "is " + json_quoted(value) + ", but the body is " + body +
                      " bytes; leave Content-Length out (perfgate sets it)";
    if (own_headers)
      s.problem(child_path("headers", name), why);
    else
      s.problem(s.has("body_file") ? "body_file" : "body",
                "the inherited header " + name + ": " + value + " does not match: the body is " +
                    body + " bytes; leave Content-Length out (perfgate sets it)");
    return;
  }
}

// A body from `body` or from `body_file` (relative to the profile's folder).
void read_body(const Section& s, const std::filesystem::path& base_dir, TargetSpec& target) {
  if (s.has("body") && s.has("body_file")) {
    s.problem("body_file", "give either body or body_file, not both");
    return;
  }
  if (auto body = s.string("body")) target.body = *body;
  auto file = s.string("body_file");
  if (!file) return;
  target.body_file = *file;
  std::filesystem::path path = base_dir / *file;
  std::error_code ec;
  // Bounded while reading: body_file /dev/zero once read without end.
  BoundedRead read;
  if (std::filesystem::is_directory(path, ec))
    read.error = EISDIR;
  else
    read = read_bounded(path, kMaxBodyBytes);
  if (read.too_large) {
    s.problem("body_file", "is larger than 64 MiB; a load test body should be small");
  } else if (read.error || read.interrupted) {
    s.problem("body_file", "cannot read " + json_quoted(path.string()));
  } else {
    target.body = std::move(read.bytes);
  }
}

void read_http_options(const Section& s, TargetSpec& target) {
  if (const Doc* verify = s.get("tls_verify")) {
    if (verify->is_boolean())
      target.tls_verify = verify->get<bool>();
    else
      s.problem("tls_verify", "must be true or false, got " + shown(*verify));
  }
  target.http_version = s.string("http_version").value_or(target.http_version);
  if (target.http_version != "1.1" && target.http_version != "2")
    s.problem("http_version", "must be \"1.1\" or \"2\", got " + json_quoted(target.http_version));
}

// `success_statuses`: codes (404 or "404"), classes ("2xx") and ranges ("200-299").
void read_success_statuses(const Section& s, TargetSpec& target) {
  const Doc* list = s.get("success_statuses");
  if (!list) return;
  if (!list->is_array() || list->empty() || list->size() > kMaxSuccessTerms) {
    s.problem("success_statuses",
              "must be a non-empty array of status codes, classes like \"2xx\" or ranges like "
              "\"200-299\", got " +
                  shown(*list));
    return;
  }
  SuccessStatuses statuses;
  statuses.ranges.clear();
  for (size_t i = 0; i < list->size(); ++i) {
    const Doc& item = (*list)[i];
    std::string term = item.is_number_integer() ? std::to_string(item.get<int64_t>())
                       : item.is_string()       ? item.get<std::string>()
                                                : "";
    std::string why;
    auto range = SuccessStatuses::parse_term(term, why);
    if (range)
      statuses.ranges.push_back(*range);
    else
      s.problems().add(element_path(s.path_of("success_statuses"), i),
                       why + ", got " + shown(item));
  }
  target.success_statuses = std::move(statuses);
}

std::string entry_url(const Section& e, const TargetSpec& base) {
  if (e.has("url") && e.has("path")) e.problem("path", "give either url or path, not both");
  if (e.has("url")) return read_url(e, "url");
  auto path = e.string("path");
  if (!path) return base.url;
  if (path->empty() || (*path)[0] != '/')
    e.problem("path", "must start with \"/\", got " + json_quoted(*path));
  return url_origin(base.url) + *path;
}

// Weights are shares of the mix: past a millionfold apart they stop meaning
// anything, and [1e308, 1e308] summed to infinity and sent every request to
// the first entry.
constexpr NumberRange kMixWeight{0.001, 1'000'000, ""};

std::optional<double> read_weight(const Section& e) {
  const Doc* value = e.get("weight");
  if (!value) return std::nullopt;
  if (value->is_number() && kMixWeight.contains(value->get<double>())) return value->get<double>();
  e.problem("weight", "must be a number " + kMixWeight.words() + ", got " + shown(*value));
  return std::nullopt;
}

TargetSpec read_request(const Section& e, const TargetSpec& base,
                        const std::filesystem::path& base_dir) {
  e.reject_unknown(kRequestKeys);
  TargetSpec request = base;  // inherits what it does not set
  request.name = e.string("name").value_or("");
  request.url = entry_url(e, base);
  request.method = method_of(e, base.method);
  auto own = headers_of(e);
  bool own_length = std::any_of(
      own.begin(), own.end(), [](const auto& h) { return lowercase(h.first) == "content-length"; });
  for (auto& header : own) {
    auto same = [&](const auto& h) { return lowercase(h.first) == lowercase(header.first); };
    std::erase_if(request.headers, same);
    request.headers.push_back(std::move(header));
  }
  if (e.has("body") || e.has("body_file")) {
    request.body_file.clear();
    read_body(e, base_dir, request);
  }
  // The target's own mismatch is the target's to report.
  if (own_length || e.has("body") || e.has("body_file"))
    check_content_length(e, request, own_length);
  request.weight = read_weight(e).value_or(1);
  read_success_statuses(e, request);
  return request;
}

}  // namespace

TargetSpec read_target(const Section& root, const std::filesystem::path& base_dir) {
  TargetSpec target;
  if (!root.require("target")) return target;
  Section s = root.object("target");
  s.reject_unknown(kTargetKeys);
  if (s.require("url")) target.url = read_url(s, "url");
  target.method = method_of(s, target.method);
  target.headers = headers_of(s);
  read_body(s, base_dir, target);
  check_content_length(s, target, true);
  read_http_options(s, target);
  read_success_statuses(s, target);
  return target;
}

std::vector<TargetSpec> read_requests(const Section& root, const TargetSpec& base,
                                      const std::filesystem::path& base_dir) {
  std::vector<TargetSpec> mix;
  Section target = root.object("target");
  const Doc* list = target.get("requests");
  if (!list) return mix;
  if (list->is_array() && list->size() > kMaxRequests) {
    target.problem("requests", "holds " + std::to_string(list->size()) + " entries; at most " +
                                   std::to_string(kMaxRequests) + " (give the weights instead)");
    return mix;
  }
  if (!list->is_array() || list->empty()) {
    target.problem("requests", "must be a non-empty array of request objects, got " + shown(*list));
    return mix;
  }
  // Every entry holds its own copy of its body (one it does not set is the
  // target's), and the engines copy them again: 1000 entries of a 64 MiB body
  // once ran out of memory after the load had started.
  size_t bodies = 0;
  for (size_t i = 0; i < list->size(); ++i) {
    Section entry(&(*list)[i], element_path(target.path_of("requests"), i), target.problems());
    if (!(*list)[i].is_object()) {
      entry.problem("", "must be an object, got " + shown((*list)[i]));
      continue;
    }
    mix.push_back(read_request(entry, base, base_dir));
    bodies += mix.back().body.size();
    if (bodies > kMaxMixBodyBytes) {
      entry.problem("",
                    "the mix's bodies add up to more than 256 MiB here (an entry without a "
                    "body of its own carries the target's " +
                        std::to_string(base.body.size()) +
                        " bytes); use smaller bodies or fewer entries");
      break;
    }
  }
  return mix;
}

}  // namespace perfgate::profile_detail

namespace perfgate {

std::string url_origin(const std::string& url) {
  size_t start = url.find("://");
  if (start == std::string::npos) return url;
  size_t end = url.find_first_of("/?#", start + 3);
  return end == std::string::npos ? url : url.substr(0, end);
}

}  // namespace perfgate
