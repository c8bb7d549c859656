#pragma once

// Internal to the gate stage: a run that measures more while its verdict is
// still undecided (`repeat.max_count`, core/sequential.h): paired mode only.
// Extensions go through the Measurer, batch by batch.

#include <functional>
#include <optional>
#include <string>

#include "measurement.h"
#include "perfgate/core/sequential.h"
#include "perfgate/profile/profile.h"
#include "perfgate/report/gate_result.h"

namespace perfgate {

/// The extension `profile` asks for: none outside paired mode.
SequentialPlan sequential_plan(const Profile& profile);

/// Why a stored-mode profile's repeat.max_count (and budget) took no effect,
/// if it asked for any.
std::optional<std::string> unextended_note(const Profile& profile);

/// How a look after `taken` maps a metric's single-look level to its own (empty:
/// no extension, the level stands). For DecisionSettings::look_level.
std::function<double(double)> look_level(const SequentialPlan& plan, int taken);

/// How the look after `taken` judges: the plan's confidence, the look's level
/// and its estimate level (SequentialPlan::estimate_confidence), for judge().
DecisionSettings look_settings(const SequentialPlan& plan, int taken);

/// The profile every look judges with: its confidence raised to the plan's look
/// confidence. Judging only; the stored profile keeps the user's.
Profile judging_profile(const Profile& profile, const SequentialPlan& plan);

/// A batch of `n` more iterations (pairs), none discarded, not extended itself.
Profile batch_profile(Profile profile, int n);

/// repeat.budget: the plan's max_count lowered to the batches that, at the
/// pace of the first `taken` (launches and waits included), end within the
/// budget. Fewer looks than planned only make each later one less strict
/// than its boundary allows; the first looks were judged stricter still.
SequentialPlan budgeted(SequentialPlan plan, Nanos budget, Nanos elapsed, int taken);

/// Appends `more`'s iterations after `to`'s (renumbered), with their windows,
/// wall times and host samples; a signal during `more` marks `to` aborted.
void append_measurement(Measurement& to, const Measurement& more);

/// The result's record of a sequential run, and its note.
SequentialSummary sequential_summary(const SequentialPlan& plan, int taken, const std::string& unit,
                                     const std::string& stopped, bool futility);
std::string sequential_note(const SequentialSummary& s);

}  // namespace perfgate
