#pragma once

// GateResult values for the reporter tests, written out by hand rather than
// produced by judge(): a reporter test must not change when the verdict logic
// does, and each case below is one situation a report has to show well.
// Also the golden-file comparison the reporter tests share.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/report/gate_result.h"
#include "support/test_support.h"

namespace perfgate::testing {

/// Starts from a plausible passing run of the demo profile with a baseline;
/// each method changes one aspect. build() returns a copy, so a builder can
/// make several variants.
class GateResultBuilder {
 public:
  GateResultBuilder() {
    describe_run();
    describe_load();
    describe_host();
    add_metrics();
  }

  /// Sets a metric's figures; change_pct follows (none when the baseline is 0).
  GateResultBuilder& metric(std::string_view key, double value, std::optional<double> baseline) {
    MetricCheck& c = check(key);
    c.value = value;
    c.baseline = baseline;
    c.change_pct = std::nullopt;
    if (baseline && *baseline != 0) c.change_pct = (value - *baseline) / *baseline * 100;
    return *this;
  }

  /// The noise test of a metric's change: interval and p-value, the run-level t
  /// test of a run of 5 kept iterations against 5 baseline runs (25 pooled).
  GateResultBuilder& tested(std::string_view key, double low_pct, double high_pct, double p_value) {
    ChangeTest t;
    t.ci_low_pct = low_pct;
    t.ci_high_pct = high_pct;
    t.p_value = p_value;
    t.significant = p_value < 0.05;
    t.n_now = 5;
    t.n_base = 25;
    t.baseline_runs = 5;
    t.method = "run-level t (5 runs)";
    t.estimate_pct = check(key).change_pct.value_or((low_pct + high_pct) / 2);
    t.unit = "runs";
    // 80 % power at 95 % with 4 df: 1 + t.ppf(0.8, 4) / t.ppf(0.975, 4) (SciPy 1.10).
    t.detectable_pct = (high_pct - low_pct) / 2 * 1.3389098438992886;
    check(key).test = t;
    return *this;
  }

  /// Sets a metric's verdict and the judge's message about it.
  GateResultBuilder& judged(std::string_view key, Verdict verdict, std::string message) {
    check(key).verdict = verdict;
    check(key).message = std::move(message);
    return *this;
  }

  /// The overall verdict, with the contract's exit code.
  GateResultBuilder& verdict(Verdict verdict) {
    result_.verdict = verdict;
    result_.exit_code = exit_code_of(verdict);
    return *this;
  }

  /// The first run of a profile: nothing to compare with.
  GateResultBuilder& without_baseline() {
    result_.baseline_run_id = std::nullopt;
    result_.baseline_commit.clear();
    result_.baseline_run_ids.clear();
    result_.run_id = 1;
    for (MetricCheck& c : result_.checks) {
      c.baseline = std::nullopt;
      c.change_pct = std::nullopt;
      c.test = std::nullopt;
    }
    return *this;
  }

  GateResultBuilder& saturated(std::vector<std::string> reasons) {
    result_.saturation = {true, std::move(reasons), {}};
    return *this;
  }

  GateResultBuilder& note(std::string text) {
    result_.notes.push_back(std::move(text));
    return *this;
  }

  /// No verdict could be made: no figures, no run recorded.
  GateResultBuilder& error(std::string message) {
    verdict(Verdict::kError);
    result_.error = std::move(message);
    result_.checks.clear();
    result_.run_id = std::nullopt;
    result_.recorded = false;
    result_.baseline_run_id = std::nullopt;
    result_.baseline_commit.clear();
    result_.baseline_run_ids.clear();
    result_.iterations_kept = 0;
    result_.iterations_total = 0;
    result_.kept_seconds = 0;
    result_.totals = {};
    return *this;
  }

  /// For anything the methods above do not cover.
  GateResult& result() { return result_; }
  GateResult build() const { return result_; }

 private:
  static ExitStatus exit_code_of(Verdict verdict) {
    switch (verdict) {
      case Verdict::kPass:
        return ExitStatus::kPass;
      case Verdict::kWarn:
        return ExitStatus::kWarn;
      case Verdict::kFail:
        return ExitStatus::kFail;
      case Verdict::kError:
        return ExitStatus::kError;
    }
    return ExitStatus::kError;
  }

  MetricCheck& check(std::string_view key) {
    for (MetricCheck& c : result_.checks)
      if (c.metric == key) return c;
    throw std::invalid_argument("no metric " + std::string(key));
  }

  void describe_run() {
    result_.profile_name = "hello";
    result_.profile_hash = "3f2a9c1b7e4d5a60918273645546372819a0b1c2d3e4f5061728394a5b6c7d8e";
    result_.profile_source = "ci/profiles/hello.json";
    result_.target_url = "http://127.0.0.1:18080/";
    result_.started_at = "2026-11-29T23:43:29Z";
    result_.duration_s = 14.24681;
    result_.run_id = 2;
    result_.recorded = true;
    result_.baseline_run_id = 1;
    result_.baseline_commit = "abc1234def5678901234567890abcdef12345678";
    result_.baseline_run_ids = {1};
    result_.ci = {"github",
                  "0123456789abcdef0123456789abcdef01234567",
                  "feature/faster-hello",
                  "main",
                  "9876543210",
                  ""};
  }

