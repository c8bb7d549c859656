// Text the store keeps compressed (host samples, profiles, host fingerprints):
// zlib behind a one-byte tag and the original length (internal to the store).
#pragma once

#include <string>
#include <string_view>

namespace perfgate::packed_text {

/// The bytes a BLOB column holds for `text`; unpack(pack(t)) == t for every t.
std::string pack(std::string_view text);
/// The text back; throws Error naming `what` when the bytes are damaged.
std::string unpack(std::string_view bytes, std::string_view what);

}  // namespace perfgate::packed_text
