#include "perfgate/core/load_result.h"

namespace perfgate {

void ErrorCounts::merge(const ErrorCounts& o) {
  connect += o.connect;
  read += o.read;
  write += o.write;
  timeout += o.timeout;
  other += o.other;
}

void StatusCounts::count(int status_code) {
  int cls = status_code / 100;
  ++by_class[cls >= 1 && cls <= 5 ? static_cast<size_t>(cls) : 0];
}

uint64_t StatusCounts::non_2xx_3xx() const {
  return by_class[0] + by_class[1] + by_class[4] + by_class[5];
}

void StatusCounts::merge(const StatusCounts& o) {
  for (size_t i = 0; i < by_class.size(); ++i) by_class[i] += o.by_class[i];
}

void IterationStats::merge(const IterationStats& o) {
  responses += o.responses;
  bytes_read += o.bytes_read;
  errors.merge(o.errors);
  statuses.merge(o.statuses);
  latency.merge(o.latency);
  latency_uncorrected.merge(o.latency_uncorrected);
  late += o.late;
  never_sent += o.never_sent;
}

double IterationStats::error_rate_pct() const {
  uint64_t n = attempts();
  if (n == 0) return 0.0;
  return 100.0 * static_cast<double>(errors.total() + statuses.failed()) / static_cast<double>(n);
}

double Iteration::throughput_rps() const {
  double seconds = to_seconds(duration);
  return seconds > 0 ? static_cast<double>(stats.responses) / seconds : 0.0;
}

std::vector<const Iteration*> LoadResult::kept() const {
  std::vector<const Iteration*> out;
  for (const auto& it : iterations)
    if (!it.discarded) out.push_back(&it);
  return out;
}

IterationStats LoadResult::kept_total() const {
  IterationStats total;
  for (const auto* it : kept()) total.merge(it->stats);
  return total;
}

Nanos LoadResult::kept_duration() const {
  Nanos total{0};
  for (const auto* it : kept()) total += it->duration;
  return total;
}

}  // namespace perfgate
