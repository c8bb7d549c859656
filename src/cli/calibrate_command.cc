// `perfgate calibrate PROFILE --runs N`: A/A runs against the unchanged service,
// the noise they show and the limits it allows.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "perfgate/cli/command.h"
#include "perfgate/core/error.h"
#include "perfgate/gate/gate.h"
#include "perfgate/gate/store_access.h"
#include "perfgate/host/placement.h"
#include "perfgate/profile/json_text.h"
#include "perfgate/report/output_file.h"
#include "perfgate/store/baseline.h"
#include "perfgate/store/calibration.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

struct CalibrateOptions {
  fs::path profile_path;
  fs::path store_path = kDefaultStorePath;
  fs::path json_path;
  int runs = 5;
  double detect_pct = 0;  // --detect: the change to plan a fail of; 0: decide between the limits
  std::string run_cost;   // --run-cost: a launch's cost, default the service's measured start
  bool record = true;
  bool if_needed = false;  // --if-needed: nothing to do when the store's pool has the df
  CiOverrides ci;
};

nlohmann::json calibration_json(const Calibration& c, const std::vector<int64_t>& run_ids) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& n : c.metrics) {
    metrics[n.metric] = {
        {"unit", n.unit},
        {"typical", n.typical},
        {"iteration_noise_pct", n.iteration_noise_pct},
        {"run_noise_pct", n.run_noise_pct},
        {"detectable_pct", n.detectable_pct},
        {"suggested_warn_pct", n.suggested_warn_pct},
        {"suggested_fail_pct", n.suggested_fail_pct},
        {"current_fail_pct",
         n.gated ? nlohmann::json(n.current_fail_pct) : nlohmann::json(nullptr)},
        {"current_too_tight", n.current_too_tight},
        {"window_sd_pct", n.window_sd_pct},
        {"launch_sd_pct", n.launch_sd_pct},
        {"day_sd_pct", n.day_sd_pct ? nlohmann::json(*n.day_sd_pct) : nlohmann::json(nullptr)},
        {"plan",
         {{"detect_pct", n.detect_pct},
          {"block", n.block},
          {"launches", n.launches},
          {"repeat_count", n.launches * n.block},
          {"seconds", n.seconds}}}};
    // The first kept window's change from the later ones (null: too few windows a run).
    metrics[n.metric]["warmup_transient"] =
        n.warmup ? nlohmann::json{{"first_window_pct", n.warmup->first_pct},
                                  {"ci_low_pct", n.warmup->low_pct},
                                  {"ci_high_pct", n.warmup->high_pct},
                                  {"runs", n.warmup->runs},
                                  {"found", n.warmup->found}}
                 : nlohmann::json(nullptr);
  }
  return {{"runs", c.runs},
          {"run_ids", run_ids},
          {"window", c.window},
          {"confidence_pct", c.confidence},
          {"suggested_repeat_count", c.suggested_repeat_count},
          {"launch_cost_s", c.cost.launch_s},
          {"window_cost_s", c.cost.window_s},
          {"metrics", metrics}};
}

// Earlier calibrations of this profile, hash and host, by UTC day (today's
// other calibrations left out: one day is one day), at most the 10 newest days.
std::vector<std::vector<RunFigures>> earlier_days(BaselineStore& store, const Profile& profile,
                                                  const HostFingerprint& host,
                                                  const std::vector<int64_t>& now) {
  std::map<std::string, std::vector<RunFigures>, std::greater<>> days;
  std::string today;
  for (const auto& header : store.runs(profile.name, 1000)) {
    if (std::find(now.begin(), now.end(), header.id) != now.end()) {
      today = header.created_at.substr(0, 10);
      continue;
    }
    if (header.kind != "calibration" || header.profile_hash != profile.hash ||
        header.host.key() != host.key() || header.status != "complete" ||
        header.saturation.saturated)
      continue;
    auto day = header.created_at.substr(0, 10);
    if (days.size() >= 10 && !days.count(day)) continue;
    days[day].push_back(run_figures_of(header));
  }
  days.erase(today);
  std::vector<std::vector<RunFigures>> out;
  for (auto& [day, runs] : days)
    if (runs.size() >= 2) out.push_back(std::move(runs));
  return out;
}

