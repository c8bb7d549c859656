#include "perfgate/cli.h"

#include <curl/curl.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "perfgate/bench_report.h"
#include "perfgate/demo_server.h"
#include "perfgate/gate.h"
#include "perfgate/json_report.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

// The one piece of process-wide state: a signal handler can reach nothing else.
std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

void on_stop_signal(int) {
  stop_requested() = true;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
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
  logger->set_pattern("%^[%H:%M:%S] %v%$");
  spdlog::set_default_logger(logger);
  spdlog::set_level(quiet ? spdlog::level::warn : spdlog::level::from_str(level));
}

Nanos duration_option(const std::string& flag, const std::string& text) {
  auto d = parse_duration(text);
  if (!d || d->count() <= 0)
    throw Error(flag + ": must be a duration like \"10s\", got \"" + text + "\"");
  return *d;
}

struct BenchArgs {
  std::string url;
  int threads = 2;
  int connections = 10;
  std::string duration = "10s";
  std::string timeout = "5s";
  double rate = 0;
  bool latency = false;
  std::string json_path;
  std::vector<std::string> headers;
};

TargetSpec bench_target(const BenchArgs& args) {
  TargetSpec target;
  target.url = args.url;
  for (const auto& header : args.headers) {
    auto colon = header.find(':');
    if (colon == std::string::npos)
      throw Error("-H: expected \"Name: value\", got \"" + header + "\"");
    auto value = header.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    target.headers.emplace_back(header.substr(0, colon), value);
  }
  return target;
}

int run_bench(const BenchArgs& args) {
  if (args.threads < 1 || args.connections < args.threads)
    throw Error("-c: connections (" + std::to_string(args.connections) +
                ") must be at least the threads (" + std::to_string(args.threads) + ")");
  LoadPlan plan;
  plan.target = bench_target(args);
  plan.threads = args.threads;
  plan.connections = args.connections;
  plan.duration = duration_option("-d", args.duration);
  plan.timeout = duration_option("--timeout", args.timeout);
  plan.rate = args.rate;
  auto engine = make_load_engine("auto", plan.target);
  probe_target(plan.target, plan.timeout);
  auto result = engine->run(plan, stop_requested(), {});
  std::cout << bench_report(plan, result, args.latency) << std::flush;
  if (!args.json_path.empty()) {
    auto judgement = judge(summarize(result.iterations), nullptr, {}, {});
    std::ofstream(args.json_path)
        << nlohmann::json{{"metrics", metrics_json(judgement.checks)}}.dump(2) << "\n";
  }
  return stop_requested() ? to_int(ExitStatus::kError) : 0;
}

int run_validate(const fs::path& path) {
  auto profile = load_profile(path, cli_environment());
  std::cout << path.string() << ": ok (profile \"" << profile.name << "\", hash "
            << profile.hash.substr(0, 12) << ", " << profile.repeat.count << " x "
            << format_duration(profile.load.duration) << ", " << profile.load.connections
            << " connections)\n";
  return 0;
}

struct DemoArgs {
  DemoServerOptions options;
  std::string delay = "0s";
  std::string work = "0s";
  std::string port_file;
};

void write_port_file(const std::string& path, uint16_t port) {
  if (path.empty()) return;
  // Written whole then renamed, so a reader never sees a partial number.
  auto tmp = path + ".tmp";
  std::ofstream(tmp) << port << "\n";
  fs::rename(tmp, path);
}

int run_demo_server(DemoArgs args) {
  if (args.delay != "0s") args.options.delay = duration_option("--delay", args.delay);
  if (args.work != "0s") args.options.work = duration_option("--work", args.work);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the server's threads start
  DemoServer server(args.options);
  write_port_file(args.port_file, server.port());
  spdlog::info("demo server listening on {}", server.url());
  int signal = 0;
  sigwait(&signals, &signal);
  server.stop();
  return 0;
}

