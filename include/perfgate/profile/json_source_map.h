#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace perfgate {

/// 1-based line and column (in bytes) of a place in a text.
struct TextPosition {
  int line = 1;
  int column = 1;
};

/// Where the byte at `offset` is; an offset past the end points just after the last byte.
TextPosition position_at(std::string_view text, size_t offset);

/// "load" + "threads" -> "load.threads"; "" + "name" -> "name".
std::string child_path(std::string_view parent, std::string_view key);
/// "service.command" + 1 -> "service.command[1]".
std::string element_path(std::string_view parent, size_t index);
/// "service.command[1]" -> "service.command"; "load.threads" -> "load"; "name" -> "".
std::string parent_path(std::string_view path);

/// Source lines of the keys of a JSON text (comments allowed), because
/// nlohmann::json keeps no positions. Paths name object members by key and
/// array elements by index: "load.connections", "service.command[1]"; the
/// root value is "".
class JsonSourceMap {
 public:
  /// A key written twice in one object: the parser keeps the last silently.
  struct Duplicate {
    std::string path;
    int first_line = 0;
    int line = 0;
  };

  /// Scans `text` once. Never throws: on malformed input it keeps what it
  /// found before the fault (the JSON parser reports the fault itself).
  static JsonSourceMap scan(std::string_view text);

  /// Line of the key (or array element) at `path`; 0 when it is absent.
  int line_of(std::string_view path) const;
  /// Line of `path`, else of its nearest present ancestor: where a missing key belongs.
  int nearest_line(std::string_view path) const;
  const std::vector<Duplicate>& duplicates() const { return duplicates_; }

 private:
  std::map<std::string, int, std::less<>> lines_;
  std::vector<Duplicate> duplicates_;
};

}  // namespace perfgate
