#include "curl_handles.h"

#include <curl/curl.h>

#include <mutex>

#include "perfgate/core/error.h"

namespace perfgate {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("cannot initialize libcurl");
  });
}

void count_transfer_error(int curl_code, ErrorCounts& errors) {
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      ++errors.connect;
      break;
    case CURLE_OPERATION_TIMEDOUT:
      ++errors.timeout;
      break;
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      ++errors.read;
      break;
    case CURLE_WEIRD_SERVER_REPLY:
      errors.count_invalid(kMalformed);
      break;
    case CURLE_UNSUPPORTED_PROTOCOL:  // what libcurl makes of an HTTP/0.9 answer
      errors.count_invalid(kNoStatusLine);
      break;
    case CURLE_SEND_ERROR:
      ++errors.write;
      break;
    default:
      ++errors.other;
  }
}

}  // namespace perfgate
