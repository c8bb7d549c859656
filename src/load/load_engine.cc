#include "perfgate/load/load_engine.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string>

#include "perfgate/core/error.h"
#include "perfgate/load/curl_engine.h"
#include "perfgate/load/native_engine.h"

namespace perfgate {
namespace {

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), text.begin(),
                                                    [](unsigned char a, unsigned char b) {
                                                      return std::tolower(a) == std::tolower(b);
                                                    });
}

bool has_header(const TargetSpec& target, std::string_view name) {
  return std::any_of(target.headers.begin(), target.headers.end(), [name](const auto& h) {
    return starts_with_nocase(h.first, name) && h.first.size() == name.size();
  });
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
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

LoadPlan plan_from_profile(const Profile& profile) {
  LoadPlan plan;
  plan.target = profile.target;
  plan.mix = profile.requests;
  plan.threads = profile.load.threads;
  plan.connections = profile.load.connections;
  plan.warmup = profile.load.warmup;
  plan.duration = profile.load.duration;
  plan.rate = profile.load.rate;
  plan.timeout = profile.load.timeout;
  plan.connect_timeout = profile.load.connect_timeout;
  plan.iterations = profile.repeat.count;
  plan.discard = profile.repeat.discard;
  return plan;
}

bool native_engine_serves(const TargetSpec& target) {
  return starts_with_nocase(target.url, "http://") && target.http_version != "2";
}

std::string native_engine_refusal(const std::vector<TargetSpec>& requests) {
  std::optional<HttpUrl> first;
  for (const auto& r : requests) {
    if (!native_engine_serves(r))
      return "the native engine speaks plain http:// HTTP/1.1 only, not " + redacted_url(r.url) +
             (r.http_version == "2" ? " over HTTP/2" : "");
    HttpUrl url;
    try {
      url = parse_http_url(r.url);
    } catch (const Error& e) {
      return e.what();
    }
    if (!first) first = url;
    // It resolves one address per run, as wrk does.
    if (lowercase(url.host) != lowercase(first->host) || url.port != first->port)
      return "the native engine loads one host per run, but the mix names " + first->host_header +
             " and " + url.host_header;
  }
  return "";
}

std::unique_ptr<LoadEngine> make_load_engine(std::string_view kind, const LoadPlan& plan) {
  if (kind != "curl" && kind != "auto" && kind != "native")
    throw Error("unknown load engine \"" + std::string(kind) +
                "\"; use \"auto\", \"curl\" or \"native\"");
  const auto requests = requests_of(plan);
  for (const auto& r : requests) {
    if (!starts_with_nocase(r.url, "http://") && !starts_with_nocase(r.url, "https://"))
      throw Error("cannot load " + redacted_url(r.url) +
                  ": only http:// and https:// URLs are supported");
  }
  if (kind == "curl") return std::make_unique<CurlEngine>();
  // "auto" takes the native engine wherever it can: it costs half the client
  // CPU per request (bench/README.md), which a 2-core runner gives the service.
  std::string refusal = native_engine_refusal(requests);
  if (refusal.empty()) return std::make_unique<NativeEngine>();
  if (kind == "native") throw Error(refusal + "; use \"curl\" or \"auto\"");
  return std::make_unique<CurlEngine>();
}

std::unique_ptr<LoadEngine> make_load_engine(std::string_view kind, const TargetSpec& target) {
  LoadPlan plan;
  plan.target = target;
  return make_load_engine(kind, plan);
}

void probe_target(const TargetSpec& target, Nanos timeout) {
  curl_probe(target, timeout);
}

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

std::vector<TargetSpec> requests_of(const LoadPlan& plan) {
  return plan.mix.empty() ? std::vector<TargetSpec>{plan.target} : plan.mix;
}

WeightedRoundRobin::WeightedRoundRobin(const std::vector<TargetSpec>& entries) {
  for (const auto& e : entries) {
    if (!(e.weight > 0))
      throw Error("request \"" + e.name + "\" needs a positive weight, got " +
                  std::to_string(e.weight));
    weights_.push_back(e.weight);
    total_ += e.weight;
  }
  current_.assign(weights_.size(), 0);
}

size_t WeightedRoundRobin::next() {
  if (weights_.size() <= 1) return 0;
  // Every entry gains its weight; the richest is picked and pays the total.
  // Over `total` picks each entry is chosen `weight` times, interleaved.
  size_t best = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    current_[i] += weights_[i];
    if (current_[i] > current_[best]) best = i;
  }
  current_[best] -= total_;
  return best;
}

}  // namespace perfgate