void add_run(CLI::App& app, RunOptions& opt) {
  auto* run = app.add_subcommand("run", "Run a profile, judge it against the baseline, report");
  run->add_option("profile", opt.profile_path, "Profile file (JSON with comments)")->required();
  run->add_option("--store", opt.store_path, "Baseline store (SQLite)")->capture_default_str();
  run->add_option("--junit", opt.junit_path, "Write a JUnit XML report here");
  run->add_option("--json", opt.json_path, "Write the JSON result here");
  run->add_option("--summary", opt.summary_path,
                  "Write a Markdown summary here (default: $GITHUB_STEP_SUMMARY when set)");
  run->add_option("--commit", opt.ci.commit, "Commit SHA (default: GITHUB_SHA / CI_COMMIT_SHA)");
  run->add_option("--branch", opt.ci.branch, "Branch of this run (default: from CI variables)");
  run->add_option(
      "--baseline-branch", opt.ci.baseline_branch,
      "Branch whose runs are the baseline (default: PR/MR target, else default branch)");
  run->add_flag("!--no-record", opt.record, "Judge without storing this run");
}

void add_bench(CLI::App& app, BenchArgs& args) {
  auto* bench = app.add_subcommand("bench", "One ad-hoc load test with wrk's flags and output");
  bench->add_option("url", args.url, "Target URL")->required();
  bench->add_option("-t,--threads", args.threads, "Threads")->capture_default_str();
  bench->add_option("-c,--connections", args.connections, "Connections")->capture_default_str();
  bench->add_option("-d,--duration", args.duration, "Duration, e.g. 10s")->capture_default_str();
  bench->add_option("-R,--rate", args.rate, "Requests/s (open model); 0 = closed model");
  bench->add_option("-H,--header", args.headers, "Add a header, \"Name: value\"");
  bench->add_option("--timeout", args.timeout, "Request timeout")->capture_default_str();
  bench->add_flag("--latency", args.latency, "Print the latency distribution");
  bench->add_option("--json", args.json_path, "Write the metrics as JSON here");
}

void add_demo_server(CLI::App& app, DemoArgs& args) {
  // Hidden from the main help (empty group): a target for the demo and the tests.
  auto* demo = app.add_subcommand("demo-server", "Serve the demo target on 127.0.0.1")->group("");
  demo->add_option("--port", args.options.port, "Port (0 = any free one)")->capture_default_str();
  demo->add_option("--port-file", args.port_file, "Write the bound port here");
  demo->add_option("--delay", args.delay, "Delay added to every --delay-every-th response");
  demo->add_option("--delay-every", args.options.delay_every, "Which responses are delayed");
  demo->add_option("--error-every", args.options.error_every, "Every N-th response is a 500");
  demo->add_option("--work", args.work, "CPU burned per response, e.g. 50us");
  demo->add_option("--body-bytes", args.options.body_bytes, "Response body size");
}

std::string version_text() {
  return std::string("perfgate ") + PERFGATE_VERSION + " (libcurl " +
         curl_version_info(CURLVERSION_NOW)->version + ")";
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"perfgate: a performance gate for CI pipelines"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  std::string log_level = "info";
  bool quiet = false;
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.add_flag("-q,--quiet", quiet, "Only warnings and errors on stderr");
  RunOptions run_options;
  BenchArgs bench_args;
  DemoArgs demo_args;
  fs::path validate_path;
  add_run(app, run_options);
  add_bench(app, bench_args);
  app.add_subcommand("validate", "Check a profile and print its hash")
      ->add_option("profile", validate_path, "Profile file")
      ->required();
  add_demo_server(app, demo_args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "perfgate: error: " << e.what() << " (see --help)\n";
    return to_int(ExitStatus::kError);
  }
  try {
    setup_logging(log_level, quiet);
    install_stop_handlers();
    if (app.got_subcommand("run"))
      return to_int(run_gate(run_options, cli_environment(), std::cout, stop_requested()));
    if (app.got_subcommand("bench")) return run_bench(bench_args);
    if (app.got_subcommand("validate")) return run_validate(validate_path);
    return run_demo_server(demo_args);
  } catch (const ProfileError& e) {
    for (const auto& line : e.lines()) std::cerr << "perfgate: error: " << line << "\n";
  } catch (const std::exception& e) {
    std::cerr << "perfgate: error: " << e.what() << "\n";
  }
  return to_int(ExitStatus::kError);
}

}  // namespace perfgate
