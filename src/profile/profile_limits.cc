#include "profile_limits.h"

#include <vector>

#include "perfgate/profile/json_source_map.h"

namespace perfgate::profile_detail {
namespace {

ProfileProblem problem_at(std::string_view text, size_t offset, std::string message) {
  TextPosition at = position_at(text, offset);
  return {at.line, "", std::move(message), at.column};
}

/// Skips a string or comment starting at `i`; returns the offset after it.
size_t skip_literal(std::string_view text, size_t i) {
  if (text[i] == '"') {
    for (++i; i < text.size() && text[i] != '"'; ++i)
      if (text[i] == '\\') ++i;
    return i + 1;
  }
  if (text.substr(i, 2) == "//") {
    size_t end = text.find('\n', i);
    return end == std::string_view::npos ? text.size() : end;
  }
  size_t end = text.find("*/", i + 2);
  return end == std::string_view::npos ? text.size() : end + 2;
}

bool starts_literal(std::string_view text, size_t i) {
  return text[i] == '"' || text.substr(i, 2) == "//" || text.substr(i, 2) == "/*";
}

}  // namespace

std::optional<ProfileProblem> text_limit_problem(std::string_view text) {
  if (text.size() > kMaxProfileBytes)
    return ProfileProblem{0, "",
                          "is larger than 16 MiB; a profile is a page of JSON (is this the "
                          "right file?)"};
  int depth = 0;
  // Per open bracket: the keys of an object so far, -1 for an array. Each ':'
  // outside a string is one key of the innermost object.
  std::vector<int> keys;
  for (size_t i = 0; i < text.size();) {
    if (starts_literal(text, i)) {
      i = skip_literal(text, i);
      continue;
    }
    if (text[i] == '[' || text[i] == '{') {
      if (++depth > kMaxNesting)
        return problem_at(text, i,
                          "nested deeper than " + std::to_string(kMaxNesting) +
                              " levels; a profile needs a handful");
      keys.push_back(text[i] == '{' ? 0 : -1);
    } else if (text[i] == ']' || text[i] == '}') {
      --depth;
      if (!keys.empty()) keys.pop_back();
    } else if (text[i] == ':' && !keys.empty() && keys.back() >= 0 &&
               ++keys.back() > kMaxObjectKeys) {
      return problem_at(text, i,
                        "an object holds more than " + std::to_string(kMaxObjectKeys) +
                            " keys, the most a profile's object may hold (is this the right "
                            "file?)");
    }
    ++i;
  }
  return std::nullopt;
}

ProfileProblem number_range_problem(std::string_view text, const std::string& what) {
  // "[json.exception.out_of_range.406] number overflow parsing '1e309'"
  size_t open = what.find('\'');
  size_t close = open == std::string::npos ? open : what.find('\'', open + 1);
  if (close == std::string::npos) return {0, "", "a number is out of range"};
  std::string number = what.substr(open + 1, close - open - 1);
  std::string message =
      "number " + number + " is out of range (at most about 1.8e308, and integers fit 64 bits)";
  // The first occurrence outside a string is the one the parser stopped at.
  for (size_t i = 0; i < text.size();) {
    if (starts_literal(text, i)) {
      i = skip_literal(text, i);
    } else if (text.substr(i, number.size()) == number) {
      return problem_at(text, i, message);
    } else {
      ++i;
    }
  }
  return {0, "", message};
}

}  // namespace perfgate::profile_detail
