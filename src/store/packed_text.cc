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
// zlib with a preset dictionary: the tag, the dictionary's number, the length.
constexpr char kDictionaryTag = 'd';
constexpr size_t kDictionaryHeader = 1 + 1 + 4;

// Dictionary 1, of host samples (host_sampler.cc's host_samples_json()): the
// names every document repeats, most of a short one's bytes, so that zlib has
// them before the first window. Never changed once written: a new one gets a
// new number. zlib reaches back from the end, so the window, the most
// repeated, comes last.
constexpr std::string_view kHostSamplesDictionary =
    R"({"cpu_busy_pct":0.0,"cpu_pressure_pct":null,"foreign_cpu_pct":0.0,)"
    R"("generator_thread_max_pct":0.0,"iowait_pct":0.0,"irq_pct":0.0,"load1":0.0,)"
    R"("max_core_busy_pct":100.0,"memory_available_pct":0.0,"net_drops":0,"net_errors":0,)"
    R"("net_rx_bytes":0,"net_tx_bytes":0,"own_cpu_pct":0.0,"own_rss_kib":0,)"
    R"("run_cpu_wait_pct":0.0,"service_cpu_pct":0.0,"service_rss_kib":0,"steal_pct":0.0,)"
    R"("swap_used_kib":0,"system_pct":0.0,"t_s":0.0,"tcp_retrans":0,"user_pct":0.0})"
    R"({"samples":[],"samples_total":0,"service":{"cgroup":"","how":"started by perfgate",)"
    R"("listener":"127.0.0.1:","name":"","pid":0,"roots":[]},"version":1,"windows":[)"
    R"({"cpu_pressure_pct":0.0,"foreign_cpu_max_pct":0.0,"foreign_cpu_mean_pct":0.0,)"
    R"("foreign_cpu_pressure_pct":0.0,"generator_thread_max_pct":0.0,)"
    R"("generator_thread_pct":0.0,"host_cpu_max_pct":100.0,"host_cpu_mean_pct":0.0,)"
    R"("iteration":0,"memory_available_min_pct":0.0,"net_drops":0,"net_errors":0,)"
    R"("own_rss_max_kib":0,"run_cpu_wait_pct":0.0,"samples":0,"service_cpu_s":0.0,)"
    R"("service_rss_max_kib":0,"shared_cpu_pct":0.0,"steal_max_pct":0.0,)"
    R"("steal_mean_pct":0.0,"tcp_retrans":0},{"cpu_pressure_pct":0.0,)";

std::string_view dictionary_text(Dictionary dictionary) {
  switch (dictionary) {
    case Dictionary::kHostSamples:
      return kHostSamplesDictionary;
  }
  return {};
}

const Bytef* bytes_of(std::string_view text) {
  return reinterpret_cast<const Bytef*>(text.data());
}

void put_length(std::string& out, size_t at, uint32_t n) {
  for (size_t i = 0; i < 4; ++i) out[at + i] = static_cast<char>((n >> (8 * i)) & 0xff);
}

uint32_t length_at(std::string_view bytes, size_t at) {
  uint32_t n = 0;
  for (size_t i = 0; i < 4; ++i)
    n |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
  return n;
}

// RAII for a z_stream of deflate or inflate.
class Deflater {
 public:
  explicit Deflater(std::string_view dictionary) {
    if (deflateInit(&z_, Z_BEST_COMPRESSION) != Z_OK) throw Error("cannot start zlib");
    deflateSetDictionary(&z_, bytes_of(dictionary), static_cast<uInt>(dictionary.size()));
  }
  ~Deflater() { deflateEnd(&z_); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  z_stream& get() { return z_; }

 private:
  z_stream z_{};
};

class Inflater {
 public:
  Inflater() { ok_ = inflateInit(&z_) == Z_OK; }
  ~Inflater() {
    if (ok_) inflateEnd(&z_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  bool ok() const { return ok_; }
  z_stream& get() { return z_; }

 private:
  z_stream z_{};
  bool ok_ = false;
};

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

std::string pack(std::string_view text, Dictionary dictionary) {
  if (text.size() > UINT32_MAX) throw Error("text too large for the store");
  Deflater deflater(dictionary_text(dictionary));
  auto& z = deflater.get();
  auto bound = deflateBound(&z, static_cast<uLong>(text.size()));
  std::string out(kDictionaryHeader + bound, '\0');
  out[0] = kDictionaryTag;
  out[1] = static_cast<char>(dictionary);
  put_length(out, 2, static_cast<uint32_t>(text.size()));
  z.next_in = const_cast<Bytef*>(bytes_of(text));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data() + kDictionaryHeader);
  z.avail_out = static_cast<uInt>(bound);
  int rc = deflate(&z, Z_FINISH);
  if (rc != Z_STREAM_END)
    throw Error("cannot compress text for the store (zlib error " + std::to_string(rc) + ")");
  out.resize(kDictionaryHeader + z.total_out);
  return out;
}

namespace {

// The declared length is checked before it is allocated: a damaged or planted
// row declaring 4 GiB took 4.2 GB of memory, then "out of memory" from every
// command (issue 41, item 19). Deflate expands at most 1032:1.
void check_length(uint32_t n, size_t compressed, std::string_view what, size_t max_size) {
  if (n > compressed * kMaxDeflateRatio + 64)
    damaged(what, "declares " + std::to_string(n) + " bytes from " + std::to_string(compressed) +
                      ", more than zlib can expand");
  if (n > max_size)
    damaged(what, "declares " + std::to_string(n) + " bytes, more than perfgate stores (" +
                      std::to_string(max_size) + ")");
}

std::string unpack_with_dictionary(std::string_view bytes, std::string_view what, size_t max_size) {
  if (bytes.size() < kDictionaryHeader) damaged(what, "unknown encoding");
  auto dictionary = static_cast<Dictionary>(bytes[1]);
  if (dictionary != Dictionary::kHostSamples) damaged(what, "unknown dictionary");
  uint32_t n = length_at(bytes, 2);
  check_length(n, bytes.size() - kDictionaryHeader, what, max_size);
  std::string out(n, '\0');
  Inflater inflater;
  if (!inflater.ok()) throw Error("cannot start zlib");
  auto& z = inflater.get();
  auto body = bytes.substr(kDictionaryHeader);
  z.next_in = const_cast<Bytef*>(bytes_of(body));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = n;
  int rc = inflate(&z, Z_FINISH);
  if (rc == Z_NEED_DICT) {
    auto text = dictionary_text(dictionary);
    if (inflateSetDictionary(&z, bytes_of(text), static_cast<uInt>(text.size())) != Z_OK)
      damaged(what, "wrong dictionary");
    rc = inflate(&z, Z_FINISH);
  }
  if (rc != Z_STREAM_END || z.total_out != n || z.avail_in != 0)
    damaged(what, "zlib error " + std::to_string(rc));
  return out;
}

}  // namespace

std::string unpack(std::string_view bytes, std::string_view what, size_t max_size) {
  if (!bytes.empty() && bytes[0] == kDictionaryTag)
    return unpack_with_dictionary(bytes, what, max_size);
  if (bytes.size() < kHeader || bytes[0] != kZlibTag) damaged(what, "unknown encoding");
  uint32_t n = length_at(bytes, 1);
  auto compressed = bytes.size() - kHeader;
  check_length(n, compressed, what, max_size);
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
  if (bytes.empty() || bytes[0] != kZlibTag) return bytes;  // histograms: never a dictionary
  return unpack(bytes, what, max_size);
}

}  // namespace perfgate::packed_text
