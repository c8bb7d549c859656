#include <algorithm>
#include <chrono>

#include "gate_pipeline.h"
#include "perfgate/profile/ci_context.h"
#include "perfgate/store/shard.h"
#include "perfgate/store/stored_run.h"

// Sharded runs: `run --shard I/N` measures one machine's share of the load,
// `merge` judges the shares together as one run. Both are the run's pipeline
// (gate.cc) with the judgement (shard) or the measurement (merge) left out.
namespace perfgate {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The merged shards' profile, with the hash of the text it was written in.
Profile merged_profile(const MergedShards& merged) {
  std::string source = merged.shards.front().source;
  if (merged.shards.size() > 1)
    source += " and " + std::to_string(merged.shards.size() - 1) + " more shards";
  return stored_profile(merged.run, source);
}

}  // namespace

// A share says nothing against the whole profile's baseline: nothing is judged
// or stored here; the merged run is.
ExitStatus run_shard(const RunOptions& options, const Profile& whole, const EnvLookup& env,
                     std::ostream& out, const std::atomic<bool>& stop, const Measurer& measurer) {
  ShardSpec spec = *options.shard;
  if (options.json_path.empty())
    throw Error("--shard " + spec.text() + ": needs --json PATH, the file perfgate merge reads");
  Profile profile = shard_profile(whole, spec);
  GateRun gate(options, &profile, env);
  return gate.guarded([&] {
    auto started = Clock::now();
    auto start_at = start_time(options);
    gate.check_outputs();
    auto host = placed_host(measurer, profile);
    Measurement m = measurer.load(profile, stop, start_at);
    gate.loaded(m.load);
    if (m.aborted) throw Error("interrupted by a signal; the service was stopped");
    auto run = measured(profile, m, gate.partial().ci, host, gate.partial().started_at);
    auto judgement = judge(run.figures, nullptr, {}, run.record.saturation,
                           {profile.baseline.confidence}, nullptr);
    GateResult r = assemble(profile, run.record, judgement, {});
    r.verdict = Verdict::kPass;  // measured; perfgate merge gives the verdict
    r.exit_code = ExitStatus::kPass;
    r.host_summary = run.host_summary;
    r.duration_s = to_seconds(Clock::now() - started);
    r.notes.push_back("shard " + spec.text() + ": measured, not judged or stored; perfgate merge " +
                      "judges the shards together");
    if (auto note = unstarted_service_note(profile, gate.partial().ci); !note.empty())
      r.notes.push_back(note);
    r.in_flight_at_end = run.in_flight_at_end;
    r.shard = ShardFile{spec,       run.measured_from_ms, run.measured_to_ms,
                        run.record, run.in_flight_at_end, options.json_path.string()};
    gate.write(r, out);
    return r.exit_code;
  });
}

ExitStatus merge_gate(const RunOptions& options, const std::vector<fs::path>& shard_paths,
                      const EnvLookup& env, std::ostream& out) {
  GateRun gate(options, nullptr, env);
  for (const auto& path : shard_paths) gate.guard().input(path, "a shard");
  return gate.guarded([&] {
    gate.check_outputs();
    std::vector<ShardFile> files;
    for (const auto& path : shard_paths) files.push_back(read_shard_file(path));
    auto merged = merge_shards(std::move(files));
    RunRecord& rec = merged.run;
    gate.partial().profile_name = rec.profile_name;
    gate.partial().profile_hash = rec.profile_hash;
    Profile profile = merged_profile(merged);
    // The merge job's CI context, where it has one; the shards' where it has not.
    CiContext ci = gate.partial().ci;
    if (ci.commit.empty()) ci.commit = rec.ci.commit;
    if (ci.pipeline_id.empty()) ci.pipeline_id = rec.ci.pipeline_id;
    rec.ci = ci;
    auto store = open_store(options);
    auto selection = choose_baseline(options, store, profile, ci, rec.host);
    GateResult result =
        judge_and_store(options, store, profile, selection, rec, stored_run_figures(rec));
    result.notes.insert(result.notes.end(), merged.notes.begin(), merged.notes.end());
    result.shards = merged.shards;
    result.in_flight_at_end = merged.in_flight_at_end;
    for (const auto& s : merged.shards)
      result.duration_s =
          std::max(result.duration_s, (s.measured_to_ms - s.measured_from_ms) / 1e3);
    gate.write(result, out, store);
    return result.exit_code;
  });
}

}  // namespace perfgate
