// `perfgate demo-server`: the embedded target of the README's demo and the tests.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>

#include "demo_server_burner.h"
#include "perfgate/cli/command.h"
#include "perfgate/core/error.h"
#include "perfgate/load/demo_server.h"

namespace perfgate {
namespace {

struct DemoArgs {
  DemoServerOptions options;
  std::string delay = "0s";
  std::string work = "0s";
  std::string tail_delay = "0s";
  std::string cold_for = "0s";
  std::string cold_delay = "1ms";
  std::string port_file;
  int burn_threads = 0;
  double launch_spread_pct = 0;
};

// A testing aid for the launch effect: real services differ from one start to
// the next (placement, allocator, JIT). Each start draws one speed in
// [-spread, +spread] and scales its work and delays by it for its whole life.
void draw_launch_speed(DemoArgs& args) {
  if (args.launch_spread_pct <= 0) return;
  std::random_device seed;
  std::mt19937_64 rng((static_cast<uint64_t>(seed()) << 32) ^ seed());
  double spread = args.launch_spread_pct / 100;
  double factor = 1 + std::uniform_real_distribution<double>(-spread, spread)(rng);
  auto scale = [factor](Nanos d) {
    return Nanos(static_cast<Nanos::rep>(static_cast<double>(d.count()) * factor));
  };
  args.options.work = scale(args.options.work);
  args.options.delay = scale(args.options.delay);
  args.options.tail_delay = scale(args.options.tail_delay);
  spdlog::info("launch speed: work and delays x {:.3f} (--launch-spread {}%)", factor,
               args.launch_spread_pct);
}

void write_port_file(const std::string& path, uint16_t port) {
  if (path.empty()) return;
  // Written whole then renamed, so a reader never sees a partial number.
  auto tmp = path + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::filesystem::rename(tmp, path);
}

int run_demo_server(DemoArgs args) {
  if (args.delay != "0s") args.options.delay = duration_flag("--delay", args.delay);
  if (args.options.delay.count() > 0 && args.options.delay_every == 0) args.options.delay_every = 1;
  if (args.tail_delay != "0s")
    args.options.tail_delay = duration_flag("--tail-delay", args.tail_delay);
  if (args.options.tail_delay.count() > 0 && args.options.tail_every == 0)
    throw Error("--tail-delay: needs --tail-every N (e.g. 50 for 2 % of responses)");
  if (args.work != "0s") args.options.work = duration_flag("--work", args.work);
  if (args.cold_for != "0s") {
    args.options.cold_for = duration_flag("--cold-for", args.cold_for);
    args.options.cold_delay = duration_flag("--cold-delay", args.cold_delay);
  }
  draw_launch_speed(args);
  // Forked before any thread of this process exists.
  std::optional<BusyBurner> burner;
  if (args.burn_threads > 0) {
    burner.emplace(args.burn_threads);
    spdlog::info("burner pid {}: {} threads spin while this server serves", burner->pid(),
                 args.burn_threads);
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the server's threads start
  DemoServer server(args.options);
  std::optional<BusyWatch> watch;
  if (burner) watch.emplace(*burner, [&server] { return server.requests_served(); });
  write_port_file(args.port_file, server.port());
  spdlog::info("demo server listening on {}", server.url());
  int signal = 0;
  sigwait(&signals, &signal);
  watch.reset();
  server.stop();
  return 0;
}

}  // namespace

void register_demo_server_command(CommandSet& commands) {
  auto args = std::make_shared<DemoArgs>();
  // Listed: the demo profiles and the README start it (a newcomer met it hidden).
  auto* demo = commands.app().add_subcommand(
      "demo-server", "Serve a demo target on 127.0.0.1 (the demo profiles start it)");
  demo->add_option("--port", args->options.port, "Port (0 = any free one)")->capture_default_str();
  demo->add_option("--port-file", args->port_file, "Write the bound port here");
  demo->add_option("--delay", args->delay, "Delay added to every --delay-every-th response");
  demo->add_option("--delay-every", args->options.delay_every,
                   "Delay every N-th response (default 1 with --delay)");
  demo->add_option("--tail-delay", args->tail_delay,
                   "A second delay, on top of --delay, on every --tail-every-th response");
  demo->add_option("--tail-every", args->options.tail_every,
                   "Tail-delay every N-th response, e.g. 50 for 2 %");
  demo->add_option("--cold-for", args->cold_for,
                   "Testing aid: for this long after start, every response waits --cold-delay "
                   "more (a service still warming up)");
  demo->add_option("--cold-delay", args->cold_delay, "The extra wait while cold")
      ->capture_default_str();
  demo->add_option("--error-every", args->options.error_every,
                   "Every N-th response is an error (--error-status)");
  demo->add_option("--error-status", args->options.error_status,
                   "The status of those responses, e.g. 404 for a wrong path")
      ->check(CLI::Range(400, 599))
      ->capture_default_str();
  demo->add_option("--work", args->work, "CPU burned per response, e.g. 50us");
  demo->add_option("--work-rounds", args->options.work_rounds,
                   "Fixed work per response: N rounds of an integer loop (the same instructions "
                   "on every launch; not scaled by --launch-spread)");
  demo->add_option("--body-bytes", args->options.body_bytes, "Response body size");
  demo->add_flag("--single-thread", args->options.single_thread,
                 "Serve every connection from one event-loop thread (a service with one busy "
                 "thread, e.g. Node.js or Redis) instead of a thread per connection");
  demo->add_flag("--fork", args->options.fork_per_request,
                 "Serve each request from a process forked for it, which answers and exits (as "
                 "Python's ForkingHTTPServer): work done in short-lived children")
      ->excludes("--single-thread");
  demo->add_option("--burn-while-busy", args->burn_threads,
                   "Testing aid: N threads of a separate process, outside this server's process "
                   "tree, burn CPU while it serves requests (and 20 ms after), so that a load "
                   "test sees foreign CPU on this server's windows only")
      ->check(CLI::Range(0, 256));
  demo->add_option("--launch-spread", args->launch_spread_pct,
                   "Testing aid: each start draws one speed within +-PCT % and scales --work "
                   "and the delays by it (a launch effect)")
      ->check(CLI::Range(0.0, 90.0));
  commands.add(demo, [args](const CommandContext&) { return run_demo_server(*args); });
}

}  // namespace perfgate
