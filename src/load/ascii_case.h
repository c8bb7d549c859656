#pragma once

// Case-insensitive ASCII text, as URL schemes, hosts and header names compare.
// Private to the load stage.

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace perfgate {

inline bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), text.begin(),
                                                    [](unsigned char a, unsigned char b) {
                                                      return std::tolower(a) == std::tolower(b);
                                                    });
}

inline std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace perfgate
