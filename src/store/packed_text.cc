#include "packed_text.h"

#include <zlib.h>

#include <cstdint>

#include "perfgate/core/error.h"

namespace perfgate::packed_text {
namespace {

// Leaves room for another encoding later without guessing from the bytes.
constexpr char kZlibTag = 'z';
constexpr size_t kHeader = 1 + 4;  // tag, original length (little-endian)
constexpr size_t kMaxDeflateRatio = 1032;

[[noreturn]] void damaged(std::string_view what, std::string_view why) {
  throw Error(std::string(what) + ": stored text is damaged (" + std::string(why) + ")");
}

}  // namespace

std::string pack(std::string_view text) {
  if (text.size() > UINT32_MAX) throw Error("text too large for the store");
  auto bound = compressBound(static_cast<uLong>(text.size()));
  std::string out(kHeader + bound, '\0');
  out[0] = kZlibTag;
  auto n = static_cast<uint32_t>(text.size());
  for (size_t i = 0; i < 4; ++i) out[1 + i] = static_cast<char>((n >> (8 * i)) & 0xff);
  uLongf written = bound;
  int rc = compress2(reinterpret_cast<Bytef*>(out.data() + kHeader), &written,
                     reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                     Z_BEST_COMPRESSION);
  if (rc != Z_OK)
    throw Error("cannot compress text for the store (zlib error " + std::to_string(rc) + ")");
  out.resize(kHeader + written);
  return out;
}

std::string unpack(std::string_view bytes, std::string_view what, size_t max_size) {
  if (bytes.size() < kHeader || bytes[0] != kZlibTag) damaged(what, "unknown encoding");
  uint32_t n = 0;
  for (size_t i = 0; i < 4; ++i)
    n |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[1 + i])) << (8 * i);
  // The declared length is checked before it is allocated: a damaged or planted
  // row declaring 4 GiB took 4.2 GB of memory, then "out of memory" from every
  // command (issue 41, item 19). Deflate expands at most 1032:1.
  auto compressed = bytes.size() - kHeader;
  if (n > compressed * kMaxDeflateRatio + 64)
    damaged(what, "declares " + std::to_string(n) + " bytes from " + std::to_string(compressed) +
                      ", more than zlib can expand");
  if (n > max_size)
    damaged(what, "declares " + std::to_string(n) + " bytes, more than perfgate stores (" +
                      std::to_string(max_size) + ")");
  std::string out(n, '\0');
  uLongf size = n;
  int rc = uncompress(reinterpret_cast<Bytef*>(out.data()), &size,
                      reinterpret_cast<const Bytef*>(bytes.data() + kHeader),
                      static_cast<uLong>(bytes.size() - kHeader));
  if (rc != Z_OK || size != n) damaged(what, "zlib error " + std::to_string(rc));
  return out;
}

std::string pack_if_smaller(std::string bytes) {
  auto packed = pack(bytes);
  return packed.size() < bytes.size() ? packed : bytes;
}

std::string unpack_if_packed(std::string bytes, std::string_view what, size_t max_size) {
  if (bytes.empty() || bytes[0] != kZlibTag) return bytes;
  return unpack(bytes, what, max_size);
}

}  // namespace perfgate::packed_text
