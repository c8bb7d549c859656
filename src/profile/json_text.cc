#include "perfgate/profile/json_text.h"

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

using json = nlohmann::json;

struct TooDeep {};

// Stops the parse at the first value deeper than the limit, before a deep
// document exists whose recursive dump() or destructor would overflow.
bool within_depth(int depth, json::parse_event_t, json&) {
  if (depth > kMaxJsonDepth) throw TooDeep{};
  return true;
}

[[noreturn]] void throw_too_deep(std::string_view what) {
  throw Error(std::string(what) + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
              " levels, which no perfgate document is");
}

}  // namespace

std::string json_text(const json& value, int indent) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
}

json parse_json(std::string_view text, std::string_view what) {
  try {
    return json::parse(text, within_depth);
  } catch (const TooDeep&) {
    throw_too_deep(what);
  }
}

json parse_json(std::istream& in, std::string_view what) {
  try {
    return json::parse(in, within_depth);
  } catch (const TooDeep&) {
    throw_too_deep(what);
  }
}

json parse_json_or_discarded(std::string_view text) {
  try {
    return json::parse(text, within_depth, false);
  } catch (const TooDeep&) {
    return json(json::value_t::discarded);
  }
}

json parse_json_or_discarded(std::istream& in) {
  try {
    return json::parse(in, within_depth, false);
  } catch (const TooDeep&) {
    return json(json::value_t::discarded);
  }
}

}  // namespace perfgate
