// parse_profile() on arbitrary text: it may reject with perfgate::Error, never
// crash, hang or throw anything else.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "perfgate/profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto no_env = [](std::string_view) -> std::optional<std::string> { return "8080"; };
  try {
    auto profile = perfgate::parse_profile(text, "fuzz.json", no_env);
    (void)profile.hash;
  } catch (const perfgate::Error&) {
  }
  return 0;
}
