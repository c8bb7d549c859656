#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace perfgate {

/// Which response statuses count as a successful request: 2xx and 3xx unless a
/// request's `success_statuses` says otherwise. Both engines judge every
/// response with contains(), so the native and the curl load agree.
struct SuccessStatuses {
  /// Inclusive ranges of codes; the default is 200-399.
  std::vector<std::pair<int, int>> ranges = {{200, 399}};

  bool contains(int status) const;
  /// The statuses a class holds by default (2xx and 3xx): what a response of
  /// `status` counts as when no request says otherwise.
  static bool default_success(int status);
  /// One profile term: a code ("404"), a class ("4xx") or a range
  /// ("200-299"), from 200 to 599 (1xx is never a final answer). nullopt with
  /// `why` set when it is none of these.
  static std::optional<std::pair<int, int>> parse_term(std::string_view term, std::string& why);
  friend bool operator==(const SuccessStatuses&, const SuccessStatuses&) = default;
};

}  // namespace perfgate
