#pragma once

// A GitHub or GitLab API on 127.0.0.1, as far as perfgate comment uses it:
// say who the token is (GET .../user), list a pull/merge request's comments
// (paged, each with its author), create one, update one. It records every call, and can be told to
// answer everything with one status, or to never answer at all.

#include <sys/socket.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/engine_fixtures.h"

namespace perfgate::testing {

class FakeForge {
 public:
  struct Call {
    std::string method;
    std::string target;  // path and query
    std::string head;    // request line and headers, as sent
    std::string body;
  };

  uint16_t port() const { return listener_.port(); }
  std::string url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port()) + path;
  }

  /// A comment that is already there (by default someone else's).
  int64_t add_comment(const std::string& body, const std::string& login = "a-reviewer",
                      const std::string& type = "User") {
    std::lock_guard lock(mutex_);
    comments_.emplace_back(next_id_, body);
    authors_[next_id_] = {login, type};
    return next_id_++;
  }
  /// The token's own user: what GET .../user answers and who writes new comments.
  static constexpr const char* kSelf = "perfgate-ci";
  /// As an installation token: GET /user answers 403, and new comments are by
  /// `login`, a Bot: github-actions[bot] for GitHub Actions' GITHUB_TOKEN,
  /// APP-SLUG[bot] for a GitHub App's.
  void act_as_installation_token(const std::string& login = "github-actions[bot]") {
    std::lock_guard lock(mutex_);
    installation_token_ = true;
    installation_login_ = login;
  }
  /// From now on every request gets `status` with `body`.
  void fail_with(int status, std::string body) {
    std::lock_guard lock(mutex_);
    fail_status_ = status;
    fail_body_ = std::move(body);
  }
  /// From now on no request is answered; `marker` is created when one arrives.
  void hang(std::filesystem::path marker) {
    std::lock_guard lock(mutex_);
    hang_marker_ = std::move(marker);
  }

  std::vector<Call> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  std::vector<std::pair<int64_t, std::string>> comments() const {
    std::lock_guard lock(mutex_);
    return comments_;
  }

 private:
  void serve(int fd) {
    std::string buffer;
    char chunk[8192];
    for (;;) {
      size_t end;
      while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<size_t>(n));
      }
      Call call;
      call.head = buffer.substr(0, end + 4);
      size_t length = content_length(call.head);
      while (buffer.size() < end + 4 + length) {
        ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<size_t>(n));
      }
      call.body = buffer.substr(end + 4, length);
      buffer.erase(0, end + 4 + length);
      auto sp1 = call.head.find(' ');
      auto sp2 = call.head.find(' ', sp1 + 1);
      call.method = call.head.substr(0, sp1);
      call.target = call.head.substr(sp1 + 1, sp2 - sp1 - 1);
      std::string response = answer(call);
      if (response.empty()) {  // hanging: hold the connection until the test ends
        while (!listener_.stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return;
      }
      if (::send(fd, response.data(), response.size(), MSG_NOSIGNAL) <= 0) return;
    }
  }

  static size_t content_length(const std::string& head) {
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto at = lower.find("\r\ncontent-length:");
    return at == std::string::npos ? 0 : std::stoul(lower.substr(at + 17));
  }

  static std::string http(int status, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  static std::string query_value(const std::string& target, const std::string& name) {
    auto q = target.find('?');
    if (q == std::string::npos) return "";
    auto at = target.find("?" + name + "=", q);
    if (at == std::string::npos) at = target.find("&" + name + "=", q);
    if (at == std::string::npos) return "";
    auto from = at + name.size() + 2;
    return target.substr(from, target.find('&', from) - from);
  }

  std::string answer(const Call& call) {
    std::lock_guard lock(mutex_);
    calls_.push_back(call);
    if (hang_marker_) {
      std::ofstream(*hang_marker_) << "request\n";
      return "";
    }
    if (fail_status_) return http(fail_status_, fail_body_);
    std::string path = call.target.substr(0, call.target.find('?'));
    if (path.ends_with("/user") && call.method == "GET") {
      if (installation_token_)
        return http(403, R"({"message":"Resource not accessible by integration"})");
      return http(200,
                  nlohmann::json{{"login", kSelf}, {"username", kSelf}, {"type", "User"}}.dump());
    }
    bool list = path.ends_with("/comments") || path.ends_with("/notes");
    if (list && call.method == "GET") return page(call.target);
    if (list && call.method == "POST") {
      comments_.emplace_back(next_id_, nlohmann::json::parse(call.body)["body"].get<std::string>());
      const auto& [login, type] = authors_[next_id_] =
          installation_token_ ? std::pair<std::string, std::string>{installation_login_, "Bot"}
                              : std::pair<std::string, std::string>{kSelf, "User"};
      // As GitHub answers: the new comment, its author named.
      return http(201, nlohmann::json{{"id", next_id_++},
                                      {"user", {{"login", login}, {"type", type}}},
                                      {"author", {{"username", login}}}}
                           .dump());
    }
    if (call.method == "PATCH" || call.method == "PUT") {
      int64_t id = std::stoll(path.substr(path.rfind('/') + 1));
      for (auto& [have, text] : comments_)
        if (have == id) {
          text = nlohmann::json::parse(call.body)["body"].get<std::string>();
          return http(200, nlohmann::json{{"id", id}}.dump());
        }
    }
    return http(404, R"({"message":"Not Found"})");
  }

  std::string page(const std::string& target) {
    size_t per_page = std::stoul("0" + query_value(target, "per_page"));
    size_t number = std::stoul("0" + query_value(target, "page"));
    if (per_page == 0) per_page = 30;
    if (number == 0) number = 1;
    auto items = nlohmann::json::array();
    for (size_t i = (number - 1) * per_page; i < comments_.size() && i < number * per_page; ++i) {
      const auto& [login, type] = authors_[comments_[i].first];
      items.push_back({{"id", comments_[i].first},
                       {"body", comments_[i].second},
                       {"user", {{"login", login}, {"type", type}}},
                       {"author", {{"username", login}}}});
    }
    return http(200, items.dump());
  }

  mutable std::mutex mutex_;
  std::vector<Call> calls_;
  std::vector<std::pair<int64_t, std::string>> comments_;
  std::map<int64_t, std::pair<std::string, std::string>> authors_;  // login, type
  bool installation_token_ = false;
  std::string installation_login_;
  int64_t next_id_ = 1000;
  int fail_status_ = 0;
  std::string fail_body_;
  std::optional<std::filesystem::path> hang_marker_;
  LoopbackListener listener_{[this](int fd) { serve(fd); }};  // last: stops first
};

}  // namespace perfgate::testing
