#pragma once

#include <stdexcept>
#include <string>

namespace perfgate {

/// Any failure that prevents a verdict: bad input, unreachable target, unusable
/// store. The message already carries its context (file, key, line, URL) and is
/// printed as one line by the CLI, which exits with ExitStatus::kError.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace perfgate
