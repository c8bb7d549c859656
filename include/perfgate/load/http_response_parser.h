#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "perfgate/core/load_result.h"

namespace perfgate {

/// Incremental HTTP/1.x response parser for the native engine: a thin wrapper
/// of Debian's http_parser (the one wrk uses). Bytes go in as they arrive, cut
/// anywhere; each complete final response comes out with its status and
/// whether the connection stays open. Bodies are counted, never kept, so
/// memory stays flat whatever the response size.
class HttpResponseParser {
 public:
  /// One complete response.
  struct Response {
    int status = 0;
    bool keep_alive = true;  // false: the server closes (or must be closed) after it
  };

  HttpResponseParser();
  ~HttpResponseParser();
  HttpResponseParser(const HttpResponseParser&) = delete;
  HttpResponseParser& operator=(const HttpResponseParser&) = delete;

  /// Responses to a HEAD request carry headers only; set before their bytes come.
  void set_head_request(bool head);
  /// Parses `bytes`, appending each complete response to `done` (several when
  /// responses were pipelined). Interim 1xx responses (100 Continue) are
  /// skipped. Returns false on a malformed response: the connection is then
  /// unusable and the parser must be reset().
  bool feed(std::string_view bytes, std::vector<Response>& done);
  /// The peer closed: completes a response whose body runs to the end of the
  /// connection. False when a response was cut short.
  bool finish(std::vector<Response>& done);
  /// After feed() or finish() returned false: why the answer was refused.
  InvalidAnswer invalid() const;
  /// True between responses (nothing of the next one seen yet).
  bool idle() const;
  /// Ready for a new connection.
  void reset();

  struct State;  // http_parser's, kept out of this header

 private:
  std::unique_ptr<State> state_;
};

}  // namespace perfgate
