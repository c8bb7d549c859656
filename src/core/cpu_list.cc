#include "perfgate/core/cpu_list.h"

#include <algorithm>
#include <charconv>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

// Past the kernel's usual NR_CPUS: a typo, not a core.
constexpr int kMaxCpu = 4095;

int parse_cpu(std::string_view text, std::string_view whole) {
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > kMaxCpu)
    throw Error("bad CPU list \"" + std::string(whole) +
                "\": expected CPU numbers 0-4095 like \"0\", \"1-3\" or \"0,2-3\"");
  return value;
}

}  // namespace

CpuList parse_cpu_list(std::string_view text) {
  CpuList out;
  std::string_view rest = text;
  while (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  if (rest.empty()) throw Error("bad CPU list \"\": names no CPU");
  while (true) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    auto dash = item.find('-');
    int first = parse_cpu(item.substr(0, dash), text);
    int last = dash == std::string_view::npos ? first : parse_cpu(item.substr(dash + 1), text);
    if (last < first)
      throw Error("bad CPU list \"" + std::string(text) + "\": range " + std::string(item) +
                  " runs backwards");
    for (int cpu = first; cpu <= last; ++cpu) out.push_back(cpu);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_cpu_list(const CpuList& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace perfgate
