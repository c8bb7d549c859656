#include "perfgate/host/cost_key.h"

#include <gnu/libc-version.h>

#include <fstream>

#include "perfgate/core/sha256.h"

namespace perfgate {
namespace {

// The first processor's vendor_id, model name and flags lines of /proc/cpuinfo.
std::string cpu_identity() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, out;
  int found = 0;
  while (found < 3 && std::getline(in, line)) {
    for (const char* key : {"vendor_id", "model name", "flags"})
      if (line.rfind(key, 0) == 0) out += line + "\n", ++found;
  }
  return out;
}

}  // namespace

std::string cost_key(const std::string& instrument, const std::string& version,
                     const std::string& options, const CostSpec& spec) {
  std::string shape = std::to_string(spec.requests) + "x" + std::to_string(spec.connections);
  std::string all = instrument + "\n" + version + "\n" + options + "\n" + cpu_identity() +
                    gnu_get_libc_version() + "\n" + shape + " warm-up " +
                    std::to_string(spec.warmup_requests);
  return instrument + " " + version + " glibc-" + gnu_get_libc_version() + " " + shape + " #" +
         sha256_hex(all).substr(0, 16);
}

}  // namespace perfgate
