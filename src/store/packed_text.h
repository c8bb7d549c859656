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

/// For binary values of their own format (histograms, which never start with
/// pack()'s tag): packed when that is smaller, else as they are.
std::string pack_if_smaller(std::string bytes);
/// The inverse of pack_if_smaller(): bytes that were not packed come back as they are.
std::string unpack_if_packed(std::string bytes, std::string_view what);

}  // namespace perfgate::packed_text
