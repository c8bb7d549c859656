#include "perfgate/report/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ostream>
#include <random>
#include <streambuf>
#include <thread>

#include "perfgate/core/error.h"
#include "perfgate/core/stop_signal.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

constexpr auto kReaderWait = std::chrono::seconds(2);

// Closes the descriptor, and removes the temporary file unless it was renamed.
class TempFile {
 public:
  /// The target itself, opened for writing: no temporary, nothing to rename.
  struct InPlace {};
  // A FIFO that nothing reads held perfgate in open() for good, and again
  // when a stop retracted the run (issue 50, item 5): its reader gets
  // kReaderWait to come (one started just before perfgate may be late). Once
  // open, writes wait for the reader as usual.
  TempFile(const fs::path& target, InPlace) {
    auto give_up = std::chrono::steady_clock::now() + kReaderWait;
    for (;;) {
      fd_ = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0666);
      if (fd_ >= 0 || errno != ENXIO) break;
      if (std::chrono::steady_clock::now() >= give_up || stop_requested())
        throw Error("cannot write " + target.string() +
                    ": it is a FIFO (named pipe) that nothing reads");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (fd_ < 0) fail(target);
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  }
  explicit TempFile(const fs::path& beside) {
    std::random_device random;
    for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
      path_ = beside.parent_path() /
              ("." + beside.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
               std::to_string(random() % 1'000'000));
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) break;
    }
    if (fd_ < 0) fail(beside);
    keep_mode_of(beside);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(std::string_view text, const fs::path& target) {
    while (!text.empty()) {
      ssize_t n = ::write(fd_, text.data(), text.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(target);
      text.remove_prefix(static_cast<size_t>(n));
    }
  }
  // A file replaced keeps its mode: a 0600 report rewritten became 0644 (the
  // new file's 0666 less the umask), readable by everyone (issue 41, item 17).
  void keep_mode_of(const fs::path& target) {
    struct stat old {};
    if (::stat(target.c_str(), &old) == 0 && S_ISREG(old.st_mode))
      (void)!::fchmod(fd_, old.st_mode & 07777);
  }
  void rename_to(const fs::path& target) {
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0 || (!path_.empty() && ::rename(path_.c_str(), target.c_str()) != 0)) fail(target);
    path_.clear();
  }

 private:
  [[noreturn]] static void fail(const fs::path& target) {
    throw Error("cannot write " + target.string() + ": " + std::strerror(errno));
  }
  fs::path path_;
  int fd_ = -1;
};

void create_folder(const fs::path& path, std::string_view flag) {
  if (!path.has_parent_path()) return;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec)
    throw Error(std::string(flag) + (flag.empty() ? "" : ": ") + "cannot write " + path.string() +
                ": " + ec.message());
}

// Where an output's bytes go. A device, FIFO or socket (or a link to one, like
// /dev/stdout) is written in place: renaming over /dev/null would replace it
// with a regular file. A link to a regular file stays a link: the file it
// names is replaced, whole. A regular file (or none yet) is replaced whole.
struct OutputTarget {
  fs::path path;
  bool in_place = false;
};

// The kernel's protected_symlinks rule, which perfgate's own resolving of a
// link bypassed: in a sticky world-writable folder (/tmp, a shared CI folder)
// a link is followed only when its owner is the follower or the folder's
// owner. Another user's `shared/junit.xml -> victim.txt` made a root run
// replace victim.txt (issue 41, item 17), and so did `shared/out -> ~victim`
// as a folder on the way (issue 50, item 7): every component is checked, as
// the kernel checks every link it follows. "" when each may be followed.
std::string untrusted_link(const fs::path& path) {
  fs::path walked, full = fs::absolute(path);
  for (const auto& part : full) {
    if (part.empty() || part == ".") continue;
    walked /= part;
    struct stat link {};
    if (::lstat(walked.c_str(), &link) != 0) return "";  // the rest does not exist yet
    if (!S_ISLNK(link.st_mode)) continue;
    auto folder = walked.parent_path();
    struct stat dir {};
    if (::stat(folder.c_str(), &dir) != 0) continue;
    bool shared_sticky = (dir.st_mode & S_ISVTX) && (dir.st_mode & S_IWOTH);
    if (!shared_sticky || link.st_uid == ::geteuid() || link.st_uid == dir.st_uid) continue;
    return (walked == full ? std::string("it is a link")
                           : walked.string() + " on its way is a link") +
           " owned by another user (uid " + std::to_string(link.st_uid) +
           ") in a shared sticky folder (" + folder.string() +
           "); perfgate does not follow it, as the kernel would not; remove it or choose another "
           "path";
  }
  return "";
}

OutputTarget output_target(const fs::path& path) {
  if (auto why = untrusted_link(path); !why.empty())
    throw Error("cannot write " + path.string() + ": " + why);
  std::error_code ec;
  auto status = fs::status(path, ec);  // through links
  if (fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status))
    return {path, true};
  if (!fs::is_symlink(fs::symlink_status(path, ec))) return {path, false};
  auto target = fs::canonical(path, ec);
  // A dangling link (or a deleted file behind /proc/self/fd): open() follows it.
  if (ec) return {path, true};
  return {target, false};
}

fs::path resolved(const fs::path& path) {
  std::error_code ec;
  auto full = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path).lexically_normal() : full;
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  return resolved(a) == resolved(b);
}

}  // namespace

