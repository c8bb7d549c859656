#pragma once

// Internal to the profile stage: the bounds a profile's text must keep before
// anything recursive or allocating looks at it.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "perfgate/profile/profile.h"

namespace perfgate::profile_detail {

/// A profile is a page of JSON; 16 MiB is far past any real one and keeps a
/// wrong file (`validate /dev/urandom`) from filling the memory.
constexpr size_t kMaxProfileBytes = 16 * 1024 * 1024;
/// Real profiles nest four or five levels; the parser and the readers recurse.
constexpr int kMaxNesting = 64;
/// The keys of any one object. The parser keeps a profile's key order, at a
/// cost that grows with the square of an object's keys (80,000 took 16.7 s);
/// real profiles have tens.
constexpr int kMaxObjectKeys = 10'000;
/// What all `${...}` of one profile may expand to, together.
constexpr size_t kMaxExpandedBytes = 64 * 1024 * 1024;

/// The first bound the text breaks (size, nesting), with where; nullopt when none.
std::optional<ProfileProblem> text_limit_problem(std::string_view text);

/// nlohmann's out_of_range for a number like 1e309, in the user's words and
/// with the number's line when it can be found in the text.
ProfileProblem number_range_problem(std::string_view text, const std::string& what);

}  // namespace perfgate::profile_detail