  void describe_load() {
    result_.engine = "curl";
    result_.threads = 1;
    result_.connections = 16;
    result_.iterations_kept = 5;
    result_.iterations_total = 6;
    result_.kept_seconds = 5.0;
    result_.totals.responses = 104384;
    result_.totals.bytes_read = 12526080;
    result_.totals.statuses.by_class[2] = 104384;
  }

  void describe_host() {
    result_.host_summary.samples = 20;
    result_.host_summary.host_cpu_mean_pct = 46.25;
    result_.host_summary.host_cpu_max_pct = 71.5;
    result_.host_summary.generator_thread_max_pct = 58.0;
    result_.host_summary.foreign_cpu_max_pct = 3.25;
    result_.host_summary.memory_available_min_pct = 81.0;
    result_.host_summary.service_cpu_us_per_request = 35.7;
    result_.host.fields = {{"os", "Debian GNU/Linux 12 (bookworm)"},
                           {"kernel", "6.1.0-28-amd64"},
                           {"arch", "x86_64"},
                           {"cpu_model", "Intel(R) Xeon(R) CPU @ 2.20GHz"},
                           {"cpus", "2"},
                           {"memory_gib", "7.8"},
                           {"virtualization", "kvm"},
                           {"perfgate_version", "0.1.0"},
                           {"libcurl_version", "7.88.1"}};
  }

  static Thresholds limits(std::optional<double> warn_pct, std::optional<double> fail_pct,
                           std::optional<double> max = std::nullopt) {
    Thresholds t;
    t.warn_pct = warn_pct;
    t.fail_pct = fail_pct;
    t.max = max;
    return t;
  }

  void add(std::string key, std::string unit, Thresholds limits) {
    MetricCheck c;
    c.metric = std::move(key);
    c.unit = std::move(unit);
    c.thresholds = limits;
    c.gated = limits.any();
    result_.checks.push_back(std::move(c));
  }

  // The contract's metrics with the demo profile's limits.
  void add_metrics() {
    add("throughput_rps", "req/s", limits(10, 25));
    add("latency_p50_ms", "ms", {});
    add("latency_p75_ms", "ms", {});
    add("latency_p90_ms", "ms", {});
    add("latency_p99_ms", "ms", limits(25, 50, 50));
    add("latency_p999_ms", "ms", {});
    add("latency_max_ms", "ms", {});
    add("error_rate_pct", "%", limits(std::nullopt, std::nullopt, 0.1));
    metric("throughput_rps", 20876.9, 21034.2).metric("latency_p50_ms", 0.912, 0.905);
    metric("latency_p75_ms", 1.118, 1.1);
    metric("latency_p90_ms", 1.404, 1.388).metric("latency_p99_ms", 2.044, 1.912);
    metric("latency_p999_ms", 3.871, 3.65).metric("latency_max_ms", 9.125, 8.412);
    metric("error_rate_pct", 0, 0);
    tested("throughput_rps", -2.1, 0.6, 0.31).tested("latency_p99_ms", 1.2, 12.5, 0.018);
    judged("throughput_rps", Verdict::kPass,
           "throughput_rps 20876.9 req/s vs baseline 21034.2 req/s (-0.7%, 95% CI "
           "-2.1%..+0.6%, p=0.310), within limits");
    judged("latency_p99_ms", Verdict::kPass,
           "latency_p99_ms 2.044 ms vs baseline 1.912 ms (+6.9%, 95% CI +1.2%..+12.5%, "
           "p=0.018), within limits");
    judged("error_rate_pct", Verdict::kPass,
           "error_rate_pct 0.000% vs baseline 0.000%, within limits");
  }

