#include "perfgate/cli/cli.h"

#include <curl/curl.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <system_error>

#include "perfgate/cli/command.h"
#include "perfgate/core/checked.h"
#include "perfgate/core/exit_status.h"
#include "perfgate/core/nearest_word.h"
#include "perfgate/core/printable.h"
#include "perfgate/core/stop_signal.h"
#include "perfgate/report/github_annotations.h"
#include "perfgate/store/store_lock.h"

#include "printable_output.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

void on_stop_signal(int) {
  stop_requested() = true;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // Past `ulimit -f` a write fails with EFBIG and the error says so, where
  // SIGXFSZ's default ended the command without a word (issue 41, item 20).
  signal(SIGXFSZ, SIG_IGN);
}

// Under `ulimit -s 64` a nested profile crashed validate, and every thread
// perfgate starts gets a stack of the same size (issue 41, item 16). The
// usual default is 8 MiB; below this, one line says which limit to raise.
constexpr rlim_t kLeastStackBytes = 256 * 1024;

void check_stack_limit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      limit.rlim_cur >= kLeastStackBytes)
    return;
  throw Error("the stack limit is " + std::to_string(limit.rlim_cur / 1024) +
              " KiB (ulimit -s); perfgate needs at least " +
              std::to_string(kLeastStackBytes / 1024) + " KiB (8192 is the usual default)");
}

// Under `ulimit -v` a thread's stack cannot be mapped, and std::thread said only
// "Resource temporarily unavailable" (issue 41, item 20): the line names the
// limit a user can change. "" when no address-space limit is set.
std::string address_space_limit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "";
  return "the address-space limit (ulimit -v) is " + std::to_string(limit.rlim_cur / 1024) +
         " KiB, too little for perfgate's threads and buffers; raise or lift it";
}

std::string system_error_line(const std::system_error& e) {
  int code = e.code().value();
  bool resources = (e.code().category() == std::generic_category() ||
                    e.code().category() == std::system_category()) &&
                   (code == EAGAIN || code == ENOMEM);
  if (!resources) return e.what();
  auto limit = address_space_limit();
  return "cannot start a thread or map memory (" + std::string(e.what()) + "): " +
         (limit.empty() ? "the machine is out of memory or of processes (ulimit -u)" : limit);
}

// On GitHub Actions the error also becomes an annotation on the checks page:
// the line on stderr is easy to miss in a long log.
void annotate_error(const std::string& message) {
  if (process_environment()("GITHUB_ACTIONS") == "true")
    std::cout << github_command("error", "perfgate error", message) << std::flush;
}

// A report cut short by a full disk or a closed pipe must not pass for a whole
// one: every command's stdout is flushed and checked here, once, at its end.
void check_stdout_written(const PrintableOutput& printable_stdout) {
  std::cout.flush();
  errno = 0;
  bool flushed = std::fflush(stdout) == 0;
  int why = printable_stdout.write_error();  // the first failure's errno: the telling one
  if (!why && flushed && !std::ferror(stdout) && std::cout) return;
  if (!why) why = errno;
  throw Error(std::string("cannot write to stdout: ") +
              (why ? std::strerror(why) : "the output was cut short") +
              "; what was printed is incomplete");
}

// ${PERFGATE} in a profile is this very binary, so the demo profile can start
// `perfgate demo-server` without anything installed on the PATH.
EnvLookup cli_environment() {
  auto process = process_environment();
  return [process](std::string_view name) -> std::optional<std::string> {
    auto value = process(name);
    if (value || name != "PERFGATE") return value;
    std::error_code ec;
    auto self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return std::nullopt;
    return self.string();
  };
}

void setup_logging(const std::string& level, bool quiet) {
  auto logger = spdlog::stderr_color_mt("perfgate");
  spdlog::set_default_logger(logger);
  use_printable_log_pattern();
  spdlog::set_level(quiet ? spdlog::level::warn : spdlog::level::from_str(level));
}

// The build's `git describe` when built from a checkout (set by CMake at
// configure time); the libraries are the ones loaded now, not the headers'.
std::string version_text() {
  std::string text = std::string("perfgate ") + PERFGATE_VERSION;
#ifdef PERFGATE_GIT_DESCRIBE
  if (*PERFGATE_GIT_DESCRIBE) text += std::string(" (git ") + PERFGATE_GIT_DESCRIBE + ")";
#endif
  return text + "\nlibcurl " + curl_version_info(CURLVERSION_NOW)->version + ", SQLite " +
         sqlite3_libversion();
}

}  // namespace

void CommandSet::add(CLI::App* subcommand, CommandAction action) {
  commands_.emplace_back(subcommand, std::move(action));
}

int CommandSet::run_selected(const CommandContext& context) const {
  for (const auto& [subcommand, action] : commands_)
    if (subcommand->parsed()) return action(context);
  throw Error("no command given (see --help)");
}

