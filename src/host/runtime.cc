#include "perfgate/host/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

#include "perfgate/core/error.h"
#include "perfgate/host/child_command.h"
#include "perfgate/host/executable_file.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

// python, python3, python3.11, pypy3; node, nodejs; java. (No <regex>: GCC 12
// warns inside it under -O1 with the sanitizers, and CI builds with -Werror.)
std::string runtime_name(const std::string& file) {
  auto versioned = [&file](std::string_view stem) {
    if (file.rfind(stem, 0) != 0) return false;
    return std::all_of(file.begin() + static_cast<std::ptrdiff_t>(stem.size()), file.end(),
                       [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  };
  if (versioned("python") || versioned("pypy")) return "python";
  if (file == "node" || file == "nodejs") return "node";
  if (file == "java") return "java";
  return "";
}

std::string first_line(const std::string& text) {
  auto start = text.find_first_not_of(" \r\n");
  if (start == std::string::npos) return "";
  return text.substr(start, text.find_first_of("\r\n", start) - start).substr(0, 120);
}

constexpr const char* kNodeFlags[] = {"--predictable", "--predictable-gc-schedule", "--hash-seed=1",
                                      "--random-seed=1", "--no-opt"};

bool has_word(const std::vector<std::string>& words, const std::string& prefix) {
  for (const auto& w : words)
    if (w.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

std::optional<Runtime> detect_runtime(const std::vector<std::string>& command,
                                      const fs::path& cwd) {
  if (command.empty()) return std::nullopt;
  auto [argv, program] = served_program(command, cwd);
  // The name as started (a symlink python3 -> python3.11 names it either way).
  std::string name = runtime_name(fs::path(argv.front()).filename().string());
  if (name.empty() && !program.empty()) name = runtime_name(program.filename().string());
  if (name.empty()) return std::nullopt;
  Runtime r{name, "", program.empty() ? fs::path(argv.front()) : program, ""};
  // Two bytes first: an interpreter's binary may have no newline for megabytes.
  if (std::ifstream in(r.program, std::ios::binary); in) {
    char magic[2] = {};
    if (in.read(magic, 2) && magic[0] == '#' && magic[1] == '!') {
      std::string rest(118, '\0');
      in.getline(rest.data(), static_cast<std::streamsize>(rest.size()));
      r.shim = "#!" + std::string(rest.c_str());
    }
  }
  try {
    auto out = run_child({r.program.string(), name == "java" ? "-version" : "--version"},
                         std::chrono::seconds(10));
    if (out.exit_code == 0) r.version = first_line(out.output);
  } catch (const Error&) {
  }
  return r;
}

SteadySettings steady_settings(const Runtime& runtime, const std::vector<std::string>& command,
                               const std::vector<std::pair<std::string, std::string>>& env) {
  SteadySettings s{command, {}, ""};
  auto argv = effective_argv(command);
  if (runtime.name == "python") {
    bool set = std::getenv("PYTHONHASHSEED") != nullptr;
    for (const auto& [name, value] : env) set = set || name == "PYTHONHASHSEED";
    if (set) return s;
    s.env["PYTHONHASHSEED"] = "0";
    s.said = "python with PYTHONHASHSEED=0";
  } else if (runtime.name == "node") {
    if (has_word(argv, "--predictable") || has_word(argv, "--no-opt")) return s;
    std::string flags;
    for (const char* f : kNodeFlags) flags += std::string(" ") + f;
    if (argv == command) {
      s.command.insert(s.command.begin() + 1, std::begin(kNodeFlags), std::end(kNodeFlags));
    } else {
      // `sh -c "... node app.js"`: the flags after the first node word of the script.
      std::string& script = s.command[2];
      const std::string& word = argv.front();
      size_t at = 0;
      for (; (at = script.find(word, at)) != std::string::npos; at += word.size()) {
        bool starts = at == 0 || script[at - 1] == ' ' || script[at - 1] == '\t';
        size_t end = at + word.size();
        bool ends = end == script.size() || script[end] == ' ' || script[end] == '\t';
        if (starts && ends) break;
      }
      if (at == std::string::npos) return s;
      script.insert(at + word.size(), flags);
    }
    s.said = "node with V8's predictable flags (" + flags.substr(1) + ")";
  } else if (runtime.name == "java") {
    s.said =
        "java as started: the JIT compiles on timers, so counts move between launches; -Xint "
        "in the command steadies them at an interpreter's cost";
  }
  return s;
}

}  // namespace perfgate
