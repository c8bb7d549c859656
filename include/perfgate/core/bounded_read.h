#pragma once

// Reading a file whose size nobody promised: a profile, a request body, a
// summary. /dev/zero or a FIFO never ends; the limit is enforced while reading,
// so such a file is neither read to its end nor held in memory past it.

#include <cstddef>
#include <filesystem>
#include <string>

namespace perfgate {

/// What read_bounded() got.
struct BoundedRead {
  std::string bytes;         // at most max_bytes + 1 of them
  bool too_large = false;    // there were more than max_bytes; the rest was never read
  bool interrupted = false;  // SIGINT or SIGTERM came while reading
  int error = 0;             // errno of a failed open() or read(); 0 when none
  bool not_regular = false;  // read_regular_bounded: a link, FIFO, device or folder
};

/// Reads `path` until its end, one byte past `max_bytes`, or a stop signal
/// (stop_requested()), whichever comes first.
BoundedRead read_bounded(const std::filesystem::path& path, size_t max_bytes);

/// As read_bounded, for a file only perfgate's own tools write (a callgrind
/// dump): a link is not followed and a FIFO not waited on; anything but a
/// regular file is `not_regular`, unread.
BoundedRead read_regular_bounded(const std::filesystem::path& path, size_t max_bytes);

/// "a FIFO (named pipe)", "a device", "a socket" or "a folder" when `path`
/// (through links) is one; "" for a regular file or nothing. Looks without
/// opening: open() of a FIFO waits for a writer, which may never come.
std::string special_file_kind(const std::filesystem::path& path);

}  // namespace perfgate
