// `perfgate merge SHARD.json...`: the shards of one run, added exactly and
// gated like a run of one machine.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "perfgate/cli/command.h"
#include "perfgate/cli/gate.h"

namespace perfgate {

void register_merge_command(CommandSet& commands) {
  auto opt = std::make_shared<RunOptions>();
  auto paths = std::make_shared<std::vector<std::filesystem::path>>();
  auto* merge = commands.app().add_subcommand(
      "merge", "Add the results of run --shard I/N and judge, store and report them as one run");
  merge->add_option("shards", *paths, "The shards' JSON results (run --shard I/N --json P)")
      ->required();
  add_gate_options(merge, opt);  // the same reports and baseline choice as run
  commands.add(merge, [opt, paths](const CommandContext& ctx) {
    return to_int(merge_gate(*opt, *paths, ctx.env, std::cout));
  });
}

}  // namespace perfgate
