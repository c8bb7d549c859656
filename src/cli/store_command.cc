// `perfgate store check|export|import|prune|delete|migrate`: maintenance of the baseline store.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

#include <unistd.h>

#include "perfgate/cli/command.h"
#include "perfgate/core/bounded_read.h"
#include "perfgate/core/checked.h"
#include "perfgate/core/error.h"
#include "perfgate/core/exit_status.h"
#include "perfgate/core/printable.h"
#include "perfgate/gate/gate.h"
#include "perfgate/gate/store_access.h"
#include "perfgate/report/output_file.h"
#include "perfgate/store/prune_policy.h"
#include "perfgate/store/store_maintenance.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

struct StoreOptions {
  fs::path store_path = kDefaultStorePath;
  std::string profile_name;
  fs::path output_path;
  fs::path import_path;
  int64_t keep = -1;
  std::string older_than;
  bool policy = false;
  int64_t keep_last = PrunePolicy{}.keep_last;
  std::string max_size;
  std::vector<int64_t> delete_ids;
};

PrunePolicy policy_of(const StoreOptions& opt) {
  PrunePolicy policy{opt.keep_last, std::nullopt};
  if (opt.max_size.empty()) return policy;
  policy.max_bytes = parse_byte_size(opt.max_size);
  if (!policy.max_bytes)
    throw Error("--max-size: expected a size like 50MB, 1.5GiB or 800kB, got \"" + opt.max_size +
                "\"");
  return policy;
}

std::string megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// Maintenance never creates a store: a mistyped --store must not leave an empty one.
BaselineStore open_existing(const fs::path& path, BaselineStore::Mode mode) {
  return open_existing_store(path, mode);
}

CLI::App* add_store_flag(CLI::App* sub, StoreOptions& opt) {
  sub->add_option("--store", opt.store_path, "Baseline store (SQLite)")->capture_default_str();
  return sub;
}

int check(const StoreOptions& opt) {
  auto store = open_existing(opt.store_path, BaselineStore::Mode::kReadOnly);
  auto problems = check_store(store);
  for (const auto& problem : problems)
    std::cout << printable(opt.store_path.string()) << ": " << printable(problem) << "\n";
  if (problems.empty())
    std::cout << printable(opt.store_path.string()) << ": ok (" << store.run_count() << " runs)\n";
  return to_int(problems.empty() ? ExitStatus::kPass : ExitStatus::kError);
}

int export_to(const StoreOptions& opt) {
  auto store = open_existing(opt.store_path, BaselineStore::Mode::kReadOnly);
  if (opt.output_path.empty()) return export_runs(store, std::cout, opt.profile_name), 0;
  OutputGuard().store(opt.store_path).check(opt.output_path, "--output");
  // Streamed, as import reads it: memory stays bounded whatever the store's size.
  write_output_file(opt.output_path,
                    [&](std::ostream& out) { export_runs(store, out, opt.profile_name); });
  return 0;
}

int import_from(const StoreOptions& opt) {
  // Before any open: a FIFO's open() waits for a writer, and one left open held
  // the store's write lock as long as it stayed open; /dev/zero or a folder
  // "imported 0 runs" with exit 0 (issue 41, items 9 and 20).
  if (auto kind = special_file_kind(opt.import_path); !kind.empty())
    throw Error(opt.import_path.string() + ": is " + kind +
                ", not an export file (store export --output writes one; save a pipe's "
                "runs to a file first)");
  std::ifstream in(opt.import_path);
  if (!in) throw Error(opt.import_path.string() + ": cannot read the import file");
  auto store = BaselineStore::open(opt.store_path);
  // Progress only for a person watching, never into a CI log.
  std::function<void(const ImportCounts&)> progress;
  if (isatty(STDERR_FILENO))
    progress = [](const ImportCounts& c) {
      std::cerr << "\rimporting: " << c.added << " added, " << c.skipped << " skipped"
                << std::flush;
    };
  auto counts = import_runs(store, in, opt.import_path.string(), progress);
  if (progress) std::cerr << "\r\033[K";
  std::cout << printable(opt.store_path.string()) << ": imported " << counts.added
            << " runs, skipped " << counts.skipped << " already stored\n";
  return 0;
}

// "30d" (days) besides every unit parse_duration() knows. Checked: days past
// the nanosecond count once wrapped into a cut-off in the future, and prune
// deleted every run.
Nanos age_flag(const std::string& text) {
  int64_t days = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), days);
  bool in_days = std::string_view(end) == "d" && end != text.data();
  if (in_days && ec == std::errc() && days > 0)
    if (auto age = checked_duration(days, std::chrono::hours(24))) return *age;
  if (in_days && (ec == std::errc::result_out_of_range || days > 0))
    throw Error("--older-than: must be at most " + std::string(kLongestDurationWords) + ", got \"" +
                text + "\"; nothing was deleted");
  return duration_flag("--older-than", text);
}

