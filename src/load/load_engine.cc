#include "perfgate/load/load_engine.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

#include "ascii_case.h"
#include "perfgate/core/error.h"
#include "perfgate/load/curl_engine.h"
#include "perfgate/load/http_request.h"
#include "perfgate/load/native_engine.h"

namespace perfgate {
namespace {}  // namespace

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

LoadMemoryFloor load_memory_floor(const LoadPlan& plan) {
  LoadMemoryFloor floor;
  floor.per_window_bytes = 2 * LatencyHistogram::kBucketCount * sizeof(uint64_t);
  // Each thread's slots (the warm-up and every window), and the run's merged ones.
  auto slots = static_cast<uint64_t>(plan.iterations) + 1;
  floor.windows = (static_cast<uint64_t>(plan.threads) + 1) * slots;
  // The native engine's read buffer a thread; the curl engine's are libcurl's.
  floor.other_bytes = static_cast<uint64_t>(plan.threads) * kNativeReadBufferBytes;
  if (plan.mix.empty()) floor.other_bytes += plan.target.body.size();
  for (const auto& entry : plan.mix) floor.other_bytes += entry.body.size();
  return floor;
}

bool native_engine_serves(const TargetSpec& target) {
  return starts_with_nocase(target.url, "http://") && target.http_version != "2";
}

std::string native_engine_refusal(const std::vector<TargetSpec>& requests) {
  std::optional<HttpUrl> first;
  for (const auto& r : requests) {
    if (!native_engine_serves(r))
      return "the native engine speaks plain http:// HTTP/1.1 only, not " + shown_url(r) +
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
      throw Error("cannot load " + shown_url(r) + ": only http:// and https:// URLs are supported");
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

std::vector<TargetSpec> requests_of(const LoadPlan& plan) {
  return plan.mix.empty() ? std::vector<TargetSpec>{plan.target} : plan.mix;
}

WeightedRoundRobin::WeightedRoundRobin(const std::vector<TargetSpec>& entries) {
  for (const auto& e : entries) {
    if (!(e.weight > 0) || !std::isfinite(e.weight))
      throw Error("request \"" + e.name + "\" needs a positive, finite weight, got " +
                  std::to_string(e.weight));
    weights_.push_back(e.weight);
  }
  // Scaled by a power of two, which is exact, to put the largest in [0.5, 1):
  // the total stays finite whatever the weights ([1e308, 1e308] summed to
  // infinity and picked the first entry for ever).
  int exponent = 0;
  if (!weights_.empty()) std::frexp(*std::max_element(weights_.begin(), weights_.end()), &exponent);
  for (auto& w : weights_) total_ += (w = std::ldexp(w, -exponent));
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
