#include "http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>

#include "perfgate/core/error.h"
#include "perfgate/profile/profile.h"

namespace perfgate {
namespace {

struct EasyCleanup {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
struct ListCleanup {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Easy = std::unique_ptr<CURL, EasyCleanup>;
using HeaderList = std::unique_ptr<curl_slist, ListCleanup>;

constexpr long kConnectTimeoutMs = 10'000;

long whole_ms(Nanos d) {
  return std::max<long>(1, std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

// An API's answer is read up to this, then the transfer ends (CURLE_WRITE_ERROR):
// a page of comments is well under 1 MiB, and an endless answer took 2.2 GB.
constexpr size_t kMaxAnswerBytes = 16 << 20;

size_t append_body(char* data, size_t size, size_t count, void* body) {
  auto* text = static_cast<std::string*>(body);
  if (text->size() + size * count > kMaxAnswerBytes) return 0;
  text->append(data, size * count);
  return size * count;
}

// Non-zero aborts the transfer: how SIGINT reaches a request under way.
int check_stop(void* stop, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(stop)->load() ? 1 : 0;
}

HeaderList header_list(const std::vector<std::string>& headers) {
  HeaderList list;
  for (const auto& h : headers) {
    curl_slist* grown = curl_slist_append(list.get(), h.c_str());
    if (!grown) throw Error("out of memory building an HTTP request");
    list.release();
    list.reset(grown);
  }
  return list;
}

}  // namespace

std::string without_userinfo(const std::string& url) {
  auto userinfo = url_userinfo(url);
  if (!userinfo) return url;
  return url.substr(0, userinfo->first) + "***" + url.substr(userinfo->second);
}

HttpResponse HttpClient::send(const HttpRequest& request) const {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  Easy easy(curl_easy_init());
  if (!easy) throw Error("cannot start an HTTP request (curl_easy_init failed)");
  CURL* h = easy.get();
  HttpResponse response;
  auto header_lines = request.headers;
  header_lines.push_back("Expect:");  // no second's wait for "100 Continue" before a body
  auto headers = header_list(header_lines);
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (!request.body.empty() || request.method != "GET") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, std::min(kConnectTimeoutMs, whole_ms(timeout_)));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, whole_ms(timeout_));
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, check_stop);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &stop_);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_USERAGENT, "perfgate");  // GitHub refuses requests without one
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  CURLcode rc = curl_easy_perform(h);
  std::string what = request.method + " " + without_userinfo(request.url);
  if (rc == CURLE_ABORTED_BY_CALLBACK) throw Error(what + ": interrupted by a signal");
  if (rc == CURLE_WRITE_ERROR && response.body.size() + CURL_MAX_WRITE_SIZE > kMaxAnswerBytes)
    throw Error(what + ": the answer is larger than 16 MiB; not an API's answer");
  if (rc != CURLE_OK)
    throw Error(what + ": " + (*error ? std::string(error) : curl_easy_strerror(rc)));
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace perfgate