  GateResult result_;
};

/// Every metric within its limits.
inline GateResult pass_result() {
  return GateResultBuilder().build();
}

/// pass_result() of a service perfgate found by its listener, in a cgroup of its own.
inline GateResult attributed_service_result() {
  GateResult r = pass_result();
  AttributedService s;
  s.pid = 4242;
  s.roots = {4242};
  s.name = "api-server";
  s.listener = "127.0.0.1:8080";
  s.cgroup = "/system.slice/docker-3f2a9c0d11.scope";
  s.how = "listening on 127.0.0.1:8080";
  r.host_summary.service = s;
  r.host_summary.shared_cpu_pct = 12.5;  // its threads known: a placement class
  return r;
}

/// p99 past its warn limit, within its fail limit.
inline GateResult warn_result() {
  return GateResultBuilder()
      .metric("latency_p99_ms", 2.501, 1.912)
      .tested("latency_p99_ms", 22.4, 39.0, 0.0004)
      .judged("latency_p99_ms", Verdict::kWarn,
              "latency_p99_ms 2.501 ms vs baseline 1.912 ms (+30.8%, 95% CI +22.4%..+39.0%, "
              "p<0.001), warn limit +25%")
      .verdict(Verdict::kWarn)
      .build();
}

/// Throughput past its fail limit, p99 in the warn band, and an error rate over
/// its absolute limit against a baseline of zero (no relative change).
inline GateResult fail_result() {
  return GateResultBuilder()
      .metric("throughput_rps", 14211.0, 21034.2)
      .tested("throughput_rps", -36.0, -28.5, 0.0002)
      .judged("throughput_rps", Verdict::kFail,
              "throughput_rps 14211.0 req/s vs baseline 21034.2 req/s (-32.4%, 95% CI "
              "-36.0%..-28.5%, p<0.001), fail limit -25%")
      .metric("latency_p99_ms", 2.501, 1.912)
      .tested("latency_p99_ms", 22.4, 39.0, 0.0004)
      .judged("latency_p99_ms", Verdict::kWarn,
              "latency_p99_ms 2.501 ms vs baseline 1.912 ms (+30.8%, 95% CI +22.4%..+39.0%, "
              "p<0.001), warn limit +25%")
      .metric("error_rate_pct", 0.25, 0)
      .judged("error_rate_pct", Verdict::kFail, "error_rate_pct 0.250% is above the max 0.100%")
      .verdict(Verdict::kFail)
      .build();
}

/// The would-be failure of fail_result() on a saturated load machine: a warn.
inline GateResult saturated_result() {
  return GateResultBuilder()
      .metric("throughput_rps", 14211.0, 21034.2)
      .judged("throughput_rps", Verdict::kWarn,
              "inconclusive, load machine saturated: generator thread 0 at 97% of a core; host "
              "CPU steal 12% (limit 5%) (would fail: throughput_rps 14211.0 req/s vs baseline "
              "21034.2 req/s (-32.4%), fail limit -25.0%)")
      .saturated({"generator thread 0 at 97% of a core", "host CPU steal 12% (limit 5%)"})
      .note(
          "load machine saturated: generator thread 0 at 97% of a core; host CPU steal 12% "
          "(limit 5%); this run is inconclusive and never becomes a baseline")
      .verdict(Verdict::kWarn)
      .build();
}

/// No verdict: the target never answered.
inline GateResult error_result() {
  return GateResultBuilder()
      .error(
          "service.ready_url http://127.0.0.1:18080/health did not answer within 30s "
          "(connection refused)")
      .build();
}

/// The first run of the profile: only absolute limits apply.
inline GateResult no_baseline_result() {
  return GateResultBuilder()
      .without_baseline()
      .note("no baseline yet: this run becomes the baseline")
      .build();
}

/// fail_result() with markup, quotes, a control character and a byte that is
/// not UTF-8 in every text a user or the environment controls.
inline GateResult hostile_result() {
  GateResult r = fail_result();
  const std::string nasty = "<&\"'|> `*_[x](y)` #1 ]]> \x01\x1b[31m \xff";
  r.profile_name = "shop " + nasty;
  r.profile_source = "ci/profiles/<&>.json";
  r.target_url = "http://127.0.0.1:18080/?a=1&b=<2>";
  r.ci.branch = "feat/" + nasty;
  r.baseline_commit = "<&\"'>";
  r.notes.push_back("note " + nasty + "\nsecond line");
  r.host.fields["cpu_model"] = "cpu " + nasty;
  r.checks.front().message = "throughput " + nasty;
  return r;
}

/// One case of the golden tests: tests/golden/<format>_<name>.<ext>.
struct NamedResult {
  std::string name;
  GateResult (*make)();
};

/// Every case each reporter is checked against, for parameterized tests.
inline std::vector<NamedResult> report_cases() {
  return {{"pass", pass_result},       {"warn", warn_result},
          {"fail", fail_result},       {"saturated", saturated_result},
          {"error", error_result},     {"no_baseline", no_baseline_result},
          {"hostile", hostile_result}, {"service", attributed_service_result}};
}

/// What gtest prints for a case (instead of its bytes).
inline void PrintTo(const NamedResult& r, std::ostream* os) {
  *os << r.name;
}

/// gtest's name for a parameterized case: its name.
inline std::string case_name(const ::testing::TestParamInfo<NamedResult>& info) {
  return info.param.name;
}

/// Compares `actual` with tests/golden/<name>. To accept a deliberate change of
/// a format, run the tests with PERFGATE_UPDATE_GOLDEN=1: the golden files are
/// rewritten from the current output; review them with `git diff` before committing.
inline void expect_golden(const std::string& name, const std::string& actual) {
  std::filesystem::path path = source_dir() / "tests" / "golden" / name;
  const char* update = std::getenv("PERFGATE_UPDATE_GOLDEN");
  if (update && std::string_view(update) == "1") {
    write_file(path, actual);
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path))
      << path << " is missing; create it with PERFGATE_UPDATE_GOLDEN=1";
  EXPECT_EQ(read_file(path), actual) << "differs from " << path;
}

}  // namespace perfgate::testing
