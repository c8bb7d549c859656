#pragma once

#include <string>

#include "perfgate/profile/profile.h"

namespace perfgate {

/// What two cost phases must share for their counts to compare: the
/// instrument's name and version, the options that change counts, the CPU's
/// vendor, model and flags (instruction selection in glibc's string functions
/// follows them), glibc's version, and the phase's requests and connections.
/// Readable head, then a digest of the rest:
/// "callgrind valgrind-3.19.0 glibc-2.36 1000x1 #3f2a...".
std::string cost_key(const std::string& instrument, const std::string& version,
                     const std::string& options, const CostSpec& spec);

}  // namespace perfgate
