#include "perfgate/gate/store_access.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "perfgate/core/error.h"
#include "perfgate/report/output_file.h"
#include "perfgate/store/store_maintenance.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

// Before any open(): a FIFO as the store blocked there for ever.
void refuse_folder(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw Error("--store " + path.string() + ": is a folder, not a store file (e.g. " +
                (path / "perfgate.db").string() + ")");
  if (auto problem = BaselineStore::file_kind_problem(path); !problem.empty())
    throw Error("--store " + path.string() + ": " + problem);
}

}  // namespace

BaselineStore open_existing_store(const fs::path& path, BaselineStore::Mode mode) {
  check_store_file(path);
  return BaselineStore::open(path, mode);
}

void check_store_file(const fs::path& path) {
  if (!fs::exists(path)) throw Error(path.string() + ": no such store (see --store)");
  refuse_folder(path);
}

void check_store_writable(const fs::path& path) {
  refuse_folder(path);
  if (fs::exists(path)) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0)
      throw Error("--store " + path.string() + ": the store is read-only (" + std::strerror(errno) +
                  "); make it writable, or judge without storing with --no-record");
    ::close(fd);
    check_store_sound(path);
  }
  if (auto why = unwritable_reason(path); !why.empty()) {
    fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
    throw Error("--store " + path.string() + ": perfgate cannot create files in " +
                folder.string() + " (" + why +
                "), where the store and its journal files live; use a writable folder, or "
                "--no-record");
  }
}

std::vector<int64_t> record_or_keep(BaselineStore& store, const std::vector<RunRecord>& runs,
                                    const std::function<std::vector<int64_t>()>& record) {
  try {
    return record();
  } catch (const StoreLocked& e) {
    fs::path kept = store.path().string() + ".unrecorded.jsonl";
    std::ofstream out(kept, std::ios::app | std::ios::binary);
    for (const auto& run : runs) out << to_json_line(run, false) << '\n';
    out.flush();
    if (!out) throw;  // nowhere to keep it: the lock is still the news
    throw StoreLocked(std::string(e.what()) + "; the measured run was kept in " + kept.string() +
                      ": `perfgate store import " + kept.string() + "` adds it");
  }
}

}  // namespace perfgate