OutputGuard& OutputGuard::store(const fs::path& path) {
  if (path.empty()) return *this;
  protected_.push_back({path, "the store"});
  for (const char* journal : {"-wal", "-shm", "-journal"})
    protected_.push_back({path.string() + journal, "the store's SQLite journal"});
  return *this;
}

OutputGuard& OutputGuard::input(const fs::path& path, std::string what) {
  if (!path.empty()) protected_.push_back({path, std::move(what)});
  return *this;
}

void OutputGuard::check(const fs::path& output, std::string_view flag) const {
  if (output.empty()) return;
  for (const auto& p : protected_)
    if (same_file(output, p.path))
      throw Error(std::string(flag) + ": " + output.string() + " is " + p.what + " (" +
                  p.path.string() + "); writing there would destroy it, choose another path");
}

bool same_output_file(const fs::path& a, const fs::path& b) {
  return same_file(a, b);
}

namespace {

TempFile open_output(const OutputTarget& target) {
  if (target.in_place) return TempFile(target.path, TempFile::InPlace{});
  create_folder(target.path, "");
  return TempFile(target.path);
}

}  // namespace

void write_output_file(const fs::path& path, std::string_view text) {
  auto target = output_target(path);
  TempFile temp = open_output(target);
  temp.write(text, path);
  temp.rename_to(target.path);
}

namespace {

// An ostream's bytes into a TempFile, 64 KiB at a time: a long export is never
// held in memory whole.
class TempFileBuf : public std::streambuf {
 public:
  TempFileBuf(TempFile& file, const fs::path& target) : file_(file), target_(target) {
    setp(buffer_, buffer_ + sizeof buffer_);
  }
  int overflow(int c) override {
    flush_buffer();
    if (c != traits_type::eof()) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return flush_buffer(), 0; }

 private:
  void flush_buffer() {
    file_.write(std::string_view(pbase(), static_cast<size_t>(pptr() - pbase())), target_);
    setp(buffer_, buffer_ + sizeof buffer_);
  }
  TempFile& file_;
  const fs::path& target_;
  char buffer_[65536];
};

}  // namespace

void write_output_file(const fs::path& path, const std::function<void(std::ostream&)>& produce) {
  auto target = output_target(path);
  TempFile temp = open_output(target);
  TempFileBuf buffer(temp, path);
  std::ostream out(&buffer);
  out.exceptions(std::ios::badbit);  // a failed write throws (our Error, rethrown as is)
  produce(out);
  out.flush();
  temp.rename_to(target.path);
}

// Whole or not at all: on a full disk the step summary was left cut mid-table
// (issue 41, item 13); what a failed append wrote is cut off again.
void append_output_file(const fs::path& path, std::string_view text) {
  if (auto why = untrusted_link(path); !why.empty())
    throw Error("cannot write " + path.string() + ": " + why);
  create_folder(path, "");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  bool ok = fd >= 0;
  struct stat before {};
  bool regular = ok && ::fstat(fd, &before) == 0 && S_ISREG(before.st_mode);
  while (ok && !text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = ENOSPC;
    ok = n > 0;
    if (ok) text.remove_prefix(static_cast<size_t>(n));
  }
  int saved = errno;
  if (!ok && regular) (void)!::ftruncate(fd, before.st_size);
  if (fd >= 0) ::close(fd);
  if (!ok) throw Error("cannot write " + path.string() + ": " + std::strerror(saved));
}

std::string unwritable_reason(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "it is a folder; give a file name";
  if (auto why = untrusted_link(path); !why.empty()) return why;
  auto target = output_target(path);
  // A device or FIFO takes what its mode allows; a dangling link is found when written.
  if (target.in_place && fs::exists(path, ec))
    return ::access(path.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
  if (target.in_place) return "";
  // The nearest folder that exists takes the file, or the folders leading to it.
  fs::path folder = fs::absolute(target.path).parent_path();
  while (!fs::exists(folder, ec) && folder.has_relative_path()) folder = folder.parent_path();
  if (!fs::is_directory(folder, ec)) return folder.string() + " is not a folder";
  try {
    TempFile probe(folder / "perfgate-probe");
  } catch (const Error& e) {
    std::string what = e.what();  // "cannot write PATH: why"
    return what.substr(what.rfind(": ") + 2);
  }
  return "";
}

void check_output_writable(const fs::path& path, std::string_view flag) {
  if (path.empty()) return;
  if (auto why = unwritable_reason(path); !why.empty())
    throw Error(std::string(flag) + ": cannot write " + path.string() + ": " + why);
}

void check_append_writable(const fs::path& path, std::string_view flag) {
  if (path.empty() || path == "/dev/null") return;  // null: the user's way to turn it off
  if (auto why = untrusted_link(path); !why.empty())
    throw Error(std::string(flag) + ": cannot append to " + path.string() + ": " + why);
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return check_output_writable(path, flag);
  auto refuse = [&](const std::string& why) {
    throw Error(std::string(flag) + ": cannot append to " + path.string() + ": " + why);
  };
  if (fs::is_directory(status)) refuse("it is a folder; give a file name");
  if (!fs::is_regular_file(status)) refuse("not a regular file (GitHub Actions gives one)");
  // Opened for appending and closed, nothing written: what the run will do.
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) refuse(std::strerror(errno));
  ::close(fd);
}

}  // namespace perfgate
