#pragma once

#include <cstdint>

#include "perfgate/core/units.h"

namespace perfgate {

/// When each request of the open model should be sent, wrk2's way: `rate`
/// requests/s over all connections, each connection sending every
/// `connections / rate` seconds, the connections staggered by `1 / rate` so
/// that the arrivals are evenly spaced. Times are offsets from the run's t0.
/// Connection c's k-th request (both 0-based) is intended at
///   c / rate + k * connections / rate.
class ArrivalSchedule {
 public:
  /// One request per nanosecond: the resolution of the intended times.
  static constexpr double kMaxRate = 1e9;

  /// Throws Error unless kRequestRate.min <= rate <= kMaxRate and connections > 0.
  ArrivalSchedule(double rate_per_s, int connections);

  double rate() const { return rate_; }
  /// Time between two requests of one connection.
  Nanos interval() const;
  /// Intended send time of connection `c`'s request `k`.
  Nanos intended(int c, uint64_t k) const;
  /// Requests of connection `c` intended strictly before `t`.
  uint64_t due_before(int c, Nanos t) const;
  /// A request sent more than this after its intended time counts as late:
  /// a tenth of an interval (at least 1 ms), beyond the scheduler's jitter.
  Nanos late_after() const;

 private:
  double rate_;
  int connections_;
};

}  // namespace perfgate
