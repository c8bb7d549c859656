// `perfgate bench`: one ad-hoc load test with wrk's flags and wrk's output.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "perfgate/cli/command.h"
#include "perfgate/core/checked.h"
#include "perfgate/load/load_engine.h"
#include "perfgate/profile/json_text.h"
#include "perfgate/report/bench_report.h"
#include "perfgate/report/json_report.h"
#include "perfgate/report/output_file.h"

namespace perfgate {
namespace {

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
  std::string engine = "auto";  // hidden: bench/engines.sh compares the engines
};

TargetSpec bench_target(const BenchArgs& args) {
  TargetSpec target;
  target.url = args.url;
  for (size_t i = 0; i < args.headers.size(); ++i) {
    const auto& header = args.headers[i];
    auto colon = header.find(':');
    // Not echoed: a header without its colon may be all secret ("-H $TOKEN").
    if (colon == std::string::npos)
      throw Error("-H: header " + std::to_string(i + 1) + " of " +
                  std::to_string(args.headers.size()) +
                  " has no ':'; expected \"Name: value\" (its text is not shown: it may be a "
                  "secret)");
    auto value = header.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    target.headers.emplace_back(header.substr(0, colon), value);
  }
  return target;
}

// The profile's own bounds on load.rate: NaN and negatives would quietly mean
// the closed model, and a rate like 1e-10 made the schedule loop for ever.
double bench_rate(double rate) {
  if (rate == 0 || kRequestRate.contains(rate)) return rate;
  throw Error("-R: must be a rate " + kRequestRate.words() + " (or 0 for the closed model), got " +
              short_number(rate));
}

LoadPlan bench_plan(const BenchArgs& args) {
  // The profile's bounds on load.threads and load.connections.
  if (args.threads > 1024)
    throw Error("-t: at most 1024 threads, got " + std::to_string(args.threads));
  if (args.connections > 1'000'000)
    throw Error("-c: at most 1000000 connections, got " + std::to_string(args.connections));
  if (args.threads < 1 || args.connections < args.threads)
    throw Error("-c: connections (" + std::to_string(args.connections) +
                ") must be at least the threads (" + std::to_string(args.threads) + ")");
  LoadPlan plan;
  plan.target = bench_target(args);
  plan.threads = args.threads;
  plan.connections = args.connections;
  plan.duration = duration_flag("-d", args.duration);
  plan.timeout = duration_flag("--timeout", args.timeout);
  plan.rate = bench_rate(args.rate);
  return plan;
}

int run_bench(const BenchArgs& args, const CommandContext& ctx) {
  auto plan = bench_plan(args);
  auto engine = make_load_engine(args.engine, plan);
  probe_target(plan.target, plan.timeout);
  auto result = engine->run(plan, ctx.stop, {});
  std::cout << bench_report(plan, result, args.latency) << std::flush;
  if (!args.json_path.empty()) {
    auto judgement = judge(run_figures(result.iterations), nullptr, {}, {});
    nlohmann::json out{{"metrics", metrics_json(judgement.checks)}};
    write_output_file(args.json_path, json_text(out, 2) + "\n");
  }
  return ctx.stop ? to_int(ExitStatus::kError) : 0;
}

}  // namespace

void register_bench_command(CommandSet& commands) {
  auto args = std::make_shared<BenchArgs>();
  auto* bench =
      commands.app().add_subcommand("bench", "One ad-hoc load test with wrk's flags and output");
  bench->add_option("url", args->url, "Target URL")->required();
  bench->add_option("-t,--threads", args->threads, "Threads")->capture_default_str();
  bench->add_option("-c,--connections", args->connections, "Connections")->capture_default_str();
  bench->add_option("-d,--duration", args->duration, "Duration, e.g. 10s")->capture_default_str();
  bench->add_option("-R,--rate", args->rate, "Requests/s (open model); 0 = closed model");
  bench->add_option("-H,--header", args->headers, "Add a header, \"Name: value\"");
  bench->add_option("--timeout", args->timeout, "Request timeout")->capture_default_str();
  bench->add_flag("--latency", args->latency, "Print the latency distribution");
  bench->add_option("--json", args->json_path, "Write the metrics as JSON here");
  // An empty group hides the option from --help: it is for bench/, not users.
  bench->add_option("--engine", args->engine, "auto, native or curl")->group("");
  commands.add(bench, [args](const CommandContext& ctx) { return run_bench(*args, ctx); });
}

}  // namespace perfgate