// Today, UTC, as a run's created_at begins: the day a calibration's runs share.
std::string utc_today() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &tm);
  return text;
}

// Did a calibration of this profile, hash and host run today already? Only
// a run that measured counts: a saturated or failed one adds nothing to the
// pool, so it must not put the next try off to tomorrow (issue 50, item 13).
bool calibrated_today(BaselineStore& store, const Profile& profile, const HostFingerprint& host) {
  auto today = utc_today();
  for (const auto& run : store.runs(profile.name, 200))
    if (run.kind == "calibration" && run.profile_hash == profile.hash &&
        run.host.key() == host.key() && run.created_at.starts_with(today) &&
        run.status == "complete" && !run.saturation.saturated)
      return true;
  return false;
}

// --if-needed: why these runs would tell the verdict nothing new, "" when they
// would. A window of kPooledNoiseBelowRuns baseline runs or more uses its own
// spread, so a grown store needs no pool; a young one needs none once its pool
// (docs/statistics.md, "A young store") holds runs of kPoolMinDays days on
// throughput. A second calibration on one day adds no day: it waits for the next.
std::string noise_already_known(BaselineStore& store, const Profile& profile, const CiContext& ci,
                                const HostFingerprint& host) {
  BaselineQuery query{profile.name, profile.hash, ci.baseline_branch, host.key()};
  auto window = std::min<size_t>(
      store.eligible_runs(query, kPooledNoiseBelowRuns, BaselineStore::Depth::kHeader).size(),
      static_cast<size_t>(std::max(profile.baseline.window, 1)));
  if (window >= static_cast<size_t>(kPooledNoiseBelowRuns))
    return "calibrate: nothing to do, the baseline window of " + ci.baseline_branch + " holds " +
           std::to_string(window) + " runs, whose own spread the verdict uses";
  query.branch.clear();
  auto pool = store_noise_pool(store, query);
  auto it = pool.find("throughput_rps");
  int days = it == pool.end() ? 0 : it->second.days;
  std::string held = it == pool.end() ? ""
                                      : " (" + std::to_string(it->second.runs) + " runs of " +
                                            std::to_string(days) + " day(s))";
  if (days >= kPoolMinDays)
    return "calibrate: nothing to do, the store already knows this host's run-to-run noise" + held;
  if (calibrated_today(store, profile, host))
    return "calibrate: nothing to do today, this host was calibrated today; the noise pool" + held +
           " needs runs of " + std::to_string(kPoolMinDays) +
           " days before it judges a young baseline: calibrate again on another day";
  return "";
}

// The calibration's A/A runs, each stored (as never a baseline) where there is
// a store; the saturated ones are left out of the figures.
struct AaRuns {
  std::vector<RunFigures> figures;
  std::vector<int64_t> ids;
  std::vector<double> overheads;  // a run's wall time beyond its kept windows: its launch
};

AaRuns measure_aa_runs(const CalibrateOptions& opt, const Profile& profile, const CiContext& ci,
                       const HostFingerprint& host, std::optional<BaselineStore>& store,
                       const std::atomic<bool>& stop) {
  AaRuns aa;
  for (int i = 0; i < opt.runs; ++i) {
    spdlog::info("calibration run {}/{}", i + 1, opt.runs);
    auto started = std::chrono::steady_clock::now();
    auto run = measure_run(profile, ci, host, stop);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    double kept = profile.repeat.count - profile.repeat.discard;
    aa.overheads.push_back(wall -
                           kept * std::chrono::duration<double>(profile.load.duration).count());
    run.record.kind = "calibration";  // A/A runs measure noise; they are never baselines
    if (store) aa.ids.push_back(store->record(run.record));
    // A saturated run measured the load machine, not the service's noise.
    if (run.record.saturation.saturated) {
      spdlog::warn("calibration run {} left out: the load machine was saturated", i + 1);
      continue;
    }
    aa.figures.push_back(std::move(run.figures));
  }
  if (aa.figures.size() < 2)
    throw Error("calibrate: fewer than 2 of " + std::to_string(opt.runs) +
                " runs were not saturated; free the load machine and try again");
  return aa;
}

