#include "perfgate/core/nearest_word.h"

#include <algorithm>
#include <vector>

namespace perfgate {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
    }
  }
  return row[b.size()];
}

std::optional<std::string_view> nearest_word(std::string_view word,
                                             std::span<const std::string_view> known) {
  auto nearest = std::min_element(known.begin(), known.end(), [&](auto a, auto b) {
    return edit_distance(word, a) < edit_distance(word, b);
  });
  if (nearest == known.end() ||
      edit_distance(word, *nearest) > std::max<size_t>(2, word.size() / 3))
    return std::nullopt;
  return *nearest;
}

}  // namespace perfgate
