#include "perfgate/store/baseline_store.h"
#include "perfgate/core/bounded_read.h"
#include "perfgate/profile/json_text.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <system_error>

#include "packed_text.h"
#include "perfgate/core/error.h"
#include "perfgate/core/printable.h"
#include "perfgate/store/cost_record.h"
#include "perfgate/store/run_figures.h"
#include "run_details.h"
#include "sqlite_handle.h"
#include "store_schema.h"

namespace perfgate {
namespace fs = std::filesystem;
namespace {

using run_details::damaged_hint;
using run_details::DetailReader;
using run_details::kIterationColumns;
using run_details::unpacked;
using sqlite::Blob;
using sqlite::Columns;
using sqlite::connect;
using sqlite::Db;
using sqlite::exec;
using sqlite::fail;
using sqlite::Handle;
using sqlite::query_int;
using sqlite::Statement;
using sqlite::Transaction;
using store_schema::check_is_perfgate_store;
using store_schema::is_read_only;
using store_schema::prepare;

bool has_content(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return !ec && size > 0;
}

// Only the default store's folder is made: a typo in --store made folders and
// a new, empty store, and the run said "no baseline yet" (issue 48, item 5).
void create_parent(const fs::path& path) {
  BaselineStore::check_folder(path);
  auto parent = path.parent_path();
  std::error_code ec;
  if (parent.empty() || fs::exists(parent, ec)) return;  // not a folder: SQLite says so
  fs::create_directories(parent, ec);
  if (ec)
    throw Error(path.string() + ": cannot create folder " + parent.string() + " (" + ec.message() +
                ")");
}

// A new store is created here, not by SQLite, so that a umask that takes the
// owner's own access (umask 777 gave mode 000) is undone, with a word: a store
// its owner cannot read loses every later run. fchmod ignores the umask.
void create_store_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;  // there already, or not creatable: SQLite says why
  struct stat st {};
  if (::fstat(fd, &st) == 0 && (st.st_mode & 0600) != 0600) {
    ::fchmod(fd, (st.st_mode & 07777) | 0600);
    spdlog::warn(
        "{}: the umask would have made the new store unreadable or unwritable to its "
        "owner; it is mode {:o}",
        path.string(), (st.st_mode & 07777) | 0600);
  }
  ::close(fd);
}

// ---- rows ------------------------------------------------------------------

// Profiles and host fingerprints live once each in `texts` (schema 5); a
// column of '' with its ref set means "see there".
constexpr std::string_view kRunColumns =
    "id, created_at, profile_name, profile_hash, profile_json, coalesce(profile_ref, 0), "
    "commit_sha, branch, baseline_branch, pipeline_id, ci_provider, host_json, "
    "coalesce(host_ref, 0), engine, threads, connections, verdict, saturated, "
    "saturation_json, status, kind, review, review_reason, review_by, review_at, pair, "
    "cost_json, regressed, figures, shared_cpu_pct";

std::string utc_now() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string saturation_json(const Saturation& saturation) {
  return json_text(nlohmann::json{{"reasons", saturation.reasons}, {"shared", saturation.shared}});
}

// The id of `text` in the shared texts, added when new.
int64_t text_ref(Db db, const std::string& text) {
  auto packed = packed_text::pack(text);
  Statement add(db, "INSERT OR IGNORE INTO texts (body) VALUES (?)");
  add.bind_all(Blob{packed}).run();
  Statement find(db, "SELECT id FROM texts WHERE body = ?");
  find.bind_all(Blob{packed});
  if (!find.step()) fail(db, "cannot store a run's text");
  return find.int64(0);
}

// The shared texts a listing of many runs refers to, each read and unpacked once.
class TextCache {
 public:
  explicit TextCache(Db db) : db_(db) {}
  Db db() const { return db_; }
  // A column read as (text, ref): the shared text when the ref is set.
  // A host fingerprint, parsed once per shared text: a listing of many runs
  // would otherwise parse the same JSON for each.
  const std::map<std::string, std::string>& host(const std::string& column,
                                                 std::optional<int64_t> ref, int64_t run_id) {
    auto key = ref.value_or(0);
    auto found = hosts_.find(key);
    if (found != hosts_.end() && ref) return found->second;
    try {
      auto fields = parse_json(text(column, ref, run_id), db_.path.string())
                        .get<std::map<std::string, std::string>>();
      return hosts_.insert_or_assign(key, std::move(fields)).first->second;
    } catch (const nlohmann::json::exception& e) {
      throw Error(db_.path.string() + ": store is corrupt (run " + std::to_string(run_id) + ": " +
                  e.what() + ")");
    }
  }
  const std::string& text(const std::string& column, std::optional<int64_t> ref, int64_t run_id) {
    if (!ref) return column;
    auto [it, fresh] = texts_.try_emplace(*ref);
    if (fresh) {
      Statement stmt(db_, "SELECT body FROM texts WHERE id = ?");
      stmt.bind_all(*ref);
      if (!stmt.step())
        throw Error(db_.path.string() + ": store is corrupt (run " + std::to_string(run_id) +
                    " refers to a missing text)");
      it->second = unpacked(db_, stmt.blob(0), run_id);
    }
    return it->second;
  }

