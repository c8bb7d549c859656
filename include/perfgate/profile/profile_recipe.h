#pragma once

// The CI recipes' profiles (ci/profiles/pr-paired.json, default-branch.json),
// compiled into the binary: `perfgate run recipe:pr-paired` works wherever
// perfgate does (the .deb, the image, a build folder), in step with its version,
// so a pipeline that includes a template needs no copy of them.

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace perfgate {

struct ProfileRecipe {
  std::string_view name;  // "pr-paired"
  std::string_view text;  // the file, comments and all
};

/// What a profile argument names a recipe with: "recipe:pr-paired".
inline constexpr std::string_view kRecipePrefix = "recipe:";

std::span<const ProfileRecipe> profile_recipes();

/// The recipe `name` ("pr-paired", no prefix), or nullopt.
std::optional<ProfileRecipe> find_recipe(std::string_view name);

/// "default-branch, pr-paired": for error lines and --help.
std::string recipe_names();

}  // namespace perfgate