Nanos duration_flag(const std::string& flag, const std::string& text) {
  auto d = parse_duration(text);
  if (!d || d->count() <= 0)
    throw Error(flag +
                (is_overlong_duration(text) ? ": is too long a duration (at most " +
                                                  std::string(kLongestDurationWords) + ")"
                                            : std::string(": must be a duration like \"10s\"")) +
                ", got \"" + text + "\"");
  return *d;
}

namespace {

// --lock-wait 0 is "do not wait" (issue 50, item 15: it was refused while
// 0.5 was taken).
Nanos lock_wait_flag(const std::string& text) {
  if (auto d = parse_duration(text); d && d->count() == 0) return *d;
  return duration_flag("--lock-wait", text);
}

}  // namespace

CLI::Validator whole_number_from(long long least) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        long long value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc::result_out_of_range)
          return "is too large a number (at most 9223372036854775807), got " + printable(text);
        if (ec != std::errc() || end != text.data() + text.size())
          return "must be a whole number, got \"" + printable(text) + "\"";
        if (value < least) return "must be " + std::to_string(least) + " or more, got " + text;
        return "";
      },
      least > 0 ? "POSITIVE" : "NONNEGATIVE");
}

namespace {

/// The whole command line, registered: the app, its commands and global options.
struct CommandLine {
  // Named, so that usage lines say "perfgate", not the path it was started by.
  CLI::App app{"perfgate: a performance gate for CI pipelines", "perfgate"};
  CommandSet commands{app};
  std::string log_level = "info";
  std::string lock_wait;
  bool quiet = false;

  CommandLine() {
    app.set_version_flag("--version", version_text());
    app.require_subcommand(1);
    // `perfgate run P --log-level debug` as well as `perfgate --log-level debug run P`.
    app.fallthrough();
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
        ->capture_default_str()
        ->check(CLI::Validator(
            [](std::string& level) -> std::string {
              for (const char* known : {"trace", "debug", "info", "warn", "error", "off"})
                if (level == known) return "";
              return "must be one of trace, debug, info, warn, error, off; got \"" + level + "\"";
            },
            "LEVEL"));
    app.add_flag("-q,--quiet", quiet, "Only warnings and errors on stderr");
    app.add_option(
        "--lock-wait", lock_wait,
        "How long to wait in all for a store another process has locked (default 30s; 0: "
        "not at all)");
    register_run_command(commands);
    register_bench_command(commands);
    register_validate_command(commands);
    register_recipe_command(commands);
    register_demo_server_command(commands);
    register_doctor_command(commands);
    register_store_command(commands);
    register_report_command(commands);
    register_history_command(commands);
    register_calibrate_command(commands);
    register_merge_command(commands);
    register_comment_command(commands);
    add_examples();
  }

  /// Each command's --help ends with examples and where the docs say more: a
  /// newcomer met option lists alone.
  void add_examples() {
    const std::pair<const char*, const char*> examples[] = {
        {"run",
         "  perfgate run recipe:hello-paired         the demo: two builds in turns, decided\n"
         "  perfgate run profile.json --junit out/junit.xml --json out/result.json\n"
         "  perfgate run profile.json --no-record    judge without storing\n"
         "Docs: README.md (\"Gate your own service\"), docs/profile.md, docs/ci.md"},
        {"bench", "  perfgate bench http://127.0.0.1:8080/ -t 2 -c 50 -d 10s --latency"},
        {"validate",
         "  perfgate validate profile.json           check it and print its hash\n"
         "Docs: docs/profile.md"},
        {"recipe",
         "  perfgate recipe                          list the CI recipes\n"
         "  perfgate run recipe:pr-paired            run one (docs/ci.md)"},
        {"doctor",
         "  perfgate doctor profile.json             check this machine for that profile"},
        {"store",
         "  perfgate store check\n"
         "  perfgate store prune --policy --max-size 50MB"},
        {"report", "  perfgate report --html out/report.html"},
        {"export", "  perfgate export --output benchmark.json"},
        {"history",
         "  perfgate history --limit 10\n"
         "  perfgate history --json --profile hello"},
        {"compare", "  perfgate compare 42                      judge run 42 again (see history)"},
        {"accept", "  perfgate accept latest --reason \"intended: new feature\""},
        {"reject", "  perfgate reject 42 --reason \"a noisy runner\""},
        {"calibrate",
         "  perfgate calibrate profile.json --runs 6  A/A runs: the noise, and limits "
         "it allows\n"
         "Docs: docs/statistics.md"},
        {"merge",
         "  perfgate merge shard-1.json shard-2.json --expect 2\n"
         "Docs: docs/ci.md (shards)"},
        {"comment", "  perfgate comment out/summary.md --key hello"},
        {"demo-server",
         "  perfgate demo-server --port 8080 --delay 2ms\n"
         "                                           a service that waits 2 ms "
         "a request"},
    };
    for (const auto& [name, text] : examples)
      for (CLI::App* sub : app.get_subcommands([&](CLI::App* s) { return s->get_name() == name; }))
        sub->footer(std::string("\nExamples:\n") + text);
    app.footer(
        "\nExamples:\n"
        "  perfgate run recipe:hello-paired         the demo, decided in under a minute\n"
        "  perfgate COMMAND --help                  a command's options and examples\n"
        "Docs: README.md, docs/profile.md, docs/ci.md");
  }