 private:
  Db db_;
  std::map<int64_t, std::string> texts_;
  std::map<int64_t, std::map<std::string, std::string>> hosts_;
};

// 0 (NULL in the table) for a run whose text is still in its own column.
std::optional<int64_t> ref_column(Columns& col) {
  auto ref = col.int64();
  return ref > 0 ? std::optional(ref) : std::nullopt;
}

int64_t insert_run(Db db, const RunRecord& run) {
  auto profile_ref = text_ref(db, run.profile_json);
  auto host_ref = text_ref(db, json_text(nlohmann::json(run.host.fields)));
  Statement stmt(db,
                 "INSERT INTO runs (created_at, profile_name, profile_hash, profile_json, "
                 "profile_ref, commit_sha, branch, baseline_branch, pipeline_id, ci_provider, "
                 "host_key, host_json, host_ref, engine, threads, connections, verdict, "
                 "saturated, saturation_json, status, eligible, kind, review, review_reason, "
                 "review_by, review_at, pair, cost_json, regressed) "
                 "VALUES (?,?,?,'',?,?,?,?,?,?,?,'',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  stmt.bind_all(run.created_at.empty() ? utc_now() : run.created_at, run.profile_name,
                run.profile_hash, profile_ref, run.ci.commit, run.ci.branch, run.ci.baseline_branch,
                run.ci.pipeline_id, run.ci.provider, run.host.key(), host_ref, run.engine,
                run.threads, run.connections, to_string(run.verdict), run.saturation.saturated,
                saturation_json(run.saturation), run.status, run.eligible_as_baseline(), run.kind,
                run.review.state, run.review.reason, run.review.by, run.review.at, run.pair,
                cost_to_json(run.cost), run.regressed);
  stmt.run();
  return sqlite3_last_insert_rowid(db.handle);
}

void insert_iteration(Statement& stmt, int64_t run_id, const Iteration& it,
                      std::optional<double> service_cpu_s) {
  const auto& s = it.stats;
  const auto by_class = s.statuses.stored_classes();
  // Packed: a histogram's bucket counts compress by a third or more.
  auto latency = packed_text::pack_if_smaller(s.latency.serialize());
  stmt.bind_all(run_id, it.index, it.discarded, it.duration.count(), s.responses, s.bytes_read,
                s.errors.connect, s.errors.read, s.errors.write, s.errors.timeout, s.errors.other,
                by_class[0], by_class[1], by_class[2], by_class[3], by_class[4], by_class[5],
                Blob{latency}, service_cpu_s);
  stmt.run();
  stmt.reset();
}

// service_cpu_s holds one figure per iteration when the service was measured.
void insert_iterations(Db db, int64_t run_id, const RunRecord& run) {
  Statement stmt(db, "INSERT INTO iterations (run_id, " + std::string(kIterationColumns) +
                         ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (size_t i = 0; i < run.iterations.size(); ++i) {
    std::optional<double> cpu;
    if (i < run.service_cpu_s.size()) cpu = run.service_cpu_s[i];
    insert_iteration(stmt, run_id, run.iterations[i], cpu);
  }
}

void insert_samples(Db db, int64_t run_id, const std::string& json) {
  if (json.empty()) return;
  auto packed = packed_text::pack(json, packed_text::Dictionary::kHostSamples);
  Statement stmt(db, "INSERT INTO run_samples (run_id, json, packed) VALUES (?, '', ?)");
  stmt.bind_all(run_id, Blob{packed}).run();
}

// The run's row, iterations and samples, then its figures computed from them as
// they read back (a histogram or a status count the store does not keep counts
// for nothing), so that they are the figures any later read would compute.
int64_t insert_whole_run(Db db, const RunRecord& run, run_details::FigureWriter& figures) {
  auto id = insert_run(db, run);
  insert_iterations(db, id, run);
  insert_samples(db, id, run.host_samples_json);
  figures.write(id);
  return id;
}

Verdict verdict_named(Db db, int64_t run_id, const std::string& name) {
  for (auto v : {Verdict::kPass, Verdict::kWarn, Verdict::kFail, Verdict::kError})
    if (to_string(v) == name) return v;
  throw Error(db.path.string() + ": run " + std::to_string(run_id) +
              " holds an unknown verdict \"" + printable(name) + "\"" + damaged_hint(run_id));
}

// Written only by record(); a parse failure means damage. Most runs were not
// saturated, and their column is the same short text.
void read_saturation(Db db, const std::string& saturation, RunRecord& run) {
  if (saturation == R"({"reasons":[],"shared":[]})") return;
  try {
    auto stored = parse_json(saturation, db.path.string());
    run.saturation.reasons = stored.value("reasons", std::vector<std::string>{});
    run.saturation.shared = stored.value("shared", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    throw Error(db.path.string() + ": store is corrupt (run " + std::to_string(run.id) + ": " +
                e.what() + ")");
  }
}

// A run's stored figures (run_figures.h); damage says which run and what to do.
StoredFigures read_figures(Db db, int64_t run_id, const std::string& bytes,
                           std::optional<double> shared_cpu_pct) {
  try {
    return {unpack_figures(bytes, db.path.string() + ": run " + std::to_string(run_id)),
            shared_cpu_pct};
  } catch (const Error& e) {
    throw Error(e.what() + damaged_hint(run_id));
  }
}

// The figures of a run the schema step could not compute (its details were
// damaged): read from its details as before figures were stored, so that the
// damage is reported where the run is read, with what to do.
StoredFigures figures_from_details(Db db, const RunRecord& header) {
  RunRecord run;
  run.id = header.id;
  DetailReader(db).load(run);
  return compute_stored_figures(run);
}

// Column by column in kRunColumns order.
RunRecord read_run(Statement& row, TextCache& texts, bool with_figures = true) {
  Db db = texts.db();
  Columns col(row);
  RunRecord run;
  run.id = col.int64();
  run.created_at = col.text();
  run.profile_name = col.text();
  run.profile_hash = col.text();
  auto profile_json = col.text();
  auto profile_ref = ref_column(col);
  run.ci.commit = col.text();
  run.ci.branch = col.text();
  run.ci.baseline_branch = col.text();
  run.ci.pipeline_id = col.text();
  run.ci.provider = col.text();
  auto host_json = col.text();
  auto host_ref = ref_column(col);
  run.engine = col.text();
  run.threads = static_cast<int>(col.int64());
  run.connections = static_cast<int>(col.int64());
  run.verdict = verdict_named(db, run.id, col.text());
  run.saturation.saturated = col.int64() != 0;
  auto saturation_json = col.text();
  run.status = col.text();
  run.kind = col.text();
  run.review = {col.text(), col.text(), col.text(), col.text()};
  run.pair = col.text();
  run.cost = cost_from_json(col.text());
  run.regressed = col.int64() != 0;
  auto figures = col.blob();
  auto shared_cpu_pct = col.real();
  run.profile_json = texts.text(profile_json, profile_ref, run.id);
  run.host.fields = texts.host(host_json, host_ref, run.id);
  read_saturation(db, saturation_json, run);
  if (with_figures)
    run.stored = figures.empty() ? figures_from_details(db, run)
                                 : read_figures(db, run.id, figures, shared_cpu_pct);
  return run;
}

std::optional<RunRecord> first_run_with_iterations(Db db, Statement& stmt) {
  if (!stmt.step()) return std::nullopt;
  TextCache texts(db);
  RunRecord run = read_run(stmt, texts);
  DetailReader(db).load(run);
  return run;
}

// A fresh run that no saturation rule flagged keeps its per-iteration summaries
// (the host sampler's "windows", which compare reads) but not the raw samples:
// they take most of a run's room, and only a flagged run has something in them
// worth reading again. samples_total still says how many there were. A profile
// with store.raw_samples "always" asks for them all.
bool asks_for_raw_samples(const std::string& profile_json) {
  auto profile = parse_json_or_discarded(profile_json);
  if (!profile.is_object() || !profile.contains("store")) return false;
  const auto& store = profile["store"];
  return store.is_object() && store.value("raw_samples", "") == "always";
}

std::string samples_worth_keeping(const RunRecord& run) {
  const auto& text = run.host_samples_json;
  if (text.empty() || run.saturation.saturated || !run.saturation.shared.empty()) return text;
  if (asks_for_raw_samples(run.profile_json)) return text;
  auto doc = parse_json_or_discarded(text);
  if (!doc.is_object() || !doc.contains("windows") || !doc.contains("samples")) return text;
  doc["samples"] = nlohmann::json::array();
  return json_text(doc);
}

}  // namespace

// ---- BaselineStore ---------------------------------------------------------

void BaselineStore::Closer::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);
}

