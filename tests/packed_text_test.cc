#include "store/packed_text.h"

#include <gtest/gtest.h>

#include <string>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

TEST(PackedText, RoundTripsEveryTextByteForByte) {
  std::string binary;
  for (int i = 0; i < 1000; ++i) binary += static_cast<char>(i * 7 % 256);
  for (const std::string& text :
       {std::string(), std::string("{}"), binary, std::string(100000, 'x') + "tail"})
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
  for (auto bad : {std::string("x"), std::string("q") + packed.substr(1),
                   packed.substr(0, packed.size() - 3)}) {
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
