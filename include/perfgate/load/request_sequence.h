#pragma once

// The cost phase's requests: not a load but a fixed script. Exactly N requests
// of the profile's target (or mix, in a fixed order), each connection carrying
// one request at a time, so that the service does the same work in the same
// order on every launch and its counted cost is repeatable.

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "perfgate/core/units.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

/// How the script went.
struct SequenceOutcome {
  int answered = 0;           // responses received
  int failed = 0;             // of them, not a success status of their request
  int reconnects = 0;         // connections the service closed and were opened again
  std::string first_failure;  // "status 500 on /x", for the message
};

/// The mix as a fixed sequence of `count` entries (indices into `mix`): smooth
/// weighted round robin, so each entry's share follows its weight and the
/// order is the same every time. A single target is all zeros.
std::vector<size_t> fixed_mix_order(const std::vector<TargetSpec>& mix, int count);

/// The profile's target or mix sent to plain http:// targets over `connections`
/// keep-alive connections, kept open from one send() to the next: a warm-up
/// and the counted requests share them, so no connection (and no server
/// thread) starts or ends inside the counted part.
class RequestSequence {
 public:
  /// Throws Error for a target that is not plain http://.
  RequestSequence(const Profile& profile, int connections, Nanos timeout);
  ~RequestSequence();
  RequestSequence(const RequestSequence&) = delete;
  RequestSequence& operator=(const RequestSequence&) = delete;

  /// Sends `count` requests in fixed_mix_order(): round r sends request
  /// r * connections + c on connection c, then reads the round's responses. Each
  /// response must come within the timeout. Throws Error when the service cannot
  /// be reached or stops answering; a non-success status is counted, not thrown.
  SequenceOutcome send(int count, const std::atomic<bool>& stop);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// One RequestSequence's send(): `count` requests over fresh connections.
SequenceOutcome send_sequence(const Profile& profile, int count, int connections, Nanos timeout,
                              const std::atomic<bool>& stop);

}  // namespace perfgate
