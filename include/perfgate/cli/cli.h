#pragma once

namespace perfgate {

/// Parses the command line, runs the subcommand and returns the process exit
/// code. The only place that turns an Error into one stderr line and exit 3.
int run_cli(int argc, char** argv);

/// Parses the command line as run_cli() does and runs nothing: 0 when a command
/// would run, else run_cli()'s exit code (a parse error, --help). For fuzzing.
int parse_cli(int argc, char** argv);

}  // namespace perfgate
