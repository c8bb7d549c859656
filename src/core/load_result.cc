#include "perfgate/core/load_result.h"

#include "perfgate/core/success_statuses.h"

namespace perfgate {

void ErrorCounts::merge(const ErrorCounts& o) {
  connect += o.connect;
  read += o.read;
  write += o.write;
  timeout += o.timeout;
  other += o.other;
  invalid += o.invalid;
  invalid_why |= o.invalid_why;
}

std::string ErrorCounts::invalid_text() const {
  if (invalid == 0) return "";
  std::string why;
  auto add = [&](uint32_t bit, const char* words) {
    if (!(invalid_why & bit)) return;
    why += (why.empty() ? "" : "; ") + std::string(words);
  };
  add(kBothLengthAndChunked, "both Content-Length and chunked");
  add(kNoStatusLine, "no HTTP status line: HTTP/0.9, or not HTTP");
  add(kMalformed, "not valid HTTP/1.1");
  return std::to_string(invalid) + (invalid == 1 ? " invalid response" : " invalid responses") +
         " (" + why + ")";
}

std::string ErrorCounts::kinds_text() const {
  std::string text;
  auto add = [&](const char* kind, uint64_t n) {
    if (n > 0) text += (text.empty() ? "" : ", ") + std::string(kind) + " x " + std::to_string(n);
  };
  add("connect", connect);
  add("read", read);
  add("write", write);
  add("timeout", timeout);
  add("other", other);
  return text;
}

namespace {

size_t class_of(int status_code) {
  int cls = status_code / 100;
  return cls >= 1 && cls <= 5 ? static_cast<size_t>(cls) : 0;
}

bool success_class(size_t cls) {
  return cls == 2 || cls == 3;
}

}  // namespace

void StatusCounts::count(int status_code) {
  count(status_code, SuccessStatuses::default_success(status_code));
}

void StatusCounts::count(int status_code, bool success) {
  size_t cls = class_of(status_code);
  ++by_class[cls];
  if (success != success_class(cls)) ++overridden[cls];
}

uint64_t StatusCounts::non_2xx_3xx() const {
  return by_class[0] + by_class[1] + by_class[4] + by_class[5];
}

std::array<uint64_t, 6> StatusCounts::failed_by_class() const {
  std::array<uint64_t, 6> failed{};
  for (size_t cls = 0; cls < by_class.size(); ++cls)
    failed[cls] = success_class(cls) ? overridden[cls] : by_class[cls] - overridden[cls];
  return failed;
}

uint64_t StatusCounts::failed() const {
  uint64_t failures = 0;
  for (uint64_t n : failed_by_class()) failures += n;
  return failures;
}

std::string StatusCounts::failed_text() const {
  auto failed = failed_by_class();
  std::string text;
  for (size_t cls : {4, 5, 1, 2, 3, 0}) {  // the usual suspects first
    if (failed[cls] == 0) continue;
    std::string name = cls == 0 ? "other" : std::to_string(cls) + "xx";
    text += (text.empty() ? "" : ", ") + name + " x " + std::to_string(failed[cls]);
  }
  return text;
}

std::array<uint64_t, 6> StatusCounts::stored_classes() const {
  std::array<uint64_t, 6> kept = by_class;
  for (size_t cls = 0; cls < kept.size(); ++cls) {
    kept[cls] -= overridden[cls];
    kept[success_class(cls) ? 0 : 2] += overridden[cls];
  }
  return kept;
}

void StatusCounts::merge(const StatusCounts& o) {
  for (size_t i = 0; i < by_class.size(); ++i) {
    by_class[i] += o.by_class[i];
    overridden[i] += o.overridden[i];
  }
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
