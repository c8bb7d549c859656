// The command line as CLI11 parses it, with every command registered: the input
// is the arguments, NUL-separated. Nothing runs; parsing may refuse with exit 3
// (or print help), never crash, hang or throw.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/cli/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> words = {"perfgate"};
  for (size_t start = 0; start <= input.size() && words.size() < 64;) {
    size_t end = std::min(input.find('\0', start), input.size());
    words.emplace_back(input.substr(start, end - start));
    start = end + 1;
  }
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  int exit_code = perfgate::parse_cli(static_cast<int>(words.size()), argv.data());
  if (exit_code != 0 && exit_code != 3) __builtin_trap();
  return 0;
}
