#include "pair_screening.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "perfgate/core/verdict.h"

namespace perfgate {
namespace {

// "foreign CPU 12% on the baseline side, 61% on the candidate side".
std::optional<std::string> differs(const char* what, double base, double cand, double limit) {
  if (std::abs(base - cand) <= limit) return std::nullopt;
  char text[128];
  std::snprintf(text, sizeof text, "%s %.0f%% on the baseline side, %.0f%% on the candidate side",
                what, base, cand);
  return text;
}

size_t pair_count(const PairedMeasurement& m) {
  return std::min({m.baseline.load.iterations.size(), m.candidate.load.iterations.size(),
                   m.baseline.windows.size(), m.candidate.windows.size()});
}

bool voting(const PairedMeasurement& m, size_t i) {
  return !m.baseline.load.iterations[i].discarded && !m.candidate.load.iterations[i].discarded;
}

void drop(PairedMeasurement& m, size_t i) {
  m.baseline.load.iterations[i].discarded = true;
  m.candidate.load.iterations[i].discarded = true;
}

// Iteration i of `from` becomes iteration `index` of `side`, with its window
// and its samples (the redo's samples lie after every earlier one).
void append_pair_side(Measurement& side, const Measurement& from, size_t i, int index) {
  Iteration it = from.load.iterations[i];
  it.index = index;
  it.discarded = false;
  side.load.iterations.push_back(std::move(it));
  WindowSummary window = from.windows[i];
  window.iteration = index;
  side.windows.push_back(window);
  if (i < from.wall_ms.size()) side.wall_ms.push_back(from.wall_ms[i]);
}

// Screens the pairs from `first` on; returns how many it dropped.
int drop_disturbed(PairedMeasurement& m, size_t first, const PairedSpec& spec, PairScreening& out) {
  int dropped = 0;
  for (size_t i = first; i < pair_count(m); ++i) {
    if (!voting(m, i)) continue;
    auto why = pair_disturbance(m, i, spec);
    if (!why) continue;
    drop(m, i);
    out.dropped_pairs.push_back(i);
    ++dropped;
    out.reasons.push_back("pair " + std::to_string(i + 1) + ": " + *why);
  }
  out.dropped += dropped;
  return dropped;
}

}  // namespace

std::optional<std::string> pair_disturbance(const PairedMeasurement& m, size_t index,
                                            const PairedSpec& spec) {
  for (const auto* side : {&m.baseline, &m.candidate})
    if (side->load.iterations[index].stats.responses == 0)
      return std::string("a stalled window on the ") +
             (side == &m.baseline ? "baseline" : "candidate") + " side (no response)";
  const WindowSummary& base = m.baseline.windows[index];
  const WindowSummary& cand = m.candidate.windows[index];
  if (base.samples == 0 || cand.samples == 0) return std::nullopt;  // nothing seen either way
  if (auto why = differs("foreign CPU", base.foreign_cpu_mean_pct, cand.foreign_cpu_mean_pct,
                         spec.disturbance_pct))
    return why;
  return differs("CPU steal", base.steal_mean_pct, cand.steal_mean_pct, spec.disturbance_pct);
}

std::string PairScreening::note(int planned) const {
  std::string text = std::to_string(dropped) + " of " + std::to_string(planned + redone) +
                     " pairs dropped as disturbed, not voted (";
  for (size_t i = 0; i < reasons.size(); ++i) text += (i ? "; " : "") + reasons[i];
  text += ")";
  if (redone > 0) text += "; " + std::to_string(redone) + " measured again";
  if (!inconclusive.empty()) text += "; too few undisturbed pairs: every pair voted, inconclusive";
  return text;
}

PairScreening screen_pairs(PairedMeasurement& m, const PairedSpec& spec, double confidence_pct,
                           const PairRedo& redo) {
  PairScreening out;
  int pending = drop_disturbed(m, 0, spec, out);
  int budget = spec.max_redos;
  while (pending > 0 && budget > 0 && !m.candidate.aborted) {
    int asked = std::min(pending, budget);
    PairedMeasurement more = redo(asked);
    size_t first = pair_count(m);
    size_t got = std::min<size_t>(static_cast<size_t>(asked), pair_count(more));
    for (size_t i = 0; i < got; ++i) {
      append_pair_side(m.baseline, more.baseline, i, static_cast<int>(first + i));
      append_pair_side(m.candidate, more.candidate, i, static_cast<int>(first + i));
    }
    m.baseline.samples.insert(m.baseline.samples.end(), more.baseline.samples.begin(),
                              more.baseline.samples.end());
    m.candidate.samples.insert(m.candidate.samples.end(), more.candidate.samples.begin(),
                               more.candidate.samples.end());
    m.candidate.aborted = m.baseline.aborted = more.candidate.aborted;
    budget -= asked;
    out.redone += static_cast<int>(got);
    if (got == 0) break;
    pending = pending - static_cast<int>(got) + drop_disturbed(m, first, spec, out);
  }
  int votes = 0;
  for (size_t i = 0; i < pair_count(m); ++i) votes += voting(m, i) ? 1 : 0;
  int needed = min_pairs_to_reach(confidence_pct);
  if (out.dropped == 0 || votes >= needed) return out;
  out.inconclusive = std::to_string(out.dropped) + " pairs disturbed, " +
                     std::to_string(out.redone) + " measured again (paired.max_redos " +
                     std::to_string(spec.max_redos) + "): " + std::to_string(votes) +
                     " undisturbed pairs, " + std::to_string(needed) +
                     " needed to ever fail; every pair kept for the figures, the verdict at most "
                     "a warn";
  // The figures still describe the run; the verdict cannot rest on them.
  for (size_t i : out.dropped_pairs) {
    m.baseline.load.iterations[i].discarded = false;
    m.candidate.load.iterations[i].discarded = false;
  }
  return out;
}

}  // namespace perfgate
