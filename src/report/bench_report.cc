#include "perfgate/report/bench_report.h"

#include <cctype>
#include <cstdarg>
#include <cstdio>

namespace perfgate {
namespace {

__attribute__((format(printf, 1, 2))) std::string format(const char* fmt, ...) {
  char buffer[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return buffer;
}

// wrk's print_units: a value right-aligned in `width`, where the unit's letters
// may reach into the two spaces that separate columns ("0.89ms", "5.00s ").
std::string column(const std::string& value, int width) {
  int pad = 2;
  size_t len = value.size();
  if (len >= 1 && std::isalpha(static_cast<unsigned char>(value[len - 1]))) --pad;
  if (len >= 2 && std::isalpha(static_cast<unsigned char>(value[len - 2]))) --pad;
  width -= pad;
  return format("%*.*s%.*s", width, width, value.c_str(), pad, "  ");
}

std::string time_column(double ns, int width) {
  return column(format_time_us(ns / 1000), width);
}

// wrk's Latency row. The Req/Sec row is left out: perfgate does not sample
// per-thread request rates, and an invented row would read as a measurement.
std::string thread_stats(const LatencyHistogram& latency) {
  double within = latency.empty() ? 0 : latency.within_stdev_pct();
  return format("  Thread Stats%6s%11s%8s%12s\n", "Avg", "Stdev", "Max", "+/- Stdev") + "    " +
         format("%-10s", "Latency") + time_column(latency.mean_ns(), 8) +
         time_column(latency.stdev_ns(), 10) +
         time_column(static_cast<double>(latency.max_ns()), 9) + format("%8.2f%%\n", within);
}

std::string latency_distribution(const LatencyHistogram& latency) {
  std::string text = "  Latency Distribution\n";
  for (double p : {50.0, 75.0, 90.0, 99.0})
    text += format("%7.0f%%", p) + time_column(static_cast<double>(latency.percentile_ns(p)), 10) +
            "\n";
  return text;
}

// wrk prints these lines only when something went wrong. wrk has no "other"
// kind; perfgate shows it only when non-zero rather than hide such failures.
std::string problems(const IterationStats& total) {
  const ErrorCounts& e = total.errors;
  std::string text;
  if (e.total() > 0) {
    text += format(
        "  Socket errors: connect %llu, read %llu, write %llu, timeout %llu",
        static_cast<unsigned long long>(e.connect), static_cast<unsigned long long>(e.read),
        static_cast<unsigned long long>(e.write), static_cast<unsigned long long>(e.timeout));
    if (e.other > 0) text += format(", other %llu", static_cast<unsigned long long>(e.other));
    text += "\n";
  }
  if (uint64_t bad = total.statuses.non_2xx_3xx(); bad > 0)
    text += format("  Non-2xx or 3xx responses: %llu\n", static_cast<unsigned long long>(bad));
  return text;
}

// Open model only: what was asked against what came, and the latency a client
// without coordinated-omission correction would have printed.
std::string open_model(const LoadPlan& plan, const IterationStats& total, double rps) {
  if (plan.rate <= 0) return "";
  std::string text = format("  Rate: %.2f requests/s asked, %.2f achieved%s\n", plan.rate, rps,
                            rps < 0.95 * plan.rate ? " (FELL SHORT)" : "");
  text += format("  Late requests: %llu, never sent: %llu\n",
                 static_cast<unsigned long long>(total.late),
                 static_cast<unsigned long long>(total.never_sent));
  const auto& u = total.latency_uncorrected;
  text += format("  Uncorrected latency (from the actual send): p50 %s, p99 %s, p99.9 %s\n",
                 format_time_us(static_cast<double>(u.percentile_ns(50)) / 1e3).c_str(),
                 format_time_us(static_cast<double>(u.percentile_ns(99)) / 1e3).c_str(),
                 format_time_us(static_cast<double>(u.percentile_ns(99.9)) / 1e3).c_str());
  return text;
}

}  // namespace

std::string bench_report(const LoadPlan& plan, const LoadResult& result,
                         bool latency_distribution_wanted) {
  const IterationStats total = result.kept_total();
  const double seconds = to_seconds(result.kept_duration());
  // The length of the kept windows, as wrk prints its -d.
  const Nanos planned = plan.duration * std::max(1, plan.iterations - plan.discard);
  // The URL as the store keeps it: a password in it stays off the terminal and CI logs.
  std::string text =
      "Running " + format_duration(planned) + " test @ " + redacted_url(plan.target.url) + "\n";
  text += format("  %d threads and %d connections\n", plan.threads, plan.connections);
  text += thread_stats(total.latency);
  if (latency_distribution_wanted) text += latency_distribution(total.latency);
  text +=
      format("  %llu requests in %s, %sB read\n", static_cast<unsigned long long>(total.responses),
             format_time_us(seconds * 1e6).c_str(),
             format_binary(static_cast<double>(total.bytes_read)).c_str());
  text += problems(total);
  double rps = seconds > 0 ? static_cast<double>(total.responses) / seconds : 0;
  double bps = seconds > 0 ? static_cast<double>(total.bytes_read) / seconds : 0;
  text += open_model(plan, total, rps);
  text += format("Requests/sec: %9.2f\n", rps);
  text += format("Transfer/sec: %10sB\n", format_binary(bps).c_str());
  return text;
}

}  // namespace perfgate
