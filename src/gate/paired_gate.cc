// Paired mode: the profile's target (the candidate) and `paired.baseline` (the
// build it replaces) measured in turns on this machine, judged on their
// window-by-window ratios rather than against stored runs; both sides stored
// under one pair key, neither ever a baseline of stored-baseline mode.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "cost_phase.h"
#include "gate_pipeline.h"
#include "pair_screening.h"
#include "perfgate/gate/store_access.h"
#include "perfgate/host/shared_executable.h"
#include "sequential_run.h"

namespace perfgate {
namespace {

using Clock = std::chrono::steady_clock;

// The PATH a service's command is looked up in: its own env's, else perfgate's.
std::string service_path(const ServiceSpec& service, const EnvLookup& env) {
  for (const auto& [name, value] : service.env)
    if (name == "PATH") return value;
  return env("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
}

// Both sides of a paired run share one key in the store: unique per run, and
// stable through store export and import, unlike row ids.
std::string pair_key(const GateResult& partial) {
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", random());
  return partial.started_at + "/" + std::to_string(::getpid()) + "/" + suffix;
}

// A paired run's saturation: either side's, each reason naming its side.
Saturation paired_saturation(Saturation baseline, Saturation candidate) {
  Saturation both{baseline.saturated || candidate.saturated, {}, {}};
  auto add = [](std::vector<std::string>& to, const std::vector<std::string>& from,
                const std::string& side) {
    for (const auto& r : from) to.push_back(side + " side: " + r);
  };
  add(both.reasons, baseline.reasons, "baseline");
  add(both.reasons, candidate.reasons, "candidate");
  add(both.shared, baseline.shared, "baseline");
  add(both.shared, candidate.shared, "candidate");
  return both;
}

void refuse_stored_baseline_flags(const RunOptions& options) {
  if (options.baseline_run)
    throw Error(
        "--baseline-run: a paired run is judged against its own baseline side "
        "(paired.baseline), not a stored run");
  if (!options.start_at.empty()) throw Error("--start-at: only for shards, not paired runs");
}

// Both sides as the store keeps them, before the verdict.
struct PairedRecords {
  RunRecord base;
  RunRecord cand;
};

PairedRecords paired_records(const Profile& profile, const Profile& base_profile,
                             const PairedMeasurement& m, const GateResult& partial,
                             const HostFingerprint& host, const PairScreening& screening) {
  PairedRecords p;
  p.cand = make_record(profile, m.candidate, partial.ci, host, partial.started_at);
  CiContext base_ci = partial.ci;
  base_ci.commit = profile.paired->commit;
  p.base = make_record(base_profile, m.baseline, base_ci, host, partial.started_at);
  auto base_saturation = judge_saturation(base_profile, m.baseline, true);
  auto cand_saturation = judge_saturation(profile, m.candidate, true);
  // Screening that left too few pairs lets every pair vote again, stalled ones
  // too: an inconclusive run (a warn, with its reason), not an error.
  if (!screening.inconclusive.empty()) base_saturation.saturated = cand_saturation.saturated = true;
  require_responses(base_profile, m.baseline, base_saturation);
  require_responses(profile, m.candidate, cand_saturation);
  p.cand.saturation = p.base.saturation = paired_saturation(base_saturation, cand_saturation);
  p.cand.kind = "paired";
  p.base.kind = "paired-baseline";
  p.cand.pair = p.base.pair = pair_key(partial);
  p.base.verdict = p.base.saturation.saturated ? Verdict::kWarn : Verdict::kPass;
  return p;
}

// A later batch's profile (a redo, an extension): `pairs` more pairs, none
// discarded, their order continuing the `before` pairs measured already.
Profile later_batch(Profile profile, int pairs, int before) {
  profile = batch_profile(std::move(profile), pairs);
  if (profile.paired) profile.paired->order_offset = before;
  return profile;
}

// Disturbed pairs dropped and measured again; too few left to vote makes the
// run inconclusive, as a saturated one is: warn, never a baseline.
void apply_screening(const PairScreening& screening, int planned, PairedRecords& p,
                     std::vector<std::string>& notes) {
  if (screening.dropped == 0) return;
  notes.push_back(screening.note(planned));
  if (screening.inconclusive.empty()) return;
  for (auto* rec : {&p.cand, &p.base}) {
    rec->saturation.saturated = true;
    rec->saturation.reasons.push_back(screening.inconclusive);
  }
  p.base.verdict = Verdict::kWarn;
}

// A paired run judged as it stands: its figures, its other side as the
// baseline, the verdict at `settings`' level (a sequential look's own).
struct PairedLook {
  RunFigures now;
  BaselineSelection selection;
  Judgement judgement;
};

// `cost_pool`: earlier runs' launch noise of the counts' key (stored_count_noise()).
PairedLook paired_look(const PairedRecords& p, const PairedMeasurement& m, const Profile& profile,
                       const DecisionSettings& settings, const CountNoisePool& cost_pool = {}) {
  PairedLook look;
  int block = profile.paired->block;
  // Pairs of one launch share its luck: with paired.block above 1 the test
  // takes one value per launch and side.
  look.now = per_launch_figures(p.cand.iterations, service_cpu(m.candidate.windows), block);
  look.selection.baseline = Baseline{{}, {}, {}};
  look.selection.baseline->sample.pooled =
      per_launch_figures(p.base.iterations, service_cpu(m.baseline.windows), block);
  look.selection.baseline->sample.paired = true;
  if (block > 1) look.selection.baseline->sample.paired_unit = "blocks";  // launches, not pairs
  look.selection.cost.units = p.base.cost.launches;
  look.selection.cost.pool = cost_pool;
  DecisionSettings with_costs = settings;
  with_costs.extra_family = planned_cost_family(profile);
  look.judgement = judge(look.now, &look.selection.baseline->sample, profile.thresholds,
                         p.cand.saturation, with_costs);
  add_cost_checks(look.judgement, p.cand.cost, &look.selection.cost, profile.thresholds,
                  cost_looks(profile));
  return look;
}

// An extension's disturbed pairs do not vote; they are not measured again
// (the next batch, if the run is still undecided, is).
int drop_disturbed_batch(PairedMeasurement& more, const PairedSpec& spec) {
  int dropped = 0;
  size_t pairs =
      std::min(more.baseline.load.iterations.size(),
               std::min(more.candidate.load.iterations.size(),
                        std::min(more.baseline.windows.size(), more.candidate.windows.size())));
  for (size_t i = 0; i < pairs; ++i) {
    if (!pair_disturbance(more, i, spec)) continue;
    more.baseline.load.iterations[i].discarded = true;
    more.candidate.load.iterations[i].discarded = true;
    ++dropped;
  }
  return dropped;
}

// Both sides in one transaction: never half a pair.
void record_pair(const RunOptions& options, std::optional<BaselineStore>& store, PairedRecords& p,
                 GateResult& r, PairedSummary& paired) {
  p.cand.verdict = r.verdict;
  if (!options.record) {
    r.notes.push_back("not recorded (--no-record)");
    return;
  }
  if (!store) store = BaselineStore::open(options.store_path);
  auto ids = record_or_keep(*store, {p.base, p.cand}, [&] {
    return store->record_all({p.base, p.cand});
  });
  paired.baseline_run_id = ids[0];
  r.baseline_run_id = ids[0];
  r.baseline_run_ids = {ids[0]};
  r.run_id = ids[1];
  r.recorded = true;
}

// A paired run as far as it has been measured: both sides, how the pairs were
// screened, the records the store will keep, and the verdict they give now.
struct PairedState {
  PairedMeasurement m;
  PairScreening screening;
  PairedRecords p;
  PairedLook look;
  int taken = 0;               // pairs measured, extensions included: which look this is
  SequentialPlan plan;         // the context's, max_count lowered as repeat.budget runs out
  std::string cost_extension;  // the cost phase's added launches, as a note
  CountNoisePool cost_pool;    // earlier runs' launch noise of the counts' key
};

// What every stage of a paired run needs: the two sides' profiles, the run so
// far and where it is stored, the machine, and how to measure and when to stop.
struct PairedContext {
  const Profile& profile;
  Profile base_profile;
  GateRun& gate;
  std::optional<BaselineStore>& store;
  HostFingerprint host;
  SequentialPlan plan;  // the looks and their levels (the profile's confidence as plan.confidence)
  const Measurer& measurer;
  const std::atomic<bool>& stop;
  std::chrono::steady_clock::time_point started;  // the timed pairs' start, for repeat.budget
  CostInstrument instrument;  // found before the pairs: a required one missing ends the run there
};

// Pairs measured so far, redone ones included: where the next batch's order continues.
int measured_pairs(const PairedState& s) {
  return static_cast<int>(s.m.candidate.load.iterations.size());
}

int kept_pairs(const Profile& profile) {
  return profile.repeat.count - profile.repeat.discard;
}

// Stored with the max_count its looks were judged for, where repeat.budget
// lowered it, so that `compare` judges the run again at the same level.
std::string with_max_count(const std::string& profile_json, const SequentialPlan& plan) {
  auto doc = nlohmann::json::parse(profile_json, nullptr, false);
  if (!doc.is_object() || !doc["repeat"].is_object()) return profile_json;
  if (plan.extends())
    doc["repeat"]["max_count"] = plan.max_count;
  else
    doc["repeat"].erase("max_count");
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The records and the look, again from the measurement as it now stands; the
// pair key stays the run's first.
void judge_pairs(const PairedContext& c, PairedState& s,
                 std::vector<std::string>& screening_notes) {
  std::string key = s.p.cand.pair;
  s.p = paired_records(c.profile, c.base_profile, s.m, c.gate.partial(), c.host, s.screening);
  if (s.plan.budget_cut) {
    s.p.cand.profile_json = with_max_count(s.p.cand.profile_json, s.plan);
    s.p.base.profile_json = with_max_count(s.p.base.profile_json, s.plan);
  }
  if (!key.empty()) s.p.cand.pair = s.p.base.pair = key;
  apply_screening(s.screening, kept_pairs(c.profile), s.p, screening_notes);
  s.look = paired_look(s.p, s.m, c.profile, look_settings(s.plan, s.taken));
}

// The same after more pairs, or with the plan's levels changed: the first
// look's screening notes stand.
void judge_pairs_again(const PairedContext& c, PairedState& s) {
  std::vector<std::string> noted_already;
  judge_pairs(c, s, noted_already);
}

// The planned pairs, the disturbed ones dropped and measured again, judged.
PairedState measure_and_screen(const PairedContext& c, std::vector<std::string>& screening_notes) {
  PairedState s;
  s.taken = c.profile.repeat.count;
  s.plan = c.plan;
  s.m = c.measurer.paired(c.profile, c.base_profile, c.stop);
  c.gate.loaded(s.m.candidate.load);
  if (s.m.candidate.aborted) record_aborted(c.gate, c.store, c.profile, s.m.candidate, c.host);
  // Enough pairs must vote to reach the level each tested metric is judged at:
  // the single look's; a sequential run's stricter looks are what extending is for.
  double level = family_confidence(c.plan.confidence, family_bound(c.profile.thresholds));
  s.screening = screen_pairs(s.m, *c.profile.paired, level, [&](int pairs) {
    spdlog::info("paired: measuring {} disturbed pairs again", pairs);
    return c.measurer.paired(later_batch(c.profile, pairs, measured_pairs(s)),
                             later_batch(c.base_profile, pairs, measured_pairs(s)), c.stop);
  });
  if (s.m.candidate.aborted) record_aborted(c.gate, c.store, c.profile, s.m.candidate, c.host);
  judge_pairs(c, s, screening_notes);
  return s;
}

// repeat.max_count: more pairs, batch by batch, while the verdict is undecided.
std::optional<SequentialSummary> extend_while_undecided(const PairedContext& c, PairedState& s) {
  SequentialPlan& plan = s.plan;
  if (!plan.extends()) return std::nullopt;
  int& taken = s.taken;
  int dropped = 0;
  auto budget = [&] {
    plan = budgeted(plan, c.profile.repeat.budget, Clock::now() - c.started, taken);
  };
  budget();
  if (plan.budget_cut) judge_pairs_again(c, s);
  auto step = next_step(s.look.judgement, s.p.cand.saturation.saturated, c.stop, taken, plan);
  while (step.more) {
    int n = plan.next_batch(taken);
    spdlog::info("sequential: still undecided after {} pairs; measuring {} more", taken, n);
    auto more = c.measurer.paired(later_batch(c.profile, n, measured_pairs(s)),
                                  later_batch(c.base_profile, n, measured_pairs(s)), c.stop);
    dropped += drop_disturbed_batch(more, *c.profile.paired);
    append_measurement(s.m.baseline, more.baseline);
    append_measurement(s.m.candidate, more.candidate);
    taken += n;
    if (s.m.candidate.aborted) record_aborted(c.gate, c.store, c.profile, s.m.candidate, c.host);
    budget();
    judge_pairs_again(c, s);
    step = next_step(s.look.judgement, s.p.cand.saturation.saturated, c.stop, taken, plan);
  }
  auto why = stop_reason(step, s.p.cand.saturation.saturated, c.stop, taken, plan, "pairs");
  if (dropped > 0)
    why += "; " + std::to_string(dropped) + " added pairs dropped as disturbed, not voted";
  return sequential_summary(plan, taken, "pairs", why,
                            !step.futile.empty() && step.undecided.empty());
}

bool counted_metric(const std::string& key) {
  for (const auto& def : cost_metric_defs())
    if (def.key == key) return true;
  return false;
}

// The cost phase, after the timed pairs: both sides counted, then the last
// look judged again with the counts in it. A gated count still undecided after
// the first launches (inconclusive, or a fail not yet sure) asks for the
// launches a side that would decide it: its
// first look and the one after them each judge at half its level (cost_looks).
void count_both_sides(const PairedContext& c, PairedState& s) {
  if (!c.profile.cost.enabled()) return;
  auto judge_counts = [&](const PairedCost& cost) {
    s.p.cand.cost = cost.candidate;
    s.p.base.cost = cost.baseline;
    // Read once the key is known: the store's earlier runs of it (a pull
    // request's store holds the default branch's).
    if (c.store && s.cost_pool.empty() && cost.candidate.key == cost.baseline.key)
      s.cost_pool = stored_count_noise(*c.store, c.profile.name, cost.candidate.key);
    s.look = paired_look(s.p, s.m, c.profile, look_settings(s.plan, s.taken), s.cost_pool);
  };
  auto wanted = [&](const PairedCost& first) {
    judge_counts(first);
    int want = 0;
    for (const auto& check : s.look.judgement.checks)
      if (counted_metric(check.metric) && count_undecided(check))
        want = std::max(want, std::max(launches_to_decide(check), kTrustedLaunches));
    return want;
  };
  int series = c.store ? stored_cost_requests(*c.store, c.profile.name, c.instrument.name) : 0;
  auto cost = measure_paired_cost(c.profile, c.base_profile, c.instrument, c.stop,
                                  c.measurer.counter, wanted, series);
  judge_counts(cost);
  s.cost_extension = cost.extension;
}

// The verdict and the notes a user reads first: what was paired, and how.
GateResult paired_result(const PairedContext& c, PairedState& s, const RunOptions& options,
                         const std::vector<std::string>& screening_notes,
                         const std::optional<SequentialSummary>& sequential) {
  GateResult r = assemble(c.profile, s.p.cand, s.look.judgement, s.look.selection);
  r.baseline_commit = s.p.base.ci.commit;
  PairedSummary paired{shown_url(c.base_profile.target),
                       s.p.base.ci.commit,
                       std::nullopt,
                       s.p.cand.pair,
                       r.iterations_kept,
                       to_seconds(c.profile.paired->leg_warmup),
                       s.p.base.cost};
  record_pair(options, c.store, s.p, r, paired);
  r.notes.insert(
      r.notes.begin(),
      "paired with " + paired.baseline_url + ": " + std::to_string(paired.pairs) +
          " pairs of windows, " +
          (c.profile.paired->schedule == "duet" ? "both sides at once (duet)" : "in turns") +
          "; judged on their ratios");
  r.notes.insert(r.notes.end(), screening_notes.begin(), screening_notes.end());
  note_shared_load(s.p.cand.saturation, r.notes);
  r.paired = paired;
  if (s.p.cand.cost.ran()) {
    r.notes.push_back(cost_note(s.p.base.cost, "baseline side: "));
    r.notes.push_back(cost_note(s.p.cand.cost, "candidate side: "));
    if (!s.cost_extension.empty()) r.notes.push_back(s.cost_extension);
  } else if (auto note = cost_note(s.p.cand.cost); !note.empty()) {
    r.notes.push_back(note);
  }
  if (sequential) {
    r.notes.push_back(sequential_note(*sequential));
    r.sequential = sequential;
  }
  r.host_summary = host_summary({&s.m.candidate, &s.m.baseline}, s.look.now.summary);
  r.in_flight_at_end = s.m.candidate.load.in_flight_at_end;
  return r;
}

}  // namespace

// The whole flow of a paired run; the stored-baseline run's is run_gate's.
ExitStatus run_paired(const RunOptions& options, const Profile& profile, const EnvLookup& env,
                      std::ostream& out, const std::atomic<bool>& stop, const Measurer& measurer) {
  refuse_stored_baseline_flags(options);
  GateRun gate(options, &profile, env);
  return gate.guarded([&] {
    auto started = Clock::now();
    gate.check_outputs();
    auto store = open_store(options);
    auto plan = sequential_plan(profile);
    PairedContext c{profile,
                    paired_baseline_side(profile),
                    gate,
                    store,
                    placed_host(measurer, profile),
                    plan,
                    measurer,
                    stop,
                    started,
                    required_instrument(profile, measurer.counter)};
    auto doctor_warnings = preflight(profile);
    // Before the load: one installed program on both sides is an A/A run.
    std::optional<std::string> shared_exe;
    if (profile.service && c.base_profile.service)
      shared_exe = shared_installed_executable(*profile.service, *c.base_profile.service,
                                               service_path(*profile.service, env));
    std::vector<std::string> screening_notes;
    PairedState s = measure_and_screen(c, screening_notes);
    auto sequential = extend_while_undecided(c, s);
    count_both_sides(c, s);
    GateResult r = paired_result(c, s, options, screening_notes, sequential);
    if (shared_exe) {
      r.notes.push_back(shared_executable_warning(*shared_exe));
      r.warnings.push_back(r.notes.back());
    }
    r.host_summary.doctor_warnings = doctor_warnings;
    r.duration_s = to_seconds(Clock::now() - started);
    gate.write(r, out, store);
    return r.exit_code;
  });
}

// A stored paired run is judged again against its own other side, as it was.
BaselineSelection paired_selection(BaselineStore& store, const RunRecord& run,
                                   const RunOptions& options, int block) {
  std::string name = "run " + std::to_string(run.id);
  auto partner = store.paired_partner(run);
  if (run.kind == "paired-baseline")
    throw Error(name + " is the baseline side of a paired run" +
                (partner ? "; compare its candidate, run " + std::to_string(partner->id) : ""));
  if (options.baseline_run)
    throw Error("--baseline-run: " + name +
                " is paired; it is judged against its own baseline side");
  if (!partner) throw Error(name + " is paired, and its baseline side is no longer in the store");
  BaselineSelection selection;
  selection.baseline = Baseline{{partner->id}, {partner->ci.commit}, {}};
  selection.baseline->sample.pooled = stored_run_figures(*partner, block);
  if (block > 1) selection.baseline->sample.paired_unit = "blocks";
  selection.baseline->sample.paired = true;
  // The counted cost against the baseline side's own launches, as the run was
  // judged: without them a paired run that failed on its counts came back warn.
  if (partner->cost.ran() && partner->cost.key == run.cost.key) {
    selection.cost.units = partner->cost.launches;
    selection.cost.pool =
        stored_count_noise(store, run.profile_name, run.cost.key, std::min(run.id, partner->id));
  }
  return selection;
}

void note_shared_load(const Saturation& saturation, std::vector<std::string>& notes) {
  if (saturation.shared.empty()) return;
  std::string text = "busy load machine (";
  for (size_t i = 0; i < saturation.shared.size(); ++i)
    text += (i ? "; " : "") + saturation.shared[i];
  notes.push_back(text +
                  "): not saturation in paired mode, since both sides ran through it, in turns "
                  "or at once; it blurs their ratios, it does not bias them");
}

}  // namespace perfgate
