#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfgate/core/error.h"
#include "perfgate/core/metrics.h"
#include "perfgate/core/success_statuses.h"
#include "perfgate/core/units.h"

namespace perfgate {

/// One request shape. The profile's `target` is one; `target.requests` makes a
/// weighted mix of several, each inheriting what it does not set from `target`.
struct TargetSpec {
  std::string url;
  // The URL and body as written, where they take a ${VAR}: what reports,
  // messages and the store show instead (a token in a query string is as
  // secret as one in a header). Empty when nothing was substituted.
  std::string url_as_written;
  std::string body_as_written;
  std::string method = "GET";
  std::vector<std::pair<std::string, std::string>> headers;  // in profile order
  std::string body;                  // the bytes sent (read from `body_file` when that is set)
  std::string body_file;             // as written in the profile, for messages; empty = inline body
  std::string name;                  // label of a mix entry ("" for the single target)
  double weight = 1;                 // share of a mix, relative to the other entries
  bool tls_verify = true;            // `target.tls_verify: false` is the explicit opt-out
  std::string http_version = "1.1";  // "1.1" or "2" (HTTP/2 needs the curl engine)
  SuccessStatuses success_statuses;  // which answers are successes; 2xx and 3xx by default
};

struct LoadSpec {
  int threads = 2;
  int connections = 50;
  Nanos duration = std::chrono::seconds(10);
  Nanos warmup = std::chrono::seconds(2);
  double rate = 0;                          // requests/s over all connections; 0 = closed model
  std::string engine = "auto";              // auto | curl | native
  Nanos timeout = std::chrono::seconds(5);  // per request, connect included
  Nanos connect_timeout = std::chrono::seconds(2);
};

struct RepeatSpec {
  int count = 10;
  int discard = 2;
  /// The most iterations (paired: pairs) a sequential run may take while a gated
  /// metric is still undecided; 0 or `count`: exactly `count`, no extension.
  /// Not in the profile hash: a longer run measures the same thing.
  int max_count = 0;
  /// The most time the timed iterations may take, extensions included: a
  /// sequential run measures another batch only while the time so far says
  /// it ends within it. 0 = no budget. Not in the profile hash either.
  Nanos budget{0};
};

/// The service under test. With `command`, perfgate starts it before the load and
/// stops it after; with only `pid_file` or `process_name`, it runs elsewhere on
/// this host and perfgate just attributes its CPU and memory to it.
struct ServiceSpec {
  std::vector<std::string> command;  // empty = not started by perfgate
  std::string pid_file;              // a file holding the service's PID
  std::string process_name;          // or its process name (/proc/PID/comm)
  std::string cgroup;                // or its cgroup v2 path, attributed whole
  std::string container;             // or a container id/name prefix, found in /proc/PID/cgroup
  std::string ready_url;             // polled until it answers 2xx/3xx; defaults to target.url
  Nanos ready_timeout = std::chrono::seconds(30);
  std::string cwd;  // empty = perfgate's working directory
  std::vector<std::pair<std::string, std::string>> env;
};

/// When the load machine itself set the pace (`saturation` in the profile).
/// Percentages are of one core for a thread, of all cores for the host.
struct SaturationSpec {
  Nanos interval = std::chrono::milliseconds(250);  // host sampling period
  double generator_thread_cpu_pct = 90;             // a load thread this busy for most of a window
  double foreign_cpu_pct = 25;  // CPU used by processes other than perfgate and the service
  double host_cpu_pct = 90;     // whole host busy; judged only when the service is remote
  double steal_pct = 5;
  double memory_available_min_pct = 5;
  double cpu_pressure_pct = 20;  // /proc/pressure/cpu "some avg10"
};

/// How the verdict picks and weighs its baseline (`baseline` in the profile).
struct BaselineSpec {
  int window = 5;          // accepted runs pooled as the baseline
  int drift_window = 20;   // how many accepted runs back the drift guard looks; 0 = off
  double confidence = 95;  // % level of the intervals; a fail needs p < 1 - confidence
};

/// Paired mode (`paired` in the profile), for runners too noisy for stored
/// baselines: the profile's target and service are the candidate; this is the
/// build it is measured against, in alternating windows on the same machine.
struct PairedSpec {
  std::string origin;                  // "http://127.0.0.1:8081": every request, sent here
  std::optional<ServiceSpec> service;  // the baseline build, started or watched like `service`
  std::string commit;                  // the baseline build's commit, for the store; may be ""
  Nanos leg_warmup = std::chrono::milliseconds(250);  // after each switch, before the window
  int max_redos = 3;  // disturbed pairs measured again, at most; then the run is inconclusive
  // A pair whose sides' foreign CPU or steal (% of the host) differ by more is
  // disturbed: a burst fell on one side. It is dropped, not voted.
  double disturbance_pct = 15;
  // How one batch of pairs is measured: "alternate" runs a pair's two windows one
  // after the other (A B, B A, ...); "duet" runs them at the same moments, each
  // side loaded by its own engine, so that a burst on the machine hits both alike.
  std::string schedule = "alternate";
  // Pairs per launch: both services are started anew for every block of this
  // many pairs, and the verdict tests blocks, not windows. Pairs of one launch
  // share its luck (where the scheduler put it, its allocator, its JIT), so
  // they are not independent evidence; launches are.
  int block = 1;
  // Not a profile key: the pairs a run measured before this batch (a redo, an
  // extension), so that A B, B A keeps alternating across batches instead of
  // every batch starting A B.
  int order_offset = 0;
};

/// Which cores the load threads and the service run on (`placement` in the
/// profile). "auto" splits the CPUs this process may use (see choose_placement);
/// "off" leaves both to the scheduler; "fixed" takes the profile's two lists.
struct PlacementSpec {
  std::string mode = "auto";  // auto | off | fixed
  std::vector<int> load;      // "fixed" only: CPU numbers
  std::vector<int> service;
};

/// `cost`: the counted cost phase (docs/cost.md). After the timed windows the
/// service is started again under an instrument that counts instead of timing,
/// and exactly `requests` requests are sent in a fixed order.
struct CostSpec {
  std::string instrument = "off";  // off | callgrind | perf | auto (what the runner has)
  int requests = 1000;             // counted per launch; with requests_auto, at most
  int warmup_requests = 200;       // sent before the counters are zeroed
  // `requests: "auto"` (the default): the first launch's warm-up pace picks the
  // count (1000, 500, 200, 100, 50 or 20) whose requests take about
  // `count_time` under the instrument, and the warm-up a fifth of it.
  bool requests_auto = true;
  Nanos count_time = std::chrono::seconds(5);
  int connections = 1;  // 1: the only setting measured bit-identical
  int launches = 2;     // per side; their spread is the counts' noise check
  // Paired: while a gated count is undecided after `launches`, launches are
  // added in turns up to `max_launches` a side, as long as the phase's pace
  // says the next pair ends within `budget` of the phase's start.
  int max_launches = 6;
  Nanos budget = std::chrono::seconds(90);
  bool cache_sim = false;      // callgrind's cache simulation: estimated cycles
  bool required = false;       // an instrument that is not there: exit 3, not a skip
  bool steady_runtime = true;  // known runtimes started with settings that make counts repeat
  Nanos ready_timeout = std::chrono::seconds(120);  // under Valgrind a start is ~20x slower
  Nanos timeout = std::chrono::seconds(30);         // per response
  bool enabled() const { return instrument != "off"; }
};

struct Profile {
  std::string name;
  std::string description;
  std::filesystem::path source;  // the file it came from ("<string>" in tests)
  TargetSpec target;
  LoadSpec load;
  RepeatSpec repeat;
  ThresholdSet thresholds;           // metric key -> limits (defaults filled when absent)
  std::vector<TargetSpec> requests;  // the mix; empty = `target` alone
  std::optional<ServiceSpec> service;
  SaturationSpec saturation;
  BaselineSpec baseline;
  std::vector<std::string> redact;  // more header names whose values are never written
  std::optional<PairedSpec> paired;
  PlacementSpec placement;
  CostSpec cost;
  /// `store.raw_samples: "always"`: the store keeps every run's raw host samples,
  /// not only those of runs a saturation rule flagged.
  bool keep_raw_samples = false;

