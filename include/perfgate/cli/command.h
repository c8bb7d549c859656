#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "perfgate/profile/profile.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace perfgate {

/// A flag's check: a whole number of at least `least`, refused in words ("must be
/// 0 or more, got -5"). CLI11's NonNegativeNumber printed its range, whose upper
/// end is the 309 digits of the largest double, and an id past int64 became
/// another id (issue 41, item 20).
CLI::Validator whole_number_from(long long least);

/// What every subcommand may use besides its own flags.
struct CommandContext {
  EnvLookup env;                  // the process environment, ${PERFGATE} included
  const std::atomic<bool>& stop;  // set by SIGINT/SIGTERM: stop the load, clean up
};

/// A subcommand's body, run after the command line parsed; returns the exit code
/// or throws Error (the CLI prints it as one line and exits 3).
using CommandAction = std::function<int(const CommandContext&)>;

/// The subcommands. One module per command registers itself here (like git's
/// builtins), so a new command is a new file and one line in cli.cc.
class CommandSet {
 public:
  explicit CommandSet(CLI::App& app) : app_(app) {}
  CLI::App& app() { return app_; }
  void add(CLI::App* subcommand, CommandAction action);
  /// Runs the subcommand the command line named.
  int run_selected(const CommandContext& context) const;

 private:
  CLI::App& app_;
  std::vector<std::pair<CLI::App*, CommandAction>> commands_;
};

void register_run_command(CommandSet& commands);
void register_validate_command(CommandSet& commands);
void register_recipe_command(CommandSet& commands);
void register_bench_command(CommandSet& commands);
void register_demo_server_command(CommandSet& commands);
void register_doctor_command(CommandSet& commands);     // doctor_command.cc
void register_store_command(CommandSet& commands);      // store_command.cc: store check/export/...
void register_report_command(CommandSet& commands);     // report_command.cc: report, export
void register_history_command(CommandSet& commands);    // history, compare, accept, reject
void register_calibrate_command(CommandSet& commands);  // calibrate_command.cc
void register_merge_command(CommandSet& commands);      // merge_command.cc: shards into one run
void register_comment_command(CommandSet& commands);    // comment_command.cc: sticky PR/MR comment

struct RunOptions;
/// The flags `run` and `merge` share: store, report files, CI context, baseline
/// choice, --no-record (run_command.cc).
void add_gate_options(CLI::App* command, const std::shared_ptr<RunOptions>& options);

/// Parses a duration flag; throws Error("-d: must be a duration like \"10s\", got ...").
Nanos duration_flag(const std::string& flag, const std::string& text);

}  // namespace perfgate
