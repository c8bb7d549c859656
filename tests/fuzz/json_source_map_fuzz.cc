// JsonSourceMap::scan() never throws, whatever the text (see its header).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "perfgate/profile/json_source_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto map = perfgate::JsonSourceMap::scan(text);
  (void)map.line_of("load.connections");
  (void)map.nearest_line("service.command[1]");
  (void)perfgate::position_at(text, size / 2);
  (void)perfgate::parent_path(text);
  return 0;
}
