#include "perfgate/host/callgrind_session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

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

// "callgrind.out.1234" -> {1234, final}, "callgrind.out.1234.5" -> {1234, a part};
// pid 0 for any other name.
struct DumpName {
  pid_t pid = 0;
  bool part = false;
};

DumpName dump_name(const std::string& name) {
  static const std::string kPrefix = "callgrind.out.";
  if (name.rfind(kPrefix, 0) != 0) return {};
  std::string rest = name.substr(kPrefix.size());
  size_t dot = rest.find('.');
  std::string digits = rest.substr(0, dot);
  auto numeric = [](const std::string& t) {
    return !t.empty() && t.size() <= 9 &&
           std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!numeric(digits) || (dot != std::string::npos && !numeric(rest.substr(dot + 1)))) return {};
  return {static_cast<pid_t>(std::atol(digits.c_str())), dot != std::string::npos};
}

std::vector<std::string> dump_files(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (dump_name(entry.path().filename().string()).pid) out.push_back(entry.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> counted_dump_files(const DumpMark& mark,
                                            const std::vector<pid_t>& answered,
                                            const std::vector<std::string>& after_dump,
                                            const std::vector<std::string>& after_exit) {
  auto dumped = [&answered](pid_t pid) {
    return std::find(answered.begin(), answered.end(), pid) != answered.end();
  };
  std::set<std::string> out;
  for (const auto& name : after_dump) {
    auto d = dump_name(name);
    if (d.pid && d.part && dumped(d.pid) && !mark.contains(name)) out.insert(name);
  }
  for (const auto& name : after_exit) {
    auto d = dump_name(name);
    if (d.pid && !dumped(d.pid) && !mark.contains(name)) out.insert(name);
  }
  return {out.begin(), out.end()};
}

// Runtimes Valgrind cannot run: Go's (its signals and stacks; its binaries
// carry a .go.buildinfo section) and the sanitizers' (their shadow memory).
// Looked for in the program that serves: through `sh -c "exec ./server"` too.
std::string valgrind_cannot_run(const std::vector<std::string>& command,
                                const std::filesystem::path& cwd) {
  if (command.empty()) return "";
  auto [argv, program] = served_program(command, cwd);
  std::string named =
      "the service \"" + argv.front() + "\"" +
      (argv.front() == command.front() ? "" : " (started by " + command.front() + ")");
  auto sections = elf_sections(program, {".dynstr"});
  if (sections.contains(".go.buildinfo"))
    return named + " is a Go program, and Go's runtime does not run under Valgrind";
  const std::string& dynstr = sections[".dynstr"];
  for (const char* lib : {"libasan.so", "libtsan.so", "libhwasan.so", "libmsan.so"})
    if (dynstr.find(lib) != std::string::npos)
      return named + " is built with a sanitizer (" +
             std::string(lib).substr(3, std::string(lib).find('.') - 3) +
             "), which cannot run under Valgrind";
  return "";
}

std::string valgrind_version(std::string* problem) {
  auto said = [&](std::string why) {
    if (problem) *problem = std::move(why);
    return std::string();
  };
  if (find_executable("valgrind").empty())
    return said("valgrind is not installed (Debian: apt-get install valgrind)");
  try {
    auto out = run_child({"valgrind", "--version"}, std::chrono::seconds(10));
    // A hung or broken valgrind is not a missing one (issue 50, item 15).
    if (out.timed_out) return said("valgrind --version did not answer within 10s");
    if (out.exit_code != 0 || out.output.rfind("valgrind-", 0) != 0) {
      std::string first = out.output.substr(0, out.output.find_first_of("\r\n")).substr(0, 200);
      return said("valgrind --version failed (exit status " + std::to_string(out.exit_code) + ")" +
                  (first.empty() ? "" : ": " + first));
    }
    return out.output.substr(0, out.output.find_first_of("\r\n"));
  } catch (const Error& e) {
    return said(std::string("valgrind cannot be started: ") + e.what());
  }
}

CallgrindSession::CallgrindSession(fs::path dir, CallgrindOptions options)
    : dir_(std::move(dir)), options_(options) {}

// Every process dumps before it forks (a pattern: glibc's fork, its _Fork,
// Python's os_fork and the like): the child starts with nothing inherited, so
// its final dump holds its own work alone and each count is in one dump only.
constexpr const char* kDumpBeforeFork = "--dump-before=*fork";

std::string CallgrindSession::counting_options() const {
  std::string o = "--tool=callgrind --instr-atstart=no " + std::string(kDumpBeforeFork);
  // A fixed geometry: callgrind would otherwise take the host's caches, and
  // runners of one CPU model still report them differently.
  if (options_.cache_sim)
    o += " --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64";
  if (options_.systime) o += " --collect-systime=yes";
  return o;
}

std::vector<std::string> CallgrindSession::wrap(const std::vector<std::string>& command) const {
  std::vector<std::string> argv = {"valgrind", "--tool=callgrind", "--instr-atstart=no",
                                   kDumpBeforeFork};
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

std::vector<pid_t> CallgrindSession::monitor(const std::string& command, Nanos timeout) const {
  auto pids_now = pids();
  if (pids_now.empty())
    throw Error("cost phase: no process of the service runs under callgrind (it exited?)");
  std::vector<pid_t> answered;
  for (pid_t pid : pids_now) {
    std::vector<std::string> argv = {"vgdb", "--vgdb-prefix=" + (dir_ / "vgdb").string(),
                                     "--pid=" + std::to_string(pid)};
    argv.push_back(command);
    auto out = run_child(argv, timeout);
    if (out.exit_code == 0) {
      answered.push_back(pid);
      continue;
    }
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
  return answered;
}

DumpMark CallgrindSession::mark() const {
  auto files = dump_files(dir_);
  return {files.begin(), files.end()};
}

CountedDumps CallgrindSession::dump_since(const DumpMark& mark,
                                          const std::function<std::vector<pid_t>()>& running,
                                          Nanos timeout) const {
  auto answered = monitor("dump perfgate", timeout);
  std::sort(answered.begin(), answered.end());
  return sum_counted_dumps(dir_, mark, answered, dump_files(dir_), running, timeout);
}

CountedDumps sum_counted_dumps(const fs::path& dir, const DumpMark& mark,
                               const std::vector<pid_t>& answered,
                               const std::vector<std::string>& after_dump,
                               const std::function<std::vector<pid_t>()>& running, Nanos timeout) {
  // Children that served the last requests may still be exiting: their final
  // dumps are written as they end.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::vector<pid_t> left;
    for (pid_t pid : running())
      if (!std::binary_search(answered.begin(), answered.end(), pid)) left.push_back(pid);
    if (left.empty()) break;
    if (std::chrono::steady_clock::now() > deadline)
      throw Error("cost phase: " + std::to_string(left.size()) +
                  " process(es) of the service (first: PID " + std::to_string(left.front()) +
                  ") still ran " + format_duration(timeout) +
                  " after the counted requests without answering callgrind's dump: their "
                  "counts cannot be read (cost.timeout waits longer)");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CountedDumps out;
  std::set<pid_t> processes, ended;
  for (const auto& name : counted_dump_files(mark, answered, after_dump, dump_files(dir))) {
    fs::path file = dir / name;
    auto read = read_regular_bounded(file, kMaxDumpBytes);
    if (read.not_regular)
      throw Error("cost phase: " + file.string() +
                  " is not a regular file (a link, FIFO or device put in callgrind's place): "
                  "the count cannot be read");
    if (read.error || read.too_large) throw Error(file.string() + ": cannot read the dump");
    auto d = dump_name(name);
    if (read.bytes.empty())  // created at its first dump, never written: no fini ran
      throw Error("cost phase: process " + std::to_string(d.pid) +
                  " of the service ended without writing its counts (killed by a signal?): "
                  "the count would leave its work out");
    add_totals(out.totals, parse_callgrind_dump(read.bytes, file.string()));
    processes.insert(d.pid);
    if (!std::binary_search(answered.begin(), answered.end(), d.pid)) ended.insert(d.pid);
  }
  out.processes = static_cast<int>(processes.size());
  out.ended = static_cast<int>(ended.size());
  return out;
}

std::string callgrind_unavailable(const std::vector<std::string>& command,
                                  const std::filesystem::path& cwd, std::string& version) {
  std::string problem;
  version = valgrind_version(&problem);
  if (version.empty()) return problem;
  if (find_executable("vgdb").empty()) return "vgdb (valgrind's remote control) is not on PATH";
  return valgrind_cannot_run(command, cwd);
}

}  // namespace perfgate
