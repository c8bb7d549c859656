// `${...}` substitution on arbitrary templates and variable values, through
// parse_profile(): the input is "TEMPLATE\0VALUE"; the template becomes the
// description and a header value, and every variable is VALUE repeated as often
// as its name is long (so that many references can grow the output). It may
// reject with perfgate::Error, never crash, hang or throw anything else.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "perfgate/profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t split = input.find('\0');
  std::string_view templ = input.substr(0, split);
  std::string value(split == std::string_view::npos ? "" : input.substr(split + 1));
  auto env = [&value](std::string_view name) -> std::optional<std::string> {
    if (name.starts_with("UNSET")) return std::nullopt;
    std::string out;
    for (size_t i = 0; i < name.size(); ++i) out += value;
    return out;
  };
  nlohmann::json profile = {
      {"name", "fuzz"},
      {"description", std::string(templ)},
      {"target",
       {{"url", "http://127.0.0.1:8080/"}, {"headers", {{"X-Fuzz", std::string(templ)}}}}}};
  try {
    auto parsed = perfgate::parse_profile(
        profile.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "fuzz.json", env);
    (void)parsed.redacted_json;
  } catch (const perfgate::Error&) {
  }
  return 0;
}