BaselineStore::BaselineStore(fs::path path, sqlite3* db) : path_(std::move(path)), db_(db) {}
BaselineStore::BaselineStore(BaselineStore&&) noexcept = default;
BaselineStore& BaselineStore::operator=(BaselineStore&&) noexcept = default;
BaselineStore::~BaselineStore() = default;

// SQLite opens the files beside the store as they are: a FIFO there hung the
// open (deaf to SIGTERM), or failed the write after a whole load.
void BaselineStore::refuse_special_journal(const fs::path& store) {
  for (const char* suffix : {"-journal", "-wal", "-shm"}) {
    fs::path beside = store.string() + suffix;
    if (auto kind = special_file_kind(beside); !kind.empty())
      throw Error(beside.string() + ": is " + kind +
                  ", where SQLite keeps the store's journal; remove it");
  }
}

std::string BaselineStore::file_kind_problem(const fs::path& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  switch (status.type()) {
    case fs::file_type::fifo:
      return "is a FIFO (named pipe), not a store file";
    case fs::file_type::character:
    case fs::file_type::block:
      return "is a device, not a store file";
    case fs::file_type::socket:
      return "is a socket, not a store file";
    case fs::file_type::directory:
      return "is a folder, not a store file";
    default:
      return "";
  }
}

void BaselineStore::check_folder(const fs::path& path) {
  auto parent = path.parent_path();
  std::error_code ec;
  // A folder named as the default's ("baselines", as in the CI templates' and
  // the Kubernetes manifest's data/baselines/) is made where it is missing.
  if (parent.empty() || fs::exists(parent, ec) || parent.filename() == "baselines") return;
  throw Error(path.string() + ": folder " + parent.string() +
              " does not exist (a typo? to start a new store there, make it first: mkdir -p " +
              parent.string() + ")");
}

