#include "perfgate/core/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "perfgate/core/stop_signal.h"

namespace perfgate {

namespace {

// Reads the open `fd` into `out` as read_bounded says, and closes it.
void read_open(int fd, size_t max_bytes, BoundedRead& out) {
  char buf[65536];
  // One byte past the limit is enough to refuse the file.
  while (out.bytes.size() <= max_bytes) {
    if (stop_requested()) {
      out.interrupted = true;
      break;
    }
    size_t want = std::min(sizeof buf, max_bytes + 1 - out.bytes.size());
    ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) out.error = errno;
    if (n <= 0) break;
    out.bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  out.too_large = out.bytes.size() > max_bytes;
}

}  // namespace

BoundedRead read_bounded(const std::filesystem::path& path, size_t max_bytes) {
  BoundedRead out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    out.error = errno;
  else
    read_open(fd, max_bytes, out);
  return out;
}

BoundedRead read_regular_bounded(const std::filesystem::path& path, size_t max_bytes) {
  BoundedRead out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st {};
  if (fd < 0) {
    out.error = errno == ELOOP ? EINVAL : errno;  // ELOOP: a link
    out.not_regular = errno == ELOOP;
  } else if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    out.error = EINVAL;
    out.not_regular = true;
    ::close(fd);
  } else {
    read_open(fd, max_bytes, out);
  }
  return out;
}

std::string special_file_kind(const std::filesystem::path& path) {
  std::error_code ec;
  switch (std::filesystem::status(path, ec).type()) {
    case std::filesystem::file_type::fifo:
      return "a FIFO (named pipe)";
    case std::filesystem::file_type::character:
    case std::filesystem::file_type::block:
      return "a device";
    case std::filesystem::file_type::socket:
      return "a socket";
    case std::filesystem::file_type::directory:
      return "a folder";
    default:
      return "";
  }
}

}  // namespace perfgate
