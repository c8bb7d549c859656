#pragma once

// Every file perfgate writes (reports, exports, shard results) goes through
// here, so that none replaces the store or an input, and none is ever left
// half-written.

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace perfgate {

/// The files an output must never replace: the store with its SQLite journals,
/// and the inputs (profile, shard files).
class OutputGuard {
 public:
  /// The store, its -wal, -shm and -journal files.
  OutputGuard& store(const std::filesystem::path& path);
  /// An input file; `what` names it in the error ("the profile").
  OutputGuard& input(const std::filesystem::path& path, std::string what);
  /// Throws Error when `output` is one of them: the same file (a hard link or a
  /// symbolic link to it) or the same path once resolved. `flag` names the option.
  void check(const std::filesystem::path& output, std::string_view flag) const;

 private:
  struct Protected {
    std::filesystem::path path;
    std::string what;
  };
  std::vector<Protected> protected_;
};

/// Writes `text` to `path`, whole or not at all: to a temporary name in the same
/// folder, then renamed over `path`. Creates missing folders. Throws Error.
void write_output_file(const std::filesystem::path& path, std::string_view text);

/// As above, for output too long to hold in memory: `produce` writes it to the
/// stream, which goes to the temporary file as it comes.
void write_output_file(const std::filesystem::path& path,
                       const std::function<void(std::ostream&)>& produce);

/// Whether `a` and `b` name the same file (a link to it, or the same path once
/// resolved), whether or not it exists yet.
bool same_output_file(const std::filesystem::path& a, const std::filesystem::path& b);

/// Appends `text` to `path` (GitHub's step summary expects appends). Throws Error.
void append_output_file(const std::filesystem::path& path, std::string_view text);

/// Why no file can be written at `path` ("" when one can): `path` is a folder,
/// or the nearest existing folder on its way takes no new file (checked by
/// creating and removing one). Creates nothing.
std::string unwritable_reason(const std::filesystem::path& path);

/// Before the work starts: throws Error("FLAG: cannot write PATH: why") when
/// unwritable_reason finds one.
void check_output_writable(const std::filesystem::path& path, std::string_view flag);

/// The same for a file appended to (GITHUB_STEP_SUMMARY): an existing one must
/// be a regular file that can be opened for appending now, so that a run is
/// never measured and stored to end in an error writing its summary.
void check_append_writable(const std::filesystem::path& path, std::string_view flag);

}  // namespace perfgate
