#include "perfgate/load/arrival_schedule.h"

#include <algorithm>
#include <cmath>

#include "perfgate/core/checked.h"
#include "perfgate/core/error.h"

namespace perfgate {
namespace {

// Doubles of seconds keep rates like 333.3/s exact enough; the result is
// rounded to the nanosecond once, so the schedule never drifts. A time past
// Nanos' range saturates: wrapped, it was before t0, and due_before() counted
// for ever.
Nanos from_seconds(double s) {
  return saturated_seconds(s);
}

}  // namespace

ArrivalSchedule::ArrivalSchedule(double rate_per_s, int connections)
    : rate_(rate_per_s), connections_(connections) {
  if (!(rate_per_s >= kRequestRate.min))
    throw Error("load.rate must be at least " + short_number(kRequestRate.min) +
                " requests/s for the open model");
  // Past a request per nanosecond the schedule's times stop advancing with k,
  // and due_before() would count for ever.
  if (!(rate_per_s <= kMaxRate))
    throw Error("load.rate must be at most 1e9 requests/s for the open model");
  if (connections < 1) throw Error("the open model needs at least one connection");
}

Nanos ArrivalSchedule::interval() const {
  return from_seconds(connections_ / rate_);
}

Nanos ArrivalSchedule::intended(int c, uint64_t k) const {
  return from_seconds((static_cast<double>(c) + static_cast<double>(k) * connections_) / rate_);
}

uint64_t ArrivalSchedule::due_before(int c, Nanos t) const {
  // k is due when c/rate + k*N/rate < t, i.e. k < (t*rate - c) / N.
  double bound = (to_seconds(t) * rate_ - c) / connections_;
  if (bound <= 0) return 0;
  auto k = static_cast<uint64_t>(std::ceil(bound));
  // ceil of an exact integer bound is that integer: k itself is not before t.
  while (k > 0 && intended(c, k - 1) >= t) --k;
  while (intended(c, k) < t) ++k;
  return k;
}

Nanos ArrivalSchedule::late_after() const {
  return std::max<Nanos>(std::chrono::milliseconds(1), interval() / 10);
}

}  // namespace perfgate
