#include "perfgate/report/github_annotations.h"

#include <algorithm>

#include <string>
#include <vector>

#include "perfgate/report/report_format.h"

namespace perfgate {
namespace {

// printable() keeps CR, LF and tab, which are escaped below or harmless.
std::string escape_data(std::string_view raw) {
  std::string out;
  for (char c : report::printable(raw)) {
    if (c == '%') {
      out += "%25";
    } else if (c == '\r') {
      out += "%0D";
    } else if (c == '\n') {
      out += "%0A";
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_property(std::string_view raw) {
  std::string out;
  for (char c : escape_data(raw)) {
    if (c == ':') {
      out += "%3A";
    } else if (c == ',') {
      out += "%2C";
    } else {
      out += c;
    }
  }
  return out;
}

const char* level_of(Verdict v) {
  switch (v) {
    case Verdict::kFail:
    case Verdict::kError:
      return "error";
    case Verdict::kWarn:
      return "warning";
    case Verdict::kPass:
      break;
  }
  return "notice";
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : separator) + part;
  return out;
}

// True when a check or saturation already says why the verdict is not a pass.
bool explained(const GateResult& r) {
  if (r.saturation.saturated) return true;
  for (const auto& check : r.checks)
    if (check.gated && check.verdict != Verdict::kPass) return true;
  return false;
}

}  // namespace

std::string github_command(std::string_view level, std::string_view title,
                           std::string_view message) {
  return "::" + std::string(level) + " title=" + escape_property(title) +
         "::" + escape_data(message) + "\n";
}

std::string github_annotations(const GateResult& r) {
  std::string prefix = "perfgate " + (r.profile_name.empty() ? "" : r.profile_name + ": ");
  if (r.verdict == Verdict::kError)
    return github_command("error", prefix + "error", r.error.empty() ? "no verdict" : r.error);
  std::string out;
  // A shard is measured, not judged: perfgate merge gives the verdict.
  for (const auto& check : r.checks)
    if (!r.shard && check.gated && check.verdict != Verdict::kPass)
      out += github_command(level_of(check.verdict), prefix + check.metric,
                            check.message.empty() ? check.metric : check.message);
  if (r.saturation.saturated) {
    std::string reasons = r.saturation.reasons.empty() ? "load machine saturated"
                                                       : joined(r.saturation.reasons, "; ");
    out += github_command("warning", prefix + "saturated",
                          "inconclusive, the load machine was the bottleneck: " + reasons);
  }
  const char* note_level = explained(r) ? "notice" : level_of(r.verdict);
  for (const auto& note : r.notes) {
    bool warning = std::find(r.warnings.begin(), r.warnings.end(), note) != r.warnings.end();
    out += github_command(warning ? "warning" : note_level, prefix + "note", note);
  }
  return out;
}

}  // namespace perfgate
