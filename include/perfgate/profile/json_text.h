#pragma once

// JSON to and from the outside world. Texts perfgate stores or passes on
// (branch names, commit messages, reasons, process names) are bytes, not
// always UTF-8, and nlohmann's dump() throws on such bytes; and a document
// from outside (a shard, an export line, an API's answer) may nest deep
// enough for the recursive dump() or destructor to overflow the stack.

#include <istream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace perfgate {

/// The deepest nesting a document from outside may have; perfgate's own
/// documents nest a handful of levels.
inline constexpr int kMaxJsonDepth = 100;

/// `value` as JSON text, bytes that are not UTF-8 replaced by U+FFFD.
std::string json_text(const nlohmann::json& value, int indent = -1);

/// Parses a document from outside; throws Error "WHAT: ..." when it nests
/// deeper than kMaxJsonDepth, nlohmann's parse_error when it is no JSON.
nlohmann::json parse_json(std::string_view text, std::string_view what);
nlohmann::json parse_json(std::istream& in, std::string_view what);
/// The same, but a document that is no JSON or too deep comes back discarded.
nlohmann::json parse_json_or_discarded(std::string_view text);
nlohmann::json parse_json_or_discarded(std::istream& in);

}  // namespace perfgate
