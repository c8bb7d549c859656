// `placement`: "auto", "off", or { "load": "1", "service": "0" }.
#include <algorithm>
#include <array>

#include "perfgate/core/cpu_list.h"
#include "profile_sections.h"

namespace perfgate::profile_detail {
namespace {

constexpr std::array<std::string_view, 2> kPlacementKeys = {"load", "service"};

std::optional<CpuList> read_cpu_list(const Section& s, std::string_view key) {
  if (!s.require(key)) return std::nullopt;
  auto text = s.string(key);
  if (!text) return std::nullopt;
  try {
    return parse_cpu_list(*text);
  } catch (const Error& e) {
    s.problem(key, e.what());
    return std::nullopt;
  }
}

PlacementSpec read_fixed(const Section& s) {
  PlacementSpec spec;
  s.reject_unknown(kPlacementKeys);
  auto load = read_cpu_list(s, "load");
  auto service = read_cpu_list(s, "service");
  if (!load || !service) return spec;
  // Separate sets, or the service and the load threads compete again for the
  // same core, which is what placement is for avoiding.
  for (int cpu : *load)
    if (std::binary_search(service->begin(), service->end(), cpu))
      s.problem("service",
                "must not share a CPU with load (both name cpu " + std::to_string(cpu) + ")");
  spec.mode = "fixed";
  spec.load = *load;
  spec.service = *service;
  return spec;
}

}  // namespace

PlacementSpec read_placement(const Section& root) {
  const Doc* value = root.get("placement");
  if (!value) return {};
  if (value->is_object()) return read_fixed(root.object("placement"));
  auto mode = root.string("placement");
  if (!mode) return {};
  if (*mode != "auto" && *mode != "off") {
    root.problem("placement",
                 "must be \"auto\", \"off\" or an object like {\"load\": \"1\", \"service\": "
                 "\"0\"}, got " +
                     json_quoted(*mode));
    return {};
  }
  PlacementSpec spec;
  spec.mode = *mode;
  return spec;
}

}  // namespace perfgate::profile_detail
