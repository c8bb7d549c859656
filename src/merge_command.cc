// `perfgate merge SHARD.json...`: the shards of one run, added exactly and
// gated like a run of one machine (issue 8).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "perfgate/command.h"
#include "perfgate/gate.h"

namespace perfgate {

void register_merge_command(CommandSet& commands) {
  auto opt = std::make_shared<RunOptions>();
  auto paths = std::make_shared<std::vector<std::filesystem::path>>();
  auto* merge = commands.app().add_subcommand(
      "merge", "Add the results of run --shard I/N and judge, store and report them as one run");
  merge->add_option("shards", *paths, "The shards' JSON results (run --shard I/N --json P)")
      ->required();
  merge->add_option("--store", opt->store_path, "Baseline store (SQLite)")->capture_default_str();
  merge->add_option("--junit", opt->junit_path, "Write a JUnit XML report here");
  merge->add_option("--json", opt->json_path, "Write the JSON result here");
  merge->add_option("--summary", opt->summary_path,
                    "Write a Markdown summary here (default: $GITHUB_STEP_SUMMARY when set)");
  merge->add_option("--gitlab-load-performance", opt->gitlab_load_performance_path,
                    "Write the k6-shaped summary GitLab's merge request widget reads");
  merge->add_option("--openmetrics", opt->openmetrics_path,
                    "Write the metrics in OpenMetrics text (GitLab artifacts:reports:metrics)");
  merge->add_option("--commit", opt->ci.commit,
                    "Commit SHA (default: GITHUB_SHA / CI_COMMIT_SHA, else the shards')");
  merge->add_option("--branch", opt->ci.branch, "Branch of this run (default: from CI variables)");
  merge->add_option(
      "--baseline-branch", opt->ci.baseline_branch,
      "Branch whose runs are the baseline (default: PR/MR target, else default branch)");
  merge
      ->add_option_function<int64_t>(
          "--baseline-run", [opt](int64_t id) { opt->baseline_run = id; },
          "Judge against this stored run alone (see perfgate history)")
      ->check(CLI::PositiveNumber);
  merge->add_flag("--any-host", opt->any_host,
                  "Take baselines from runs on any load machines, not only matching ones");
  merge->add_flag("!--no-record", opt->record, "Judge without storing the merged run");
  commands.add(merge, [opt, paths](const CommandContext& ctx) {
    return to_int(merge_gate(*opt, *paths, ctx.env, std::cout));
  });
}

}  // namespace perfgate
