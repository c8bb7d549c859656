#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace perfgate {

/// CPU numbers, ascending and unique: a set of cores as the kernel's lists
/// write it ("0-2,5" in cpuset.cpus and Cpus_allowed_list).
using CpuList = std::vector<int>;

/// Parses "0", "0-3", "0,2-3"; throws Error naming the text for anything else
/// (an empty list, a reversed range, a number past 4095).
CpuList parse_cpu_list(std::string_view text);

/// The kernel's form: "0-2,5"; "" for an empty list.
std::string format_cpu_list(const CpuList& cpus);

}  // namespace perfgate
