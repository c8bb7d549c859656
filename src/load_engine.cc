#include "perfgate/load_engine.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "perfgate/curl_engine.h"
#include "perfgate/error.h"

namespace perfgate {
namespace {

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), text.begin(),
                                                    [](unsigned char a, unsigned char b) {
                                                      return std::tolower(a) == std::tolower(b);
                                                    });
}

}  // namespace

LoadPlan plan_from_profile(const Profile& profile) {
  LoadPlan plan;
  plan.target = profile.target;
  plan.threads = profile.load.threads;
  plan.connections = profile.load.connections;
  plan.warmup = profile.load.warmup;
  plan.duration = profile.load.duration;
  plan.rate = profile.load.rate;
  plan.timeout = profile.load.timeout;
  plan.iterations = profile.repeat.count;
  plan.discard = profile.repeat.discard;
  return plan;
}

std::unique_ptr<LoadEngine> make_load_engine(std::string_view kind, const TargetSpec& target) {
  if (kind == "native") throw Error("the native engine is not built yet; use \"curl\" or \"auto\"");
  if (kind != "curl" && kind != "auto")
    throw Error("unknown load engine \"" + std::string(kind) +
                "\"; use \"auto\", \"curl\" or \"native\"");
  if (!starts_with_nocase(target.url, "http://") && !starts_with_nocase(target.url, "https://"))
    throw Error("cannot load " + target.url + ": only http:// and https:// URLs are supported");
  // "auto" will pick the native engine for plain http:// once it exists.
  return std::make_unique<CurlEngine>();
}

void probe_target(const TargetSpec& target, Nanos timeout) {
  curl_probe(target, timeout);
}

}  // namespace perfgate