  /// SHA-256 (hex) of what changes results: target, load and repeat, before
  /// environment substitution (a rotated token or another port is the same test).
  /// Thresholds, names and descriptions are left out.
  std::string hash;
  /// The profile as parsed, canonical JSON, secret-looking header values replaced
  /// by "<redacted>": what the store keeps.
  std::string redacted_json;
};

/// One problem found in a profile, with where it is.
struct ProfileProblem {
  int line = 0;          // 1-based; 0 when unknown
  std::string key_path;  // "load.connections"; empty for syntax errors
  std::string message;   // "must be a positive integer, got \"ten\""
  int column = 0;        // 1-based, for syntax errors; 0 when not known
};

/// Every problem of a profile at once, so that one edit fixes them all.
class ProfileError : public Error {
 public:
  ProfileError(std::string source, std::vector<ProfileProblem> problems);
  const std::vector<ProfileProblem>& problems() const { return problems_; }
  /// One line per problem: "hello.json:7: load.connections: must be ..."
  std::vector<std::string> lines() const;

 private:
  std::string source_;
  std::vector<ProfileProblem> problems_;
};

/// Looks up an environment variable for `${NAME}` and `${NAME:-default}` in
/// profile strings.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup process_environment();

/// Reads, validates and normalizes a profile (JSON with // and /* */ comments).
/// Throws ProfileError listing every problem, or Error when unreadable.
Profile load_profile(const std::filesystem::path& path, const EnvLookup& env);
Profile parse_profile(std::string_view text, const std::string& source_name, const EnvLookup& env);

/// Paired mode's baseline side: `profile` with every request sent to
/// `paired->origin` and the paired service as its service. Requires `paired`.
Profile paired_baseline_side(const Profile& profile);

/// "https://host:8080/a/b?q" -> "https://host:8080".
std::string url_origin(const std::string& url);

/// The defaults documented in the README, used when a profile has no `thresholds`.
ThresholdSet default_thresholds();

/// Why a valid profile can never fail, one line each (empty when it can): no
/// limit that fails (every threshold a warn, and no counted cost), or a fall
/// of 100 % or more as the fail limit of a figure that cannot fall that far.
/// `perfgate validate` warns with them (issue 48: it said ok to a gate that
/// could only ever pass or warn).
std::vector<std::string> never_fails(const Profile& profile);

/// Where `url`'s userinfo ("user:secret" of "http://user:secret@host/") lies:
/// the offset of its first byte and of the '@' after it; nullopt without one.
std::optional<std::pair<size_t, size_t>> url_userinfo(const std::string& url);

/// The URL as it may be printed or stored: a password in it replaced,
/// "http://user:secret@host/" -> "http://user:<redacted>@host/".
std::string redacted_url(const std::string& url);

/// The URL of `target` as messages, reports and the store show it: `${VAR}`
/// where the profile took one (never its value), a password redacted.
std::string shown_url(const TargetSpec& target);

/// Header names whose values are never stored or printed.
bool is_secret_header(std::string_view name);

}  // namespace perfgate