BaselineStore BaselineStore::open(const fs::path& path, Mode mode) {
  if (auto problem = file_kind_problem(path); !problem.empty())
    throw Error(path.string() + ": " + problem);
  refuse_special_journal(path);
  bool writable = mode == Mode::kReadWrite;
  if (writable) create_parent(path);
  if (writable && !fs::exists(path)) create_store_file(path);
  if (has_content(path)) check_is_perfgate_store(path);
  if (!writable && has_content(path)) store_schema::check_current_schema(path);
  // Reading a WAL store needs its -shm beside it: in a folder this user cannot
  // write, and with no writer's -wal there, it is read as immutable instead
  // ("attempt to write a readonly database" was the message for a read).
  auto folder = fs::absolute(path).parent_path();
  bool unwritable_folder = ::access(folder.c_str(), W_OK) != 0;
  Handle db = writable            ? connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
              : unwritable_folder ? sqlite::connect_untouched(path)
                                  : connect(path, SQLITE_OPEN_READONLY);
  prepare({db.get(), path});
  return BaselineStore(path, db.release());
}

int64_t BaselineStore::record(const RunRecord& run) {
  RunRecord kept = run;
  kept.host_samples_json = samples_worth_keeping(run);
  return record_all({kept}).front();
}

std::vector<int64_t> BaselineStore::record_all(const std::vector<RunRecord>& runs) {
  Db db{db_.get(), path_};
  if (is_read_only(db.handle)) throw Error(path_.string() + ": store is read-only");
  Transaction tx(db);
  run_details::FigureWriter figures(db);
  std::vector<int64_t> ids;
  for (const auto& run : runs) ids.push_back(insert_whole_run(db, run, figures));
  tx.commit();
  return ids;
}

int64_t BaselineStore::record_each(const std::function<std::optional<RunRecord>()>& next) {
  Db db{db_.get(), path_};
  if (is_read_only(db.handle)) throw Error(path_.string() + ": store is read-only");
  Transaction tx(db);
  run_details::FigureWriter figures(db);
  int64_t count = 0;
  for (; auto run = next(); ++count) insert_whole_run(db, *run, figures);
  tx.commit();
  return count;
}

