#include "perfgate/profile/json_source_map.h"

#include <algorithm>
#include <cstdint>

namespace perfgate {
namespace {

/// The scan stops here on malformed input; what was found so far stays.
struct Malformed {};

// Deeper nesting than this is no profile; stopping keeps the recursion bounded.
constexpr int kMaxDepth = 256;

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

/// One pass over the text, recording the line of every key and array element.
class JsonScanner {
 public:
  JsonScanner(std::string_view text, std::map<std::string, int, std::less<>>& lines,
              std::vector<JsonSourceMap::Duplicate>& duplicates)
      : text_(text), lines_(lines), duplicates_(duplicates) {}

  void scan_root() {
    skip_space();
    lines_[""] = line_;
    value("", 0);
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  char next() {
    if (pos_ >= text_.size()) throw Malformed{};
    char c = text_[pos_++];
    if (c == '\n') ++line_;
    return c;
  }

  void expect(char c) {
    if (next() != c) throw Malformed{};
  }

  void skip_space() {
    for (;;) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        next();
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (pos_ < text_.size() && peek() != '\n') next();
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
        skip_block_comment();
      } else {
        return;
      }
    }
  }

  void skip_block_comment() {
    next();
    next();
    while (!(peek() == '*' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/')) next();
    next();
    next();
  }

  uint32_t hex4() {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = next();
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0) throw Malformed{};
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    return value;
  }

  // \uD83D\uDE00 is one character written as a surrogate pair.
  uint32_t unicode_escape() {
    uint32_t cp = hex4();
    if (cp >= 0xd800 && cp < 0xdc00 && peek() == '\\') {
      next();
      expect('u');
      uint32_t low = hex4();
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    return cp;
  }

  void escape(std::string& out) {
    char c = next();
    switch (c) {
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u':
        append_utf8(out, unicode_escape());
        break;
      default:
        out.push_back(c);  // \" \\ \/
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    for (char c = next(); c != '"'; c = next()) {
      if (c == '\\') {
        escape(out);
      } else {
        out.push_back(c);
      }
    }
    return out;
  }

  void value(const std::string& path, int depth) {
    if (depth > kMaxDepth) throw Malformed{};
    char c = peek();
    if (c == '{') {
      object(path, depth);
    } else if (c == '[') {
      array(path, depth);
    } else if (c == '"') {
      string();
    } else {
      scalar();
    }
  }

  void scalar() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           std::string_view(",]} \t\r\n/").find(peek()) == std::string_view::npos)
      next();
    if (pos_ == start) throw Malformed{};
  }

  void record(const std::string& path, int line) {
    auto [it, inserted] = lines_.emplace(path, line);
    if (!inserted) {
      duplicates_.push_back({path, it->second, line});
      it->second = line;  // the parser keeps the last value, so point at it
    }
  }

  void member(const std::string& parent, int depth) {
    int key_line = line_;
    std::string path = child_path(parent, string());
    record(path, key_line);
    skip_space();
    expect(':');
    skip_space();
    value(path, depth + 1);
  }

  void object(const std::string& path, int depth) {
    expect('{');
    skip_space();
    if (peek() == '}') return (void)next();
    for (;;) {
      member(path, depth);
      skip_space();
      char c = next();
      if (c == '}') return;
      if (c != ',') throw Malformed{};
      skip_space();
    }
  }

  void array(const std::string& path, int depth) {
    expect('[');
    skip_space();
    if (peek() == ']') return (void)next();
    for (size_t index = 0;; ++index) {
      std::string element = element_path(path, index);
      record(element, line_);
      value(element, depth + 1);
      skip_space();
      char c = next();
      if (c == ']') return;
      if (c != ',') throw Malformed{};
      skip_space();
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  std::map<std::string, int, std::less<>>& lines_;
  std::vector<JsonSourceMap::Duplicate>& duplicates_;
};

}  // namespace

TextPosition position_at(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  TextPosition position;
  std::string_view before = text.substr(0, offset);
  position.line += static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  size_t line_start = before.rfind('\n');
  line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
  position.column = static_cast<int>(offset - line_start) + 1;
  return position;
}

std::string child_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

std::string element_path(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string parent_path(std::string_view path) {
  if (!path.empty() && path.back() == ']') {
    size_t open = path.rfind('[');
    return std::string(path.substr(0, open == std::string_view::npos ? 0 : open));
  }
  size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? "" : std::string(path.substr(0, dot));
}

JsonSourceMap JsonSourceMap::scan(std::string_view text) {
  JsonSourceMap map;
  JsonScanner scanner(text, map.lines_, map.duplicates_);
  try {
    scanner.scan_root();
  } catch (const Malformed&) {
    // Keep the partial map: the lines found before the fault are still right.
  }
  return map;
}

int JsonSourceMap::line_of(std::string_view path) const {
  auto it = lines_.find(path);
  return it == lines_.end() ? 0 : it->second;
}

int JsonSourceMap::nearest_line(std::string_view path) const {
  std::string current(path);
  for (;;) {
    if (int line = line_of(current)) return line;
    if (current.empty()) return 0;
    current = parent_path(current);
  }
}

}  // namespace perfgate