  /// The first argument that looks like an option and that neither the app nor
  /// any command it names knows, up to a "--".
  std::optional<std::string> unknown_option(int argc, char** argv) const {
    std::vector<const CLI::App*> scopes = {&app};
    for (int i = 1; i < argc; ++i) {
      std::string word = argv[i];
      auto named = scopes.back()->get_subcommands(
          [&](const CLI::App* sub) { return sub->check_name(word); });
      if (!named.empty()) scopes.push_back(named.front());
    }
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--") break;
      if (arg.size() < 2 || arg[0] != '-' || std::isdigit(static_cast<unsigned char>(arg[1])))
        continue;
      std::string name = arg.substr(0, arg.find('='));
      if (name.size() > 2 && name[1] != '-') name = name.substr(0, 2);  // -n10
      bool known = false;
      for (const CLI::App* scope : scopes) known = known || scope->get_option_no_throw(name);
      if (!known) return arg.substr(0, arg.find('='));
    }
    return std::nullopt;
  }

  /// "unknown command ..." when the word where a command belongs names none
  /// (`perfgate rnu`), with the nearest command's name when it looks like a typo
  /// of one; nullopt when a command is named or none is given.
  std::optional<std::string> unknown_command(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      std::string word = argv[i];
      if (word == "--") return std::nullopt;
      if (word.size() > 1 && word[0] == '-') {
        // A global option's value is the next word unless given with "=".
        auto option = app.get_option_no_throw(word.substr(0, word.find('=')));
        if (option && option->get_expected_min() > 0 && word.find('=') == std::string::npos) ++i;
        continue;
      }
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->check_name(word)) return std::nullopt;
        names.push_back(sub->get_name());
      }
      std::vector<std::string_view> known(names.begin(), names.end());
      auto nearest = nearest_word(word, known);
      return "unknown command \"" + printable(word) + "\"" +
             (nearest ? "; did you mean \"" + std::string(*nearest) + "\"?" : std::string()) +
             " (perfgate --help lists the commands)";
    }
    return std::nullopt;
  }

  /// nullopt when parsed and a command should run; else the exit code.
  std::optional<int> parse(int argc, char** argv) {
    try {
      app.parse(argc, argv);
      return std::nullopt;
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);
      // CLI11 reports a missing argument before an unknown option: `validate
      // --help-me` said "profile is required". The typo is the telling error.
      std::string what = e.what();
      if (auto unknown = unknown_command(argc, argv)) {
        std::cerr << "perfgate: error: " << *unknown << "\n";
        return to_int(ExitStatus::kError);
      }
      if (dynamic_cast<const CLI::RequiredError*>(&e))
        if (auto unknown = unknown_option(argc, argv)) what = "unknown option " + *unknown;
      std::cerr << "perfgate: error: " << printable(what) << " (see --help)\n";
      return to_int(ExitStatus::kError);
    }
  }
};

}  // namespace

int parse_cli(int argc, char** argv) {
  CommandLine cli;
  return cli.parse(argc, argv).value_or(0);
}

int run_cli(int argc, char** argv) {
  CommandLine cli;
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  PrintableOutput printable_stdout(std::cout);
  try {
    setup_logging(cli.log_level, cli.quiet);
    check_stack_limit();
    if (!cli.lock_wait.empty())
      set_store_lock_wait(
          std::chrono::duration_cast<std::chrono::milliseconds>(lock_wait_flag(cli.lock_wait)));
    install_stop_handlers();
    int exit_code = cli.commands.run_selected({cli_environment(), stop_requested()});
    check_stdout_written(printable_stdout);
    return exit_code;
  } catch (const ProfileError& e) {
    // Names, URLs and values in error lines come from the user: printed as they are,
    // an ESC or NUL in them would reach the terminal.
    std::string all;
    for (const auto& line : e.lines()) {
      std::cerr << "perfgate: error: " << printable(line) << "\n";
      all += (all.empty() ? "" : "\n") + line;
    }
    annotate_error(all);
  } catch (const std::bad_alloc&) {
    // "std::bad_alloc" says nothing to a user; what they can change is the
    // size of what they asked for, or the limit they set.
    auto limit = address_space_limit();
    std::string what =
        "out of memory: " +
        (limit.empty() ? std::string("the run needs more than this machine can give (fewer "
                                     "connections, a smaller mix or body?)")
                       : limit);
    std::cerr << "perfgate: error: " << what << "\n";
    annotate_error(what);
  } catch (const std::system_error& e) {
    auto what = system_error_line(e);
    std::cerr << "perfgate: error: " << printable(what) << "\n";
    annotate_error(what);
  } catch (const std::exception& e) {
    std::cerr << "perfgate: error: " << printable(e.what()) << "\n";
    annotate_error(e.what());
  }
  return to_int(ExitStatus::kError);
}

}  // namespace perfgate
