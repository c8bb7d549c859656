// parse_duration() and parse_percent() on arbitrary text; what they accept must
// format back without trouble.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "perfgate/core/units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto d = perfgate::parse_duration(text)) {
    if (d->count() < 0) __builtin_trap();  // documented: negatives are rejected
    (void)perfgate::format_duration(*d);
  }
  if (auto p = perfgate::parse_percent(text))
    if (*p < 0) __builtin_trap();
  return 0;
}
