#pragma once

// Internal to the profile stage: the canonical forms of a parsed profile.

#include <string>
#include <string_view>

#include "profile_reader.h"

namespace perfgate::profile_detail {

/// SHA-256 of the run shape (target, load, repeat), `${...}` values as written.
std::string profile_hash(const Profile& profile, const Doc& raw);
/// The profile as perfgate understood it, secrets replaced by "<redacted>":
/// header values that look secret by name, and every header value written
/// with `${...}` in `raw` (a value from the environment is a secret until
/// shown otherwise).
std::string redacted_profile_json(const Profile& profile, const Doc& raw);
/// Service environment names that look like they hold secrets.
bool is_secret_env(std::string_view name);

}  // namespace perfgate::profile_detail
