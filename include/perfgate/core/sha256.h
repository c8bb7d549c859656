#pragma once

#include <string>
#include <string_view>

namespace perfgate {

/// SHA-256 (FIPS 180-4) of `data`, as 64 lowercase hex digits. Used for profile
/// hashes, so it must never change for the same input.
std::string sha256_hex(std::string_view data);

}  // namespace perfgate
