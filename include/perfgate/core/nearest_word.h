#pragma once

// "Did you mean": the one spelling rule shared by the profile's keys and the
// command line's commands, so that a typo gets the same help everywhere.

#include <optional>
#include <span>
#include <string_view>

namespace perfgate {

/// Levenshtein distance: insertions, deletions and substitutions, each 1.
size_t edit_distance(std::string_view a, std::string_view b);

/// The known word nearest to `word`, when it is near enough to be a typo of it
/// (at most 2 edits, or a third of the word): past that a suggestion is a guess.
std::optional<std::string_view> nearest_word(std::string_view word,
                                             std::span<const std::string_view> known);

}  // namespace perfgate
