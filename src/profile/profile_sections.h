#pragma once

// Internal to the profile stage: the readers of each section of a profile.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile_reader.h"

namespace perfgate::profile_detail {

/// Reads and checks a whole profile document; problems go to `problems`.
/// `base_dir` resolves relative `body_file` paths (the profile's folder).
Profile read_profile(const Doc& doc, Problems& problems, const std::filesystem::path& base_dir);

/// `target` and its optional `requests` mix.
TargetSpec read_target(const Section& root, const std::filesystem::path& base_dir);
std::vector<TargetSpec> read_requests(const Section& root, const TargetSpec& base,
                                      const std::filesystem::path& base_dir);

std::optional<std::string> name_problem(std::string_view name);
std::optional<std::string> env_name_problem(std::string_view name);
std::optional<std::string> header_name_problem(std::string_view name);
/// `placement` (profile_placement.cc): "auto" when absent.
PlacementSpec read_placement(const Section& root);
/// `cost` (profile_cost.cc): off when absent; fills the default limits of
/// instructions_per_request into `limits` when on and the profile sets none.
CostSpec read_cost(const Section& root, ThresholdSet& limits);
/// An http:// or https:// URL at `key`, checked; "" when absent or wrong.
std::string read_url(const Section& section, std::string_view key);

}  // namespace perfgate::profile_detail
