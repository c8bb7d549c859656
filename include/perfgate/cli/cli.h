#pragma once

namespace perfgate {

/// Parses the command line, runs the subcommand and returns the process exit
/// code. The only place that turns an Error into one stderr line and exit 3.
int run_cli(int argc, char** argv);

}  // namespace perfgate
