#include "perfgate/report/bench_report.h"

#include <gtest/gtest.h>

#include <string>

namespace perfgate {
namespace {

using namespace std::chrono_literals;

// The value the histogram reports for anything in `ns`'s bucket, so that the
// golden figures below are exact rather than within the histogram's 0.4 %.
uint64_t exact(uint64_t ns) {
  size_t i = LatencyHistogram::bucket_index(ns);
  return (LatencyHistogram::bucket_low(i) + LatencyHistogram::bucket_high(i) - 1) / 2;
}

void record(LatencyHistogram& h, uint64_t ns, int times) {
  for (int i = 0; i < times; ++i) h.record_ns(exact(ns));
}

LoadPlan bench_plan() {
  LoadPlan plan;
  plan.target.url = "http://127.0.0.1:8080/";
  plan.threads = 1;
  plan.connections = 50;
  plan.duration = 5s;
  plan.iterations = 2;
  plan.discard = 1;
  return plan;
}

// A discarded iteration full of failures that must not show, then the kept one.
LoadResult bench_result() {
  LoadResult result;
  result.engine = "curl";
  result.threads = 1;
  result.connections = 50;
  Iteration discarded{.index = 0, .discarded = true, .duration = 5s, .stats = {}};
  discarded.stats.responses = 999;
  discarded.stats.errors.connect = 999;
  discarded.stats.statuses.by_class[5] = 999;
  record(discarded.stats.latency, 900'000'000, 10);
  Iteration kept{.index = 1, .discarded = false, .duration = 5s, .stats = {}};
  kept.stats.responses = 283640;
  kept.stats.bytes_read = 244'893'450;
  record(kept.stats.latency, 250'000, 50);
  record(kept.stats.latency, 491'000, 25);
  record(kept.stats.latency, 700'000, 15);
  record(kept.stats.latency, 5'800'000, 9);
  kept.stats.latency.record_ns(12'920'000);  // the max is exact anyway
  result.iterations = {discarded, kept};
  return result;
}

TEST(BenchReport, PrintsWrksLayoutForACleanRun) {
  EXPECT_EQ(bench_report(bench_plan(), bench_result(), false),
            "Running 5s test @ http://127.0.0.1:8080/\n"
            "  1 threads and 50 connections\n"
            "  Thread Stats   Avg      Stdev     Max   +/- Stdev\n"
            "    Latency     1.01ms    1.98ms  12.92ms   90.00%\n"
            "  283640 requests in 5.00s, 233.55MB read\n"
            "Requests/sec:  56728.00\n"
            "Transfer/sec:     46.71MB\n");
}

TEST(BenchReport, AddsTheLatencyDistributionWhenAsked) {
  // The bucket midpoints of 250us, 491us, 700us and 5.8ms (within 0.4 %).
  std::string text = bench_report(bench_plan(), bench_result(), true);
  EXPECT_NE(text.find("   90.00%\n"
                      "  Latency Distribution\n"
                      "     50%  250.37us\n"
                      "     75%  490.50us\n"
                      "     90%  698.37us\n"
                      "     99%    5.82ms\n"
                      "  283640 requests in 5.00s"),
            std::string::npos)
      << text;
}

TEST(BenchReport, ShowsSocketErrorsAndBadStatusesOnlyWhenThereAreSome) {
  LoadResult result = bench_result();
  IterationStats& kept = result.iterations[1].stats;
  kept.errors = ErrorCounts{.connect = 1, .read = 2, .write = 3, .timeout = 4, .other = 0};
  kept.statuses.by_class[2] = 283628;
  kept.statuses.by_class[5] = 12;
  std::string text = bench_report(bench_plan(), result, false);
  EXPECT_NE(text.find("233.55MB read\n"
                      "  Socket errors: connect 1, read 2, write 3, timeout 4\n"
                      "  Non-2xx or 3xx responses: 12\n"
                      "Requests/sec:"),
            std::string::npos)
      << text;
  kept.errors.other = 5;  // wrk has no such kind: shown only when it happens
  EXPECT_NE(bench_report(bench_plan(), result, false)
                .find("  Socket errors: connect 1, read 2, write 3, timeout 4, other 5\n"),
            std::string::npos);
}

TEST(BenchReport, AnEmptyRunPrintsZeros) {
  LoadPlan plan = bench_plan();
  plan.iterations = 1;
  plan.discard = 0;
  plan.duration = 120s;
  EXPECT_EQ(bench_report(plan, LoadResult{}, true),
            "Running 2m test @ http://127.0.0.1:8080/\n"
            "  1 threads and 50 connections\n"
            "  Thread Stats   Avg      Stdev     Max   +/- Stdev\n"
            "    Latency     0.00us    0.00us   0.00us    0.00%\n"
            "  Latency Distribution\n"
            "     50%    0.00us\n"
            "     75%    0.00us\n"
            "     90%    0.00us\n"
            "     99%    0.00us\n"
            "  0 requests in 0.00us, 0.00B read\n"
            "Requests/sec:      0.00\n"
            "Transfer/sec:       0.00B\n");
}

}  // namespace
}  // namespace perfgate
