#include "perfgate/profile/profile_recipe.h"

namespace perfgate {

std::optional<ProfileRecipe> find_recipe(std::string_view name) {
  for (const auto& recipe : profile_recipes())
    if (recipe.name == name) return recipe;
  return std::nullopt;
}

std::string recipe_names() {
  std::string names;
  for (const auto& recipe : profile_recipes())
    names += (names.empty() ? "" : ", ") + std::string(recipe.name);
  return names;
}

}  // namespace perfgate