int prune(const StoreOptions& opt) {
  if (opt.policy) {
    if (opt.keep >= 0 || !opt.older_than.empty())
      throw Error("store prune: --policy decides what goes; drop --keep and --older-than");
    auto policy = policy_of(opt);
    auto store = open_existing(opt.store_path, BaselineStore::Mode::kReadWrite);
    auto result = prune_by_policy(store, policy);
    std::cout << printable(opt.store_path.string()) << ": pruned " << result.deleted << " runs, "
              << result.kept << " left";
    if (policy.max_bytes) std::cout << ", " << megabytes(result.bytes);
    std::cout << " (every baseline the next runs can use is kept)\n";
    if (result.over_size)
      std::cerr << printable(opt.store_path.string()) << ": still " << megabytes(result.bytes)
                << ", more than --max-size " << opt.max_size
                << ": what judging needs takes that much\n";
    return 0;
  }
  if (!opt.max_size.empty()) throw Error("store prune: --max-size goes with --policy");
  PruneRule rule;
  if (opt.keep >= 0) rule.keep = opt.keep;
  if (!opt.older_than.empty()) rule.older_than = age_flag(opt.older_than);
  auto store = open_existing(opt.store_path, BaselineStore::Mode::kReadWrite);
  auto deleted = prune_runs(store, rule);
  std::cout << printable(opt.store_path.string()) << ": pruned " << deleted << " runs, "
            << store.run_count() << " left\n";
  return 0;
}

int delete_by_id(const StoreOptions& opt) {
  auto store = open_existing(opt.store_path, BaselineStore::Mode::kReadWrite);
  auto deleted = delete_runs(store, opt.delete_ids);
  std::cout << printable(opt.store_path.string()) << ": deleted " << deleted
            << (deleted == 1 ? " run, " : " runs, ") << store.run_count() << " left\n";
  return 0;
}

// Opening for writing migrates; this command does only that, so that an old
// store can be upgraded (and compacted) before read-only commands use it.
int migrate(const StoreOptions& opt) {
  check_store_file(opt.store_path);
  int before = stored_schema_version(opt.store_path);
  auto store = open_existing(opt.store_path, BaselineStore::Mode::kReadWrite);
  std::cout << printable(opt.store_path.string()) << ": ";
  if (before == store.schema_version())
    std::cout << "already at schema " << before;
  else
    std::cout << "schema " << before << " to " << store.schema_version();
  std::cout << ", " << store.run_count() << " runs\n";
  return 0;
}

void add_check_and_export(CommandSet& commands, CLI::App* store,
                          const std::shared_ptr<StoreOptions>& opt) {
  auto* check_cmd = add_store_flag(
      store->add_subcommand("check", "Check integrity and perfgate's invariants"), *opt);
  commands.add(check_cmd, [opt](const CommandContext&) { return check(*opt); });
  auto* export_cmd =
      add_store_flag(store->add_subcommand("export", "Write runs as JSON lines"), *opt);
  export_cmd->add_option("--profile", opt->profile_name, "Only this profile's runs");
  export_cmd->add_option("--output,-o", opt->output_path, "Write here instead of stdout");
  commands.add(export_cmd, [opt](const CommandContext&) { return export_to(*opt); });
}

void add_import_and_prune(CommandSet& commands, CLI::App* store,
                          const std::shared_ptr<StoreOptions>& opt) {
  auto* import_cmd = add_store_flag(
      store->add_subcommand("import", "Add the runs of an export (duplicates skipped)"), *opt);
  import_cmd->add_option("file", opt->import_path, "JSON lines from `store export`")->required();
  commands.add(import_cmd, [opt](const CommandContext&) { return import_from(*opt); });
  auto* prune_cmd = add_store_flag(store->add_subcommand("prune", "Delete old runs"), *opt);
  prune_cmd->add_option("--keep", opt->keep, "Newest runs to keep per profile and branch")
      ->check(whole_number_from(0));
  prune_cmd->add_option("--older-than", opt->older_than, "Delete runs older than this (30d, 12h)");
  prune_cmd->add_flag("--policy", opt->policy,
                      "Keep what judging needs (baseline and drift windows per profile, branch "
                      "and host; accepted runs; the last --keep-last of each branch)");
  prune_cmd
      ->add_option("--keep-last", opt->keep_last,
                   "With --policy: newest runs kept per "
                   "profile and branch")
      ->capture_default_str()
      ->check(whole_number_from(0));
  prune_cmd->add_option("--max-size", opt->max_size,
                        "With --policy: then delete the oldest runs judging does not need "
                        "until the file is at most this big (50MB, 1GiB), and vacuum it");
  commands.add(prune_cmd, [opt](const CommandContext&) { return prune(*opt); });
  auto* delete_cmd = add_store_flag(
      store->add_subcommand("delete", "Delete runs by id (one store check calls damaged)"), *opt);
  delete_cmd->add_option("run", opt->delete_ids, "Ids of the runs (history lists them)")
      ->required()
      ->check(whole_number_from(1));
  commands.add(delete_cmd, [opt](const CommandContext&) { return delete_by_id(*opt); });
  auto* migrate_cmd = add_store_flag(
      store->add_subcommand("migrate", "Upgrade an old store to this perfgate's schema"), *opt);
  commands.add(migrate_cmd, [opt](const CommandContext&) { return migrate(*opt); });
}

}  // namespace

void register_store_command(CommandSet& commands) {
  auto opt = std::make_shared<StoreOptions>();
  auto* store = commands.app().add_subcommand("store", "Maintain the baseline store");
  store->require_subcommand(1);
  add_check_and_export(commands, store, opt);
  add_import_and_prune(commands, store, opt);
}

}  // namespace perfgate
