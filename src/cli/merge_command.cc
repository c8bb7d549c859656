// `perfgate merge SHARD.json...`: the shards of one run, added exactly and
// gated like a run of one machine.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "perfgate/cli/command.h"
#include "perfgate/core/error.h"
#include "perfgate/gate/gate.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct ShardWait {
  std::string wait;  // empty: no waiting
  int expect = 0;    // 0: as many as there are
};

// A folder stands for the *.json files in it. A shard's file appears whole
// (written to a hidden temporary name, then renamed), so a file that is there
// is complete.
std::vector<fs::path> shard_files(const std::vector<fs::path>& args) {
  std::vector<fs::path> files;
  for (const auto& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      files.push_back(arg);  // one that is missing is merge says so
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(arg, ec)) {
      auto name = entry.path().filename().string();
      if (entry.is_regular_file(ec) && name.front() != '.' && entry.path().extension() == ".json")
        found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

std::string names(const std::vector<fs::path>& files) {
  std::string text;
  for (const auto& f : files) text += (text.empty() ? "" : ", ") + f.filename().string();
  return text.empty() ? "none" : text;
}

// The shard-I.json names (as the templates write them) that are not among files.
std::string missing_names(const std::vector<fs::path>& files, int expect) {
  std::vector<fs::path> absent;
  for (int i = 1; i <= expect; ++i) {
    auto name = "shard-" + std::to_string(i) + ".json";
    if (std::none_of(files.begin(), files.end(),
                     [&](const fs::path& f) { return f.filename() == name; }))
      absent.push_back(name);
  }
  return names(absent);
}

// What is still missing, "" when the shards are all there.
std::string missing(const std::vector<fs::path>& args, const std::vector<fs::path>& files,
                    int expect) {
  std::error_code ec;
  for (const auto& arg : args)
    if (!fs::exists(arg, ec)) return arg.string() + " does not exist";
  if (expect > 0 && static_cast<int>(files.size()) < expect)
    return std::to_string(files.size()) + " of " + std::to_string(expect) +
           " shard files (found: " + names(files) + "; missing: " + missing_names(files, expect) +
           ")";
  return "";
}

// The shard files once every one is there: each named file exists and, with
// --expect N, the files and folders hold N. Waits at most --wait, polling.
std::vector<fs::path> complete_shards(const std::vector<fs::path>& args, const ShardWait& w,
                                      const std::atomic<bool>& stop) {
  auto wait = w.wait.empty() ? Nanos(0) : duration_flag("--wait", w.wait);
  auto deadline = Clock::now() + wait;
  std::string logged;
  for (;;) {
    auto files = shard_files(args);
    auto lack = missing(args, files, w.expect);
    if (lack.empty() || w.wait.empty()) return files;  // without --wait, merge says what lacks
    if (Clock::now() >= deadline)
      throw Error("merge: after --wait " + w.wait + ", " + lack +
                  "; a shard that failed before writing its result leaves none");
    if (stop) throw Error("merge: interrupted by a signal while waiting: " + lack);
    if (lack != logged) spdlog::info("waiting for the shards: {}", logged = lack);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

void register_merge_command(CommandSet& commands) {
  auto opt = std::make_shared<RunOptions>();
  auto paths = std::make_shared<std::vector<fs::path>>();
  auto wait = std::make_shared<ShardWait>();
  auto* merge = commands.app().add_subcommand(
      "merge", "Add the results of run --shard I/N and judge, store and report them as one run");
  merge
      ->add_option("shards", *paths,
                   "The shards' JSON results (run --shard I/N --json P), or folders of them")
      ->required();
  merge->add_option("--wait", wait->wait,
                    "Wait up to this long (\"30m\") until every shard file is there "
                    "(each named file, or --expect N in the folders)");
  merge
      ->add_option("--expect", wait->expect,
                   "How many shard files make the run: waited for with --wait, else the "
                   "missing ones are named")
      ->check(whole_number_from(1));
  add_gate_options(merge, opt);  // the same reports and baseline choice as run
  commands.add(merge, [opt, paths, wait](const CommandContext& ctx) {
    auto files = complete_shards(*paths, *wait, ctx.stop);
    // A shard job that failed before writing its result leaves no file: name it.
    if (wait->wait.empty() && wait->expect > 0 && static_cast<int>(files.size()) < wait->expect)
      throw Error("merge: " + missing({}, files, wait->expect) +
                  ": a shard that failed before writing its result leaves none (see its job's log; "
                  "--wait waits for shards still running)");
    if (files.empty()) throw Error("merge: no shard files in " + paths->front().string());
    return to_int(merge_gate(*opt, files, ctx.env, std::cout));
  });
}

}  // namespace perfgate