std::vector<RunRecord> BaselineStore::eligible_runs(const BaselineQuery& query, int limit,
                                                    Depth depth) {
  Db db{db_.get(), path_};
  // Two spellings rather than "(? = '' OR host_key = ?)", which would hide the
  // host_key column from the index.
  std::string sql = "SELECT " + std::string(kRunColumns) +
                    " FROM runs WHERE profile_name = ? AND profile_hash = ? AND branch = ?" +
                    (query.host_key.empty() ? "" : " AND host_key = ?") +
                    " AND eligible = 1 AND id < ? ORDER BY id DESC LIMIT ?";
  Statement stmt(db, sql);
  int64_t before = query.before_run > 0 ? query.before_run : INT64_MAX;
  if (query.host_key.empty())
    stmt.bind_all(query.profile_name, query.profile_hash, query.branch, before, limit);
  else
    stmt.bind_all(query.profile_name, query.profile_hash, query.branch, query.host_key, before,
                  limit);
  std::vector<RunRecord> out;
  TextCache texts(db);
  while (stmt.step()) {
    out.push_back(read_run(stmt, texts));
    // An accepted run is a new normal: what came before it is history, not baseline.
    if (out.back().review.state == "accepted") break;
  }
  if (depth == Depth::kFull) load_details(out);
  return out;
}

void BaselineStore::load_details(std::vector<RunRecord>& runs) {
  DetailReader reader({db_.get(), path_});
  for (auto& run : runs)
    if (run.iterations.empty()) reader.load(run);
}

void BaselineStore::set_review(int64_t id, const Review& review) {
  Db db{db_.get(), path_};
  if (is_read_only(db.handle)) throw Error(path_.string() + ": store is read-only");
  Transaction tx(db);
  auto stored = run(id);
  if (!stored) throw Error(path_.string() + ": no run " + std::to_string(id));
  stored->review = review;
  Statement stmt(db,
                 "UPDATE runs SET review = ?, review_reason = ?, review_by = ?, review_at = ?, "
                 "eligible = ? WHERE id = ?");
  stmt.bind_all(review.state, review.reason, review.by, review.at, stored->eligible_as_baseline(),
                id);
  stmt.run();
  tx.commit();
}

std::optional<RunRecord> BaselineStore::run(int64_t id) {
  Db db{db_.get(), path_};
  Statement stmt(db, "SELECT " + std::string(kRunColumns) + " FROM runs WHERE id = ?");
  stmt.bind_all(id);
  return first_run_with_iterations(db, stmt);
}

std::optional<RunRecord> BaselineStore::paired_partner(const RunRecord& run) {
  if (run.pair.empty()) return std::nullopt;
  Db db{db_.get(), path_};
  Statement stmt(db, "SELECT " + std::string(kRunColumns) +
                         " FROM runs WHERE pair = ? AND id != ? ORDER BY id LIMIT 1");
  stmt.bind_all(run.pair, run.id);
  return first_run_with_iterations(db, stmt);
}

std::vector<RunRecord> BaselineStore::runs(const std::string& profile_name, int limit) {
  return runs(profile_name, "", limit);
}

std::vector<RunRecord> BaselineStore::runs(const std::string& profile_name,
                                           const std::string& branch, int limit) {
  std::vector<RunRecord> out;
  each_run(profile_name, branch, limit, [&](RunRecord&& run) { out.push_back(std::move(run)); });
  return out;
}

void BaselineStore::load_figures(std::vector<RunRecord>& runs) {
  Db db{db_.get(), path_};
  Statement stmt(db, "SELECT figures, shared_cpu_pct FROM runs WHERE id = ?");
  for (auto& run : runs) {
    if (run.stored) continue;
    stmt.reset();
    stmt.bind_all(run.id);
    if (!stmt.step()) continue;  // deleted since it was listed
    auto figures = stmt.blob(0);
    run.stored = figures.empty() ? figures_from_details(db, run)
                                 : read_figures(db, run.id, figures, stmt.real(1));
  }
}

void BaselineStore::each_run(const std::string& profile_name, const std::string& branch, int limit,
                             const std::function<void(RunRecord&&)>& visit, Depth depth) {
  Db db{db_.get(), path_};
  // Only the filters given, so that SQLite walks runs_profile (or the ids)
  // newest first and stops at the limit instead of sorting the whole table.
  std::string where = profile_name.empty() ? "1" : "profile_name = ?1";
  if (!branch.empty()) where += " AND branch = ?2";
  Statement stmt(db, "SELECT " + std::string(kRunColumns) + " FROM runs WHERE " + where +
                         " ORDER BY id DESC LIMIT ?3");
  stmt.bind_all(profile_name, branch, limit > 0 ? limit : -1);
  TextCache texts(db);
  while (stmt.step()) visit(read_run(stmt, texts, depth != Depth::kListing));
}

int64_t BaselineStore::run_count() {
  return query_int({db_.get(), path_}, "SELECT count(*) FROM runs");
}

int BaselineStore::schema_version() {
  return static_cast<int>(query_int({db_.get(), path_}, "PRAGMA user_version"));
}

}  // namespace perfgate
