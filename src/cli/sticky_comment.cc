#include "sticky_comment.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

using nlohmann::json;

constexpr int kPerPage = 100;
constexpr int kMaxPages = 100;  // 10,000 comments: past that, something is wrong
// GitHub takes at most 65,536 characters in a comment; GitLab 1,000,000.
constexpr size_t kMaxBody = 65'000;

std::string variable(const EnvLookup& env, const char* name) {
  auto value = env(name);
  return value ? *value : "";
}

std::string required(const EnvLookup& env, const char* name, const std::string& why) {
  auto value = variable(env, name);
  if (value.empty()) throw Error(std::string("comment: ") + name + " is not set; " + why);
  return value;
}

std::string without_trailing_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::optional<int64_t> event_pull_request(const std::string& event_path) {
  if (event_path.empty()) return std::nullopt;
  std::ifstream in(event_path);
  if (!in) throw Error("comment: cannot read GITHUB_EVENT_PATH " + event_path);
  json event = json::parse(in, nullptr, false);
  if (event.is_discarded())
    throw Error("comment: GITHUB_EVENT_PATH " + event_path + " is not JSON");
  auto pr = event.find("pull_request");
  if (pr == event.end() || !pr->is_object()) return std::nullopt;
  auto number = pr->find("number");
  if (number == pr->end() || !number->is_number_integer()) return std::nullopt;
  return number->get<int64_t>();
}

// "refs/pull/N/merge" (or ".../head"), as GitHub sets GITHUB_REF on pull requests.
std::optional<int64_t> ref_pull_request(const std::string& ref) {
  const std::string prefix = "refs/pull/";
  if (ref.rfind(prefix, 0) != 0) return std::nullopt;
  auto slash = ref.find('/', prefix.size());
  if (slash == std::string::npos) return std::nullopt;
  auto digits = ref.substr(prefix.size(), slash - prefix.size());
  auto rest = ref.substr(slash);
  bool number =
      !digits.empty() && digits.size() <= 18 &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!number || (rest != "/merge" && rest != "/head")) return std::nullopt;
  return std::stoll(digits);
}

// The server's own words, one line, short, and never the token.
std::string server_message(const std::string& body, const std::string& token) {
  json j = json::parse(body, nullptr, false);
  std::string text;
  if (j.is_object()) {
    for (const char* key : {"message", "error_description", "error"})
      if (auto it = j.find(key); it != j.end()) {
        text = it->is_string() ? it->get<std::string>() : it->dump();
        break;
      }
  }
  if (!token.empty())
    for (size_t at; (at = text.find(token)) != std::string::npos;)
      text.replace(at, token.size(), "***");
  for (char& c : text)
    if (std::iscntrl(static_cast<unsigned char>(c))) c = ' ';
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text;
}

std::string status_hint(long status, const CommentThread& thread) {
  if (status == 401) return "the token was refused: check " + thread.token_variable;
  if (status == 403)
    return thread.forge == "GitHub"
               ? "the token may not comment: give the job permissions pull-requests: write"
               : "the token may not write notes: use a token with the api scope "
                 "(CI_JOB_TOKEN cannot post notes)";
  if (status == 404) return thread.not_found_hint;
  if (status >= 500) return "the server failed; the comment can be posted again on a re-run";
  return "unexpected answer";
}

// The response, when 2xx; else one line that says what failed and what to check.
HttpResponse checked(const HttpClient& http, const CommentThread& thread, HttpRequest request) {
  request.headers = thread.headers;
  request.headers.push_back("Content-Type: application/json");
  spdlog::debug("comment: {} {}", request.method, request.url);
  auto response = http.send(request);
  if (response.status >= 200 && response.status < 300) return response;
  auto said = server_message(response.body, thread.token);
  throw Error("comment: " + thread.forge + " answered HTTP " + std::to_string(response.status) +
              " to " + request.method + " " + request.url +
              (said.empty() ? "" : " (" + said + ")") + ": " +
              status_hint(response.status, thread));
}

json parsed(const HttpResponse& response, const std::string& what) {
  json j = json::parse(response.body, nullptr, false);
  if (j.is_discarded()) throw Error("comment: " + what + ": the answer is not JSON");
  return j;
}

std::optional<int64_t> find_marked(const HttpClient& http, const CommentThread& thread,
                                   const std::string& marker) {
  for (int page = 1; page <= kMaxPages; ++page) {
    std::string url = thread.list_url +
                      (thread.list_url.find('?') == std::string::npos ? "?" : "&") +
                      "per_page=" + std::to_string(kPerPage) + "&page=" + std::to_string(page);
    auto comments = parsed(checked(http, thread, {"GET", url, {}, ""}), "GET " + url);
    if (!comments.is_array()) throw Error("comment: GET " + url + ": the answer is not a list");
    for (const auto& c : comments) {
      auto body = c.find("body");
      auto id = c.find("id");
      if (body != c.end() && body->is_string() && id != c.end() && id->is_number_integer() &&
          body->get<std::string>().find(marker) != std::string::npos)
        return id->get<int64_t>();
    }
    if (comments.size() < static_cast<size_t>(kPerPage)) return std::nullopt;
  }
  return std::nullopt;
}

