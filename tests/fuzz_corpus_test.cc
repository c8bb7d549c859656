// The fuzz targets (tests/fuzz), run by the suite under ASan + UBSan: every
// input of each target's corpus, then seeded mutations of them (bytes flipped,
// inserted, deleted, chunks repeated, two inputs spliced). Deterministic, a few
// seconds; a crash, a trap (a target's invariant) or a sanitizer report fails
// it. tests/fuzz/run.sh runs libFuzzer itself, coverage-guided, on demand.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" {
int perfgate_fuzz_profile(const uint8_t*, size_t);
int perfgate_fuzz_units(const uint8_t*, size_t);
int perfgate_fuzz_histogram(const uint8_t*, size_t);
int perfgate_fuzz_json_source_map(const uint8_t*, size_t);
int perfgate_fuzz_env_substitution(const uint8_t*, size_t);
int perfgate_fuzz_cli_arguments(const uint8_t*, size_t);
#if PERFGATE_FUZZ_HTTP_RESPONSE
int perfgate_fuzz_http_response(const uint8_t*, size_t);
#endif
}

namespace perfgate {
namespace {

namespace fs = std::filesystem;

struct Target {
  const char* name;
  int (*run)(const uint8_t*, size_t);
  int mutations;  // a few seconds under ASan each; CLI11's parse is the slow one
};

const Target kTargets[] = {
    {"profile", perfgate_fuzz_profile, 30000},
    {"units", perfgate_fuzz_units, 30000},
    {"histogram", perfgate_fuzz_histogram, 30000},
    {"json_source_map", perfgate_fuzz_json_source_map, 30000},
    {"env_substitution", perfgate_fuzz_env_substitution, 30000},
    {"cli_arguments", perfgate_fuzz_cli_arguments, 3000},
#if PERFGATE_FUZZ_HTTP_RESPONSE
    {"http_response", perfgate_fuzz_http_response, 30000},
#endif
};

std::vector<std::string> corpus(const std::string& name) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(fs::path(PERFGATE_FUZZ_CORPUS) / name)) {
    std::ifstream in(entry.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

std::string mutated(const std::vector<std::string>& inputs, std::mt19937_64& rng) {
  auto pick = [&rng](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  std::string s = inputs[pick(inputs.size())];
  for (int steps = 1 + static_cast<int>(pick(4)); steps > 0; --steps) {
    switch (pick(5)) {
      case 0:  // a byte flipped
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // a byte inserted, often a structural one
        s.insert(pick(s.size() + 1), 1, "\"{}[],:\\\n\r\0$%x9-"[pick(17)]);
        break;
      case 2:  // a range deleted
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
        }
        break;
      case 3:  // a chunk repeated
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.insert(at, s.substr(at, 1 + pick(32)));
        }
        break;
      default:  // spliced with another input
        const std::string& other = inputs[pick(inputs.size())];
        s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
    }
  }
  return s.substr(0, 64 * 1024);
}

// What a target prints (cli_arguments' help pages) goes nowhere while it runs.
class QuietStdout {
 public:
  QuietStdout() : saved_(dup(STDOUT_FILENO)) {
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    fflush(stdout);
    dup2(null, STDOUT_FILENO);
    close(null);
  }
  ~QuietStdout() {
    fflush(stdout);
    dup2(saved_, STDOUT_FILENO);
    close(saved_);
  }
  QuietStdout(const QuietStdout&) = delete;
  QuietStdout& operator=(const QuietStdout&) = delete;

 private:
  int saved_;
};

class FuzzCorpus : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzCorpus, EveryInputAndSeededMutationsOfItPass) {
  auto inputs = corpus(GetParam().name);
  ASSERT_FALSE(inputs.empty()) << "no corpus for " << GetParam().name;
  QuietStdout quiet;
  for (const auto& input : inputs)
    EXPECT_EQ(GetParam().run(reinterpret_cast<const uint8_t*>(input.data()), input.size()), 0);
  std::mt19937_64 rng(47);
  for (int i = 0; i < GetParam().mutations; ++i) {
    auto input = mutated(inputs, rng);
    ASSERT_EQ(GetParam().run(reinterpret_cast<const uint8_t*>(input.data()), input.size()), 0)
        << "mutation " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzCorpus, ::testing::ValuesIn(kTargets),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace perfgate
