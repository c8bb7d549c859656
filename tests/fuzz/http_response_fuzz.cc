// HttpResponseParser (the native engine's response handling) on arbitrary
// bytes from a server, cut into reads at points the fuzzer chooses. Beyond
// "no crash, no sanitizer report": however the bytes are cut, the parser gives
// the same responses and the same verdict as when they come in one read; a
// reset() parser behaves like a new one; and no response is made of nothing.
//
// Input layout (FuzzedDataProvider takes integers from the end): the payload
// is the front of the input, so a seed file is a server's response as it was
// sent, followed by a few control bytes.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "perfgate/load/http_response_parser.h"

namespace {

using perfgate::HttpResponseParser;
using Responses = std::vector<HttpResponseParser::Response>;

struct Outcome {
  bool ok = true;        // every feed() accepted its bytes
  bool finished = true;  // finish() after the last read, when every feed was ok
  bool idle = true;      // idle() after finish()
  Responses done;
};

void check(bool condition) {
  if (!condition) __builtin_trap();
}

bool same(const Responses& a, const Responses& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].status != b[i].status || a[i].keep_alive != b[i].keep_alive) return false;
  return true;
}

// Feeds `bytes` in reads of the given sizes (the rest in one last read), as
// the native engine does: it stops at the first malformed read, and an empty
// read is never a feed() but the peer closing, which is finish().
Outcome parse(HttpResponseParser& parser, std::string_view bytes, bool head,
              const std::vector<size_t>& cuts) {
  Outcome out;
  parser.set_head_request(head);
  size_t at = 0;
  for (size_t i = 0; i <= cuts.size() && at < bytes.size() && out.ok; ++i) {
    size_t n = i < cuts.size() ? cuts[i] : bytes.size() - at;
    n = std::min(n, bytes.size() - at);
    if (n == 0) continue;
    size_t before = out.done.size();
    out.ok = parser.feed(bytes.substr(at, n), out.done);
    // Nothing can complete in fewer bytes than "HTTP/1.1 200\n\n" needs.
    check(out.done.size() - before <= n / 8 + 1);
    at += n;
  }
  if (out.ok) {
    out.finished = parser.finish(out.done);
    out.idle = parser.idle();
    if (out.finished) check(out.idle);
  }
  for (const auto& r : out.done) {
    check(r.status >= 0 && r.status <= 999);
    // Interim responses (1xx but 101) are skipped, never reported.
    check(r.status < 100 || r.status >= 200 || r.status == 101);
  }
  return out;
}

bool has_upgrade(const Responses& done) {
  for (const auto& r : done)
    if (r.status == 101) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  const bool head = input.ConsumeBool();
  std::vector<size_t> cuts(input.ConsumeIntegralInRange<size_t>(0, 16));
  for (auto& cut : cuts) cut = input.ConsumeIntegralInRange<size_t>(0, 512);
  const std::string bytes = input.ConsumeRemainingBytesAsString();

  HttpResponseParser whole_parser;
  const Outcome whole = parse(whole_parser, bytes, head, {});
  HttpResponseParser split_parser;
  const Outcome split = parse(split_parser, bytes, head, cuts);
  // After a 101 the bytes are another protocol: the parser stops early and
  // where the reads were cut decides what it sees next. Before it, every cut
  // must agree with one read.
  if (!has_upgrade(whole.done) && !has_upgrade(split.done)) {
    check(whole.ok == split.ok);
    check(same(whole.done, split.done));
    if (whole.ok) check(whole.finished == split.finished && whole.idle == split.idle);
  }

  // The engine reuses a parser for the next connection after reset().
  split_parser.reset();
  const Outcome again = parse(split_parser, bytes, head, {});
  check(again.ok == whole.ok && same(again.done, whole.done));
  check(again.finished == whole.finished && again.idle == whole.idle);
  return 0;
}