int calibrate_profile(const CalibrateOptions& opt, const CommandContext& ctx) {
  Profile profile = load_profile(opt.profile_path, ctx.env);
  // Calibration measures run-to-run noise for stored baselines; a paired run's own
  // A/A is a paired run with the same build on both sides.
  if (profile.paired)
    throw Error("calibrate: " + opt.profile_path.string() +
                " is paired; calibrate a profile without its paired section, or run it with "
                "the same build as paired.baseline to see paired noise");
  if (!opt.json_path.empty()) {
    OutputGuard()
        .store(opt.store_path)
        .input(opt.profile_path, "the profile")
        .check(opt.json_path, "--json");
    check_output_writable(opt.json_path, "--json");
  }
  auto ci = read_ci_context(opt.ci, ctx.env);
  auto host = read_host_fingerprint();
  record_placement(host, resolve_placement(profile));
  std::optional<BaselineStore> store;
  if (opt.record) store = BaselineStore::open(opt.store_path);
  if (opt.if_needed && store) {
    if (auto known = noise_already_known(*store, profile, ci, host); !known.empty()) {
      std::cout << known << "\n";
      return 0;
    }
  }
  AaRuns aa = measure_aa_runs(opt, profile, ci, host, store, ctx.stop);
  CalibrationAsk ask;
  ask.detect_pct = opt.detect_pct;
  std::sort(aa.overheads.begin(), aa.overheads.end());
  ask.cost.launch_s = std::max(0.1, aa.overheads[aa.overheads.size() / 2]);
  if (!opt.run_cost.empty())
    ask.cost.launch_s =
        std::chrono::duration<double>(duration_flag("--run-cost", opt.run_cost)).count();
  // A paired window: the load's duration and the leg's warm-up after a switch.
  ask.cost.window_s =
      std::chrono::duration<double>(profile.load.duration + PairedSpec{}.leg_warmup).count();
  if (store) ask.earlier_days = earlier_days(*store, profile, host, aa.ids);
  auto calibration = calibrate(aa.figures, profile, ask);
  std::cout << calibration_report(calibration);
  if (!opt.json_path.empty()) {
    write_output_file(opt.json_path, json_text(calibration_json(calibration, aa.ids), 2) + "\n");
  }
  return 0;
}

}  // namespace

void register_calibrate_command(CommandSet& commands) {
  auto opt = std::make_shared<CalibrateOptions>();
  auto* cmd = commands.app().add_subcommand(
      "calibrate", "Run A/A runs of a profile and suggest limits its noise allows");
  cmd->add_option("profile", opt->profile_path, "Profile file")->required();
  cmd->add_option("--runs", opt->runs, "How many runs")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  cmd->add_option("--store", opt->store_path, "Baseline store (SQLite)")->capture_default_str();
  cmd->add_option("--json", opt->json_path, "Write the figures as JSON here");
  cmd->add_option("--branch", opt->ci.branch, "Branch recorded with the runs");
  cmd->add_option("--commit", opt->ci.commit, "Commit recorded with the runs");
  cmd->add_option("--detect", opt->detect_pct,
                  "A change (%) past the fail limit the paired run's plan fails with 80% power "
                  "(default: plan to decide between each metric's warn and fail limits)")
      ->check(CLI::Range(0.1, 1000.0));
  cmd->add_option("--run-cost", opt->run_cost,
                  "What a launch costs (service start and warm-up), e.g. 3s (default: measured)");
  cmd->add_flag_callback(
      "--no-record", [opt] { opt->record = false; }, "Do not store the calibration runs");
  cmd->add_flag("--if-needed", opt->if_needed,
                "Run only while the store's noise pool for this profile and host holds runs "
                "of fewer than 3 days, once a day (a pipeline's first runs)")
      ->excludes("--no-record");
  commands.add(cmd, [opt](const CommandContext& ctx) { return calibrate_profile(*opt, ctx); });
}

}  // namespace perfgate
