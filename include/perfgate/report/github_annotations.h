#pragma once

#include <string>
#include <string_view>

#include "perfgate/report/gate_result.h"

namespace perfgate {

/// One GitHub Actions workflow command line, `::LEVEL title=TITLE::MESSAGE\n`,
/// with GitHub's escaping: %, CR and LF in both parts, also : and , in the
/// title (a property). Other control characters become U+FFFD, so that a name
/// can neither end the command nor colour the log. `level` is "error",
/// "warning" or "notice".
std::string github_command(std::string_view level, std::string_view title,
                           std::string_view message);

/// The workflow commands for a gated run, one per line: an ::error per failed
/// check, a ::warning per warned check and for saturation, an ::error for a run
/// without a verdict, and a ::notice per note. A warn or fail that no check and
/// no saturation explains (no comparable baseline, say) gives its notes at the
/// verdict's level, so that the checks page says why.
std::string github_annotations(const GateResult& result);

}  // namespace perfgate
