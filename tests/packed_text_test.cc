#include "store/packed_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

TEST(PackedText, RoundTripsEveryTextByteForByte) {
  std::string binary;
  for (int i = 0; i < 1000; ++i) binary += static_cast<char>(i * 7 % 256);
  // Built step by step: GCC 12 at -O1 with a precompiled header warns falsely
  // (-Warray-bounds) on a concatenated temporary inside a braced list.
  std::string long_text(100000, 'x');
  long_text.append("tail");
  std::vector<std::string> texts{std::string(), std::string("{}"), binary, long_text};
  for (const std::string& text : texts)
    EXPECT_EQ(packed_text::unpack(packed_text::pack(text), "test"), text);
}

TEST(PackedText, RepetitiveJsonShrinks) {
  std::string json = "[";
  for (int i = 0; i < 200; ++i) json += R"({"cpu_busy_pct":12.5,"load1":0.42},)";
  json += "{}]";
  EXPECT_LT(packed_text::pack(json).size(), json.size() / 10);
}

TEST(PackedText, DamagedBytesAreAnErrorNamingTheirPlace) {
  auto packed = packed_text::pack("some text that compresses");
  std::string wrong_header = packed;
  wrong_header[0] = 'q';
  std::vector<std::string> damaged{std::string("x"), wrong_header,
                                   packed.substr(0, packed.size() - 3)};
  for (const auto& bad : damaged) {
    try {
      packed_text::unpack(bad, "run 7 text");
      ADD_FAILURE() << "accepted damaged bytes";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("run 7 text"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace perfgate