std::string comment_body(const std::string& marker, const std::string& markdown) {
  std::string text = markdown;
  if (text.size() > kMaxBody)
    text = text.substr(0, kMaxBody) +
           "\n\n(cut here: the summary is longer than a comment may be; the job's report has "
           "it all)\n";
  return marker + "\n" + text;
}

}  // namespace

std::string comment_marker(const std::string& key) {
  bool ok = !key.empty() && key.size() <= 100;
  for (char c : key)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
  if (!ok)
    throw Error("comment: --key must be 1 to 100 letters, digits, '.', '_' or '-', got \"" + key +
                "\"");
  return "<!-- perfgate:" + key + " -->";
}

CommentThread github_thread(const EnvLookup& env, std::optional<int64_t> number) {
  CommentThread t;
  t.forge = "GitHub";
  t.token_variable = "GITHUB_TOKEN";
  t.token = required(env, "GITHUB_TOKEN",
                     "give the step env: GITHUB_TOKEN: ${{ github.token }} (with permissions "
                     "pull-requests: write)");
  auto api = without_trailing_slash(variable(env, "GITHUB_API_URL"));
  if (api.empty()) api = "https://api.github.com";
  auto repository = required(env, "GITHUB_REPOSITORY", "it names the repository (owner/name)");
  if (!number) number = event_pull_request(variable(env, "GITHUB_EVENT_PATH"));
  if (!number) number = ref_pull_request(variable(env, "GITHUB_REF"));
  if (!number)
    throw Error(
        "comment: not a pull request: GITHUB_EVENT_PATH has no pull_request.number and "
        "GITHUB_REF is \"" +
        variable(env, "GITHUB_REF") + "\", not refs/pull/N/merge; give --number N");
  auto n = std::to_string(*number);
  t.request = "pull request " + n;
  t.list_url = api + "/repos/" + repository + "/issues/" + n + "/comments";
  t.create_url = t.list_url;
  t.item_url_prefix = api + "/repos/" + repository + "/issues/comments/";
  t.update_method = "PATCH";
  t.headers = {"Authorization: Bearer " + t.token, "Accept: application/vnd.github+json",
               "X-GitHub-Api-Version: 2022-11-28"};
  t.not_found_hint = "check GITHUB_REPOSITORY (" + repository + ") and pull request " + n +
                     ", and that the token can see the repository";
  return t;
}

CommentThread gitlab_thread(const EnvLookup& env, std::optional<int64_t> number) {
  CommentThread t;
  t.forge = "GitLab";
  t.token_variable =
      variable(env, "PERFGATE_GITLAB_TOKEN").empty() ? "GITLAB_TOKEN" : "PERFGATE_GITLAB_TOKEN";
  t.token = variable(env, t.token_variable.c_str());
  if (t.token.empty())
    throw Error(
        "comment: neither PERFGATE_GITLAB_TOKEN nor GITLAB_TOKEN is set; give a project "
        "access token with the api scope (CI_JOB_TOKEN cannot post notes)");
  auto api = without_trailing_slash(required(env, "CI_API_V4_URL", "it is GitLab's API address"));
  auto project = required(env, "CI_PROJECT_ID", "it names the project");
  std::string iid = number ? std::to_string(*number) : variable(env, "CI_MERGE_REQUEST_IID");
  if (iid.empty())
    throw Error(
        "comment: not a merge request pipeline: CI_MERGE_REQUEST_IID is not set (run the "
        "job with rules: - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"); or give "
        "--number N");
  t.request = "merge request !" + iid;
  t.list_url = api + "/projects/" + project + "/merge_requests/" + iid + "/notes?sort=asc";
  t.create_url = api + "/projects/" + project + "/merge_requests/" + iid + "/notes";
  t.item_url_prefix = t.create_url + "/";
  t.update_method = "PUT";
  t.headers = {"PRIVATE-TOKEN: " + t.token};
  t.not_found_hint = "check CI_PROJECT_ID (" + project + ") and merge request !" + iid +
                     ", and that the token's user can see the project";
  return t;
}

CommentOutcome post_sticky_comment(const HttpClient& http, const CommentThread& thread,
                                   const std::string& marker, const std::string& markdown) {
  std::string payload = json{{"body", comment_body(marker, markdown)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);  // a stray byte is no reason to fail
  if (auto id = find_marked(http, thread, marker)) {
    checked(http, thread,
            {thread.update_method, thread.item_url_prefix + std::to_string(*id), {}, payload});
    return {false, *id};
  }
  auto created = parsed(checked(http, thread, {"POST", thread.create_url, {}, payload}),
                        "POST " + thread.create_url);
  auto id = created.find("id");
  return {true, id != created.end() && id->is_number_integer() ? id->get<int64_t>() : 0};
}

}  // namespace perfgate
