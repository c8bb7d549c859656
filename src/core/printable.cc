#include "perfgate/core/printable.h"

#include <cstdio>

namespace perfgate {
namespace {

void append_escape(std::string& out, unsigned char c) {
  char escape[5];
  std::snprintf(escape, sizeof escape, "\\x%02x", c);
  out += escape;
}

std::string escaped(std::string_view text, bool keep_lines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (keep_lines && (c == '\n' || c == '\t')) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7f) {
      append_escape(out, c);
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {
      // U+0080..U+009F in UTF-8: C1 controls, CSI among them, which some terminals obey.
      append_escape(out, c);
      append_escape(out, next);
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace

std::string printable(std::string_view text) {
  return escaped(text, false);
}

std::string printable_lines(std::string_view text) {
  return escaped(text, true);
}

}  // namespace perfgate
