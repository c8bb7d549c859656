#include "perfgate/load/http_response_parser.h"

#include <http_parser.h>

namespace perfgate {

struct HttpResponseParser::State {
  http_parser parser{};
  http_parser_settings settings{};
  std::vector<Response>* done = nullptr;  // the caller's, during one feed()
  bool head = false;
  bool in_message = false;
};

namespace {

using State = HttpResponseParser::State;

State& state_of(http_parser* p) {
  return *static_cast<State*>(p->data);
}

int on_message_begin(http_parser* p) {
  state_of(p).in_message = true;
  return 0;
}

// Returning 1 tells http_parser that no body follows. RFC 9112 6.3: a response
// to HEAD, a 1xx, a 204 and a 304 end at their headers whatever Content-Length
// says; http_parser 2.9 would otherwise wait for a 304's announced bytes and
// swallow the start of the next response as its body.
int on_headers_complete(http_parser* p) {
  unsigned status = p->status_code;
  bool bodiless = status / 100 == 1 || status == 204 || status == 304;
  return state_of(p).head || bodiless ? 1 : 0;
}

int on_message_complete(http_parser* p) {
  State& s = state_of(p);
  s.in_message = false;
  // 100 Continue and friends precede the real response on the same request.
  bool interim = p->status_code >= 100 && p->status_code < 200 && p->status_code != 101;
  if (!interim)
    s.done->push_back({static_cast<int>(p->status_code), http_should_keep_alive(p) != 0});
  return 0;
}

}  // namespace

HttpResponseParser::HttpResponseParser() : state_(std::make_unique<State>()) {
  http_parser_settings_init(&state_->settings);
  state_->settings.on_message_begin = on_message_begin;
  state_->settings.on_headers_complete = on_headers_complete;
  state_->settings.on_message_complete = on_message_complete;
  reset();
}

HttpResponseParser::~HttpResponseParser() = default;

void HttpResponseParser::set_head_request(bool head) {
  state_->head = head;
}

bool HttpResponseParser::feed(std::string_view bytes, std::vector<Response>& done) {
  State& s = *state_;
  s.done = &done;
  size_t parsed = http_parser_execute(&s.parser, &s.settings, bytes.data(), bytes.size());
  s.done = nullptr;
  // An upgrade (101) stops the parser early; bytes after it are not HTTP.
  if (s.parser.upgrade) return true;
  return parsed == bytes.size() && HTTP_PARSER_ERRNO(&s.parser) == HPE_OK;
}

bool HttpResponseParser::finish(std::vector<Response>& done) {
  if (!state_->in_message) return true;
  // A zero-length execute is http_parser's way of saying EOF.
  if (!feed({}, done)) return false;
  return !state_->in_message;
}

InvalidAnswer HttpResponseParser::invalid() const {
  switch (HTTP_PARSER_ERRNO(&state_->parser)) {
    case HPE_UNEXPECTED_CONTENT_LENGTH:
      return kBothLengthAndChunked;
    // Refused in its first bytes: no "HTTP/1.x NNN" status line at all.
    case HPE_INVALID_CONSTANT:
    case HPE_INVALID_VERSION:
      return kNoStatusLine;
    default:
      return kMalformed;
  }
}

bool HttpResponseParser::idle() const {
  return !state_->in_message;
}

void HttpResponseParser::reset() {
  http_parser_init(&state_->parser, HTTP_RESPONSE);
  state_->parser.data = state_.get();
  state_->in_message = false;
}

}  // namespace perfgate
