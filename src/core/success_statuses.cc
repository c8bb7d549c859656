#include "perfgate/core/success_statuses.h"

#include <algorithm>
#include <cctype>

namespace perfgate {
namespace {

constexpr int kLowest = 200;  // 1xx is never a final answer
constexpr int kHighest = 599;

std::optional<int> code_of(std::string_view text) {
  if (text.size() != 3 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::nullopt;
  int code = (text[0] - '0') * 100 + (text[1] - '0') * 10 + (text[2] - '0');
  if (code < kLowest || code > kHighest) return std::nullopt;
  return code;
}

}  // namespace

bool SuccessStatuses::contains(int status) const {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const auto& r) { return status >= r.first && status <= r.second; });
}

bool SuccessStatuses::default_success(int status) {
  return status >= 200 && status <= 399;
}

std::optional<std::pair<int, int>> SuccessStatuses::parse_term(std::string_view term,
                                                               std::string& why) {
  why =
      "must be a status code like \"404\", a class like \"2xx\" or a range like \"200-299\", "
      "from 200 to 599 (1xx is never a final answer)";
  if (term.size() == 3 && (term[1] == 'x' || term[1] == 'X') &&
      (term[2] == 'x' || term[2] == 'X') && term[0] >= '2' && term[0] <= '5') {
    int first = (term[0] - '0') * 100;
    return std::pair{first, first + 99};
  }
  size_t dash = term.find('-');
  auto first = code_of(term.substr(0, dash));
  auto last = dash == std::string_view::npos ? first : code_of(term.substr(dash + 1));
  if (!first || !last) return std::nullopt;
  if (*first > *last) {
    why = "is a range whose first code is above its last";
    return std::nullopt;
  }
  return std::pair{*first, *last};
}

}  // namespace perfgate
