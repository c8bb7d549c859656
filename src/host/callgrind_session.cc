#include "perfgate/host/callgrind_session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "perfgate/core/bounded_read.h"
#include "perfgate/core/error.h"
#include "perfgate/host/child_command.h"
#include "perfgate/host/executable_file.h"

namespace perfgate {
namespace fs = std::filesystem;
namespace {

// A dump of a big service is a few MiB; anything past this is not ours.
constexpr size_t kMaxDumpBytes = 256u << 20;

// "vgdb-from-vgdb-to-1234-by-USER-on-HOST" -> 1234; 0 for any other name.
pid_t fifo_pid(const std::string& name) {
  static const std::string kPrefix = "vgdb-from-vgdb-to-";
  if (name.rfind(kPrefix, 0) != 0) return 0;
  size_t end = name.find("-by-", kPrefix.size());
  if (end == std::string::npos) return 0;
  std::string digits = name.substr(kPrefix.size(), end - kPrefix.size());
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return 0;
  return static_cast<pid_t>(std::atol(digits.c_str()));
}

// The newest part ("callgrind.out.PID.N", highest N) of one process's dumps.
fs::path newest_part(const fs::path& dir, pid_t pid) {
  std::string stem = "callgrind.out." + std::to_string(pid) + ".";
  fs::path best;
  long best_part = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(stem, 0) != 0) continue;
    long part = std::atol(name.c_str() + stem.size());
    if (part > best_part) best_part = part, best = entry.path();
  }
  return best;
}

}  // namespace

// Runtimes Valgrind cannot run: Go's (its signals and stacks; its binaries
// carry a .go.buildinfo section) and the sanitizers' (their shadow memory).
std::string valgrind_cannot_run(const std::string& command) {
  auto sections = elf_sections(find_executable(command), {".dynstr"});
  if (sections.contains(".go.buildinfo"))
    return "the service \"" + command +
           "\" is a Go program, and Go's runtime does not run under Valgrind";
  const std::string& dynstr = sections[".dynstr"];
  for (const char* lib : {"libasan.so", "libtsan.so", "libhwasan.so", "libmsan.so"})
    if (dynstr.find(lib) != std::string::npos)
      return "the service \"" + command + "\" is built with a sanitizer (" +
             std::string(lib).substr(3, std::string(lib).find('.') - 3) +
             "), which cannot run under Valgrind";
  return "";
}

std::string valgrind_version() {
  try {
    auto out = run_child({"valgrind", "--version"}, std::chrono::seconds(10));
    if (out.exit_code != 0 || out.output.rfind("valgrind-", 0) != 0) return "";
    return out.output.substr(0, out.output.find_first_of("\r\n"));
  } catch (const Error&) {
    return "";
  }
}

CallgrindSession::CallgrindSession(fs::path dir, CallgrindOptions options)
    : dir_(std::move(dir)), options_(options) {}

std::string CallgrindSession::counting_options() const {
  std::string o = "--tool=callgrind --instr-atstart=no";
  // A fixed geometry: callgrind would otherwise take the host's caches, and
  // runners of one CPU model still report them differently.
  if (options_.cache_sim)
    o += " --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64";
  if (options_.systime) o += " --collect-systime=yes";
  return o;
}

std::vector<std::string> CallgrindSession::wrap(const std::vector<std::string>& command) const {
  std::vector<std::string> argv = {"valgrind", "--tool=callgrind", "--instr-atstart=no"};
  if (options_.cache_sim)
    for (const char* o :
         {"--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"})
      argv.emplace_back(o);
  if (options_.systime) argv.emplace_back("--collect-systime=yes");
  argv.insert(argv.end(),
              {"--trace-children=yes", "--vgdb=yes", "--vgdb-prefix=" + (dir_ / "vgdb").string(),
               "--callgrind-out-file=" + (dir_ / "callgrind.out.%p").string(),
               "--log-file=" + (dir_ / "valgrind.%p.log").string()});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<pid_t> CallgrindSession::pids() const {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec))
    if (pid_t pid = fifo_pid(entry.path().filename().string())) out.push_back(pid);
  std::sort(out.begin(), out.end());
  return out;
}

void CallgrindSession::monitor(const std::string& command, Nanos timeout) const {
  auto pids_now = pids();
  if (pids_now.empty())
    throw Error("cost phase: no process of the service runs under callgrind (it exited?)");
  for (pid_t pid : pids_now) {
    std::vector<std::string> argv = {"vgdb", "--vgdb-prefix=" + (dir_ / "vgdb").string(),
                                     "--pid=" + std::to_string(pid)};
    argv.push_back(command);
    auto out = run_child(argv, timeout);
    if (out.exit_code == 0) continue;
    // A short-lived helper of the service (a shell's child) may end meanwhile.
    auto alive = pids();
    if (!std::binary_search(alive.begin(), alive.end(), pid)) continue;
    std::string said = out.output.substr(0, 300);
    std::replace(said.begin(), said.end(), '\n', ' ');
    throw Error("cost phase: vgdb \"" + command + "\" to pid " + std::to_string(pid) +
                (out.timed_out ? " got no answer within " + format_duration(timeout) : " failed") +
                (said.empty() ? "" : ": " + said) +
                " (vgdb needs ptrace of the service: a container may need SYS_PTRACE)");
  }
}

EventTotals CallgrindSession::last_dump() const {
  EventTotals sum;
  for (pid_t pid : pids()) {
    fs::path part = newest_part(dir_, pid);
    if (part.empty())
      throw Error("cost phase: process " + std::to_string(pid) + " wrote no callgrind dump in " +
                  dir_.string());
    auto read = read_bounded(part, kMaxDumpBytes);
    if (read.error || read.too_large) throw Error(part.string() + ": cannot read the dump");
    add_totals(sum, parse_callgrind_dump(read.bytes, part.string()));
  }
  return sum;
}

std::string callgrind_unavailable(const std::string& service_command, std::string& version) {
  version = valgrind_version();
  if (version.empty()) return "valgrind is not installed (Debian: apt-get install valgrind)";
  if (find_executable("vgdb").empty()) return "vgdb (valgrind's remote control) is not on PATH";
  return valgrind_cannot_run(service_command);
}

}  // namespace perfgate
