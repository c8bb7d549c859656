// `perfgate run` and `perfgate validate`.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "perfgate/cli/command.h"
#include "perfgate/core/exit_status.h"
#include "perfgate/core/printable.h"
#include "perfgate/gate/gate.h"

namespace perfgate {

void add_gate_options(CLI::App* command, const std::shared_ptr<RunOptions>& opt) {
  command->add_option("--store", opt->store_path, "Baseline store (SQLite)")->capture_default_str();
  command->add_option("--junit", opt->junit_path, "Write a JUnit XML report here");
  command->add_option("--json", opt->json_path, "Write the JSON result here");
  command->add_option("--summary", opt->summary_path,
                      "Write a Markdown summary here (default: $GITHUB_STEP_SUMMARY when set)");
  command->add_option("--gitlab-load-performance", opt->gitlab_load_performance_path,
                      "Write the k6-shaped summary GitLab's merge request widget reads");
  command->add_option("--openmetrics", opt->openmetrics_path,
                      "Write the metrics in OpenMetrics text (GitLab artifacts:reports:metrics)");
  command->add_option("--commit", opt->ci.commit,
                      "Commit SHA (default: GITHUB_SHA / CI_COMMIT_SHA)");
  command->add_option("--branch", opt->ci.branch,
                      "Branch of this run (default: from CI variables)");
  command->add_option(
      "--baseline-branch", opt->ci.baseline_branch,
      "Branch whose runs are the baseline (default: PR/MR target, else default branch)");
  command
      ->add_option_function<int64_t>(
          "--baseline-run", [opt](int64_t id) { opt->baseline_run = id; },
          "Judge against this stored run alone (see perfgate history)")
      ->check(whole_number_from(1));
  command->add_flag("--any-host", opt->any_host,
                    "Take baselines from runs on any load machine, not only matching ones");
  command->add_flag("--any-placement", opt->any_placement,
                    "Take baselines from runs whose load and service shared CPUs otherwise "
                    "(apart / mixed), not only from runs of this run's placement class");
  // A callback, not CLI11's "!" negation, which --help showed as "--no-record{false}".
  command->add_flag_callback(
      "--no-record", [opt] { opt->record = false; }, "Judge without storing this run");
  command
      ->add_option_function<std::string>(
          "--no-baseline",
          [opt](const std::string& v) { opt->pass_without_baseline = v == "pass"; },
          "A pull/merge request run with no comparable baseline: warn (exit 2, the default) "
          "or pass")
      ->check(CLI::IsMember({"warn", "pass"}));
}

void register_run_command(CommandSet& commands) {
  auto opt = std::make_shared<RunOptions>();
  auto* run = commands.app().add_subcommand(
      "run", "Run a profile, judge it against the baseline, store it, report");
  run->add_option("profile", opt->profile_path,
                  "Profile file (JSON with comments), or recipe:NAME (perfgate recipe)")
      ->required();
  add_gate_options(run, opt);
  auto shard = std::make_shared<std::string>();
  run->add_option("--shard", *shard,
                  "Run shard I of N (\"2/3\"): this machine's share of the connections or rate, "
                  "written with --json for perfgate merge; not judged, not stored");
  run->add_option("--start-at", opt->start_at,
                  "Begin the warm-up at this UTC time (2026-11-30T06:30:00Z or Unix seconds), "
                  "so that shards on several machines overlap");
  commands.add(run, [opt, shard](const CommandContext& ctx) {
    if (!shard->empty()) opt->shard = parse_shard_spec(*shard);
    return to_int(run_gate(*opt, ctx.env, std::cout, ctx.stop));
  });
}

void register_validate_command(CommandSet& commands) {
  auto path = std::make_shared<std::filesystem::path>();
  auto* validate = commands.app().add_subcommand("validate", "Check a profile and print its hash");
  validate->add_option("profile", *path, "Profile file, or recipe:NAME")->required();
  commands.add(validate, [path](const CommandContext& ctx) {
    auto profile = load_profile(*path, ctx.env);
    // Escaped: a path or name holding "\n::error::" would forge a workflow command.
    std::cout << printable(path->string()) << ": ok (profile \"" << printable(profile.name)
              << "\", hash " << profile.hash.substr(0, 12) << ", " << profile.repeat.count << " x "
              << format_duration(profile.load.duration) << ", " << profile.load.connections
              << " connections)\n";
    // Valid, and yet no gate: said, and exit 2 (a warn), so a pipeline notices.
    auto never = never_fails(profile);
    for (const auto& why : never) std::cout << "warning: " << printable(why) << "\n";
    return never.empty() ? 0 : to_int(ExitStatus::kWarn);
  });
}

}  // namespace perfgate
