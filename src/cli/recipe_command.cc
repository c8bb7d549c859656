// `perfgate recipe [NAME]`: the CI recipes' profiles compiled into this binary,
// listed, or one printed to copy and adapt (its request, its limits).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "perfgate/cli/command.h"
#include "perfgate/core/error.h"
#include "perfgate/profile/profile_recipe.h"

namespace perfgate {

void register_recipe_command(CommandSet& commands) {
  auto name = std::make_shared<std::string>();
  auto* recipe = commands.app().add_subcommand(
      "recipe", "Print a CI recipe's profile (run it as recipe:NAME), or list them without NAME");
  recipe->add_option("name", *name, "Recipe: " + recipe_names());
  commands.add(recipe, [name](const CommandContext&) {
    if (name->empty()) {
      for (const auto& r : profile_recipes()) std::cout << kRecipePrefix << r.name << "\n";
      return 0;
    }
    auto found = find_recipe(*name);
    if (!found) throw Error("recipe " + *name + ": no such recipe; perfgate has " + recipe_names());
    std::cout << found->text;
    return 0;
  });
}

}  // namespace perfgate
