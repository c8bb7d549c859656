// Text the store keeps compressed (host samples, profiles, host fingerprints):
// zlib behind a one-byte tag and the original length, host samples with a
// preset dictionary (internal to the store).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "perfgate/core/latency_histogram.h"

namespace perfgate::packed_text {

/// The bytes a BLOB column holds for `text`; unpack(pack(t)) == t for every t.
/// The same text gives the same bytes (the shared texts are found by them).
std::string pack(std::string_view text);

/// zlib's preset dictionaries, by number (stored in the bytes: never renumbered).
enum class Dictionary : char { kHostSamples = 1 };
/// pack() with a preset dictionary of the names `text`'s kind of document
/// repeats: a short document shrinks by a third more. unpack() reads both.
std::string pack(std::string_view text, Dictionary dictionary);
/// The largest text the store writes (a long run's host samples are a few MiB).
inline constexpr size_t kMaxUnpacked = 256u << 20;

/// A serialized latency histogram's most: the magic, five varints, and two
/// varints (at most 10 bytes each) per bucket.
inline constexpr size_t kMaxHistogram = 4 + 5 * 10 + LatencyHistogram::kBucketCount * 20;

/// The text back; throws Error naming `what` when the bytes are damaged,
/// including a declared length past `max_size` or past what zlib can expand
/// (checked before anything is allocated).
std::string unpack(std::string_view bytes, std::string_view what, size_t max_size = kMaxUnpacked);

/// For binary values of their own format (histograms, which never start with
/// pack()'s tag): packed when that is smaller, else as they are.
std::string pack_if_smaller(std::string bytes);
/// The inverse of pack_if_smaller(): bytes that were not packed come back as they are.
std::string unpack_if_packed(std::string bytes, std::string_view what,
                             size_t max_size = kMaxUnpacked);

}  // namespace perfgate::packed_text
