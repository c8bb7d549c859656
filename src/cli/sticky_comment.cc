#include "sticky_comment.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "perfgate/core/bounded_read.h"
#include "perfgate/core/error.h"
#include "perfgate/core/printable.h"
#include "perfgate/profile/json_text.h"

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

// A token goes into one header line as it is: a CR or LF would end that line
// and start a header (or a request) of the token's choosing, and no real token
// holds a space or a control byte. Refused before any request; never echoed.
std::string checked_token(std::string token, const std::string& name) {
  for (unsigned char c : token)
    if (c <= 0x20 || c == 0x7f)
      throw Error("comment: " + name +
                  " holds a space, a line break or a control byte; no token does (check how "
                  "it was set)");
  return token;
}

// owner/name, as GitHub spells them: a slash, "..", '?' or '#' in either part
// would move the request (and the token) to another API path.
std::string checked_repository(const std::string& repository) {
  auto part_ok = [](std::string_view part) {
    if (part.empty() || part == "." || part == "..") return false;
    return std::all_of(part.begin(), part.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
  };
  auto slash = repository.find('/');
  bool ok = slash != std::string::npos && repository.size() <= 200 &&
            part_ok(std::string_view(repository).substr(0, slash)) &&
            part_ok(std::string_view(repository).substr(slash + 1));
  if (!ok)
    throw Error(
        "comment: GITHUB_REPOSITORY must be owner/name (letters, digits, '_', '.', '-'), "
        "got \"" +
        printable(repository.substr(0, 200)) + "\"");
  return repository;
}

// A GitLab project is its number or its URL-encoded path (group%2Fproject); an
// IID is a number. Anything else would move the request elsewhere.
std::string checked_path_part(const std::string& value, const char* name, bool digits_only) {
  bool ok = !value.empty() && value.size() <= 200 && value != "." && value != "..";
  for (char c : value)
    ok = ok && (std::isdigit(static_cast<unsigned char>(c)) ||
                (!digits_only && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                                  c == '.' || c == '-' || c == '%')));
  if (!ok)
    throw Error(std::string("comment: ") + name + " must be " +
                (digits_only ? "a number" : "a project's number or URL-encoded path") + ", got \"" +
                printable(value.substr(0, 200)) + "\"");
  return value;
}

std::optional<int64_t> event_pull_request(const std::string& event_path) {
  if (event_path.empty()) return std::nullopt;
  if (auto kind = special_file_kind(event_path); !kind.empty())
    throw Error("comment: GITHUB_EVENT_PATH " + event_path + " is " + kind +
                ", not the event file GitHub writes");
  std::ifstream in(event_path);
  if (!in) throw Error("comment: cannot read GITHUB_EVENT_PATH " + event_path);
  json event = parse_json_or_discarded(in);
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
  json j = parse_json_or_discarded(body);
  std::string text;
  if (j.is_object()) {
    for (const char* key : {"message", "error_description", "error"})
      if (auto it = j.find(key); it != j.end()) {
        text = it->is_string() ? it->get<std::string>() : json_text(*it);
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

HttpResponse sent(const HttpClient& http, const CommentThread& thread, HttpRequest request) {
  request.headers = thread.headers;
  request.headers.push_back("Content-Type: application/json");
  spdlog::debug("comment: {} {}", request.method, without_userinfo(request.url));
  return http.send(request);
}

// One line that says what failed and what to check.
[[noreturn]] void refuse(const CommentThread& thread, const HttpRequest& request,
                         const HttpResponse& response) {
  auto said = server_message(response.body, thread.token);
  throw Error("comment: " + thread.forge + " answered HTTP " + std::to_string(response.status) +
              " to " + request.method + " " + without_userinfo(request.url) +
              (said.empty() ? "" : " (" + said + ")") + ": " +
              status_hint(response.status, thread));
}

// The response, when 2xx; else refused.
HttpResponse checked(const HttpClient& http, const CommentThread& thread,
                     const HttpRequest& request) {
  auto response = sent(http, thread, request);
  if (response.status >= 200 && response.status < 300) return response;
  refuse(thread, request, response);
}

json parsed(const HttpResponse& response, const std::string& what) {
  json j = parse_json_or_discarded(response.body);
  if (j.is_discarded()) throw Error("comment: " + what + ": the answer is not JSON");
  return j;
}

/// Whose comments perfgate may edit: its own, and never a person's, whatever
/// marker their text holds (anyone may paste it).
struct OwnUser {
  std::string login;     // the token's user, when the server says who that is
  bool any_bot = false;  // unknown: any bot account's comment is perfgate's
};

// The user the token belongs to, from GET {api}/user, asked once.
OwnUser own_user(const HttpClient& http, const CommentThread& thread) {
  HttpRequest request{"GET", thread.user_url, {}, ""};
  auto response = sent(http, thread, request);
  if (response.status == 403 && thread.forge == "GitHub") {
    // An installation token answers 403 here: GitHub Actions' GITHUB_TOKEN
    // (it writes as github-actions[bot]) and a GitHub App's (as APP-SLUG[bot]).
    // Which app it is cannot be asked with that token (GET /app needs the app's
    // own key), so the marked comment of any bot account is perfgate's: a
    // person's account is of type User whatever its login, and only a GitHub
    // App installed on the repository writes as a Bot.
    return {"", true};
  }
  if (response.status < 200 || response.status >= 300) refuse(thread, request, response);
  auto what = "GET " + without_userinfo(thread.user_url);
  auto user = parsed(response, what);
  const char* key = thread.forge == "GitHub" ? "login" : "username";
  auto login = user.is_object() ? user.find(key) : user.end();
  if (!user.is_object() || login == user.end() || !login->is_string() ||
      login->get<std::string>().empty())
    throw Error("comment: " + what + ": the answer names no " + key);
  return {login->get<std::string>(), false};
}

bool written_by(const json& comment, const CommentThread& thread, const OwnUser& self) {
  auto user = comment.find(thread.forge == "GitHub" ? "user" : "author");
  if (user == comment.end() || !user->is_object()) return false;
  if (self.any_bot) {
    auto type = user->find("type");
    return type != user->end() && type->is_string() && type->get<std::string>() == "Bot";
  }
  auto login = user->find(thread.forge == "GitHub" ? "login" : "username");
  return login != user->end() && login->is_string() && login->get<std::string>() == self.login;
}

std::optional<int64_t> find_marked(const HttpClient& http, const CommentThread& thread,
                                   const std::string& marker, const OwnUser& self) {
  for (int page = 1; page <= kMaxPages; ++page) {
    std::string url = thread.list_url +
                      (thread.list_url.find('?') == std::string::npos ? "?" : "&") +
                      "per_page=" + std::to_string(kPerPage) + "&page=" + std::to_string(page);
    auto what = "GET " + without_userinfo(url);
    auto comments = parsed(checked(http, thread, {"GET", url, {}, ""}), what);
    if (!comments.is_array()) throw Error("comment: " + what + ": the answer is not a list");
    for (const auto& c : comments) {
      if (!c.is_object()) continue;
      auto body = c.find("body");
      auto id = c.find("id");
      if (body != c.end() && body->is_string() && id != c.end() && id->is_number_integer() &&
          body->get<std::string>().find(marker) != std::string::npos && written_by(c, thread, self))
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
  t.token = checked_token(required(env, "GITHUB_TOKEN",
                                   "give the step env: GITHUB_TOKEN: ${{ github.token }} (with "
                                   "permissions pull-requests: write)"),
                          "GITHUB_TOKEN");
  auto api = without_trailing_slash(variable(env, "GITHUB_API_URL"));
  if (api.empty()) api = "https://api.github.com";
  auto repository = checked_repository(
      required(env, "GITHUB_REPOSITORY", "it names the repository (owner/name)"));
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
  t.user_url = api + "/user";
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
  checked_token(t.token, t.token_variable);
  auto api = without_trailing_slash(required(env, "CI_API_V4_URL", "it is GitLab's API address"));
  auto project = checked_path_part(required(env, "CI_PROJECT_ID", "it names the project"),
                                   "CI_PROJECT_ID", false);
  std::string iid = number ? std::to_string(*number) : variable(env, "CI_MERGE_REQUEST_IID");
  if (iid.empty())
    throw Error(
        "comment: not a merge request pipeline: CI_MERGE_REQUEST_IID is not set (run the "
        "job with rules: - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"); or give "
        "--number N");
  checked_path_part(iid, "CI_MERGE_REQUEST_IID", true);
  t.request = "merge request !" + iid;
  t.list_url = api + "/projects/" + project + "/merge_requests/" + iid + "/notes?sort=asc";
  t.create_url = api + "/projects/" + project + "/merge_requests/" + iid + "/notes";
  t.item_url_prefix = t.create_url + "/";
  t.update_method = "PUT";
  t.user_url = api + "/user";
  t.headers = {"PRIVATE-TOKEN: " + t.token};
  t.not_found_hint = "check CI_PROJECT_ID (" + project + ") and merge request !" + iid +
                     ", and that the token's user can see the project";
  return t;
}

CommentOutcome post_sticky_comment(const HttpClient& http, const CommentThread& thread,
                                   const std::string& marker, const std::string& markdown) {
  std::string payload = json{{"body", comment_body(marker, markdown)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);  // a stray byte is no reason to fail
  auto self = own_user(http, thread);
  if (auto id = find_marked(http, thread, marker, self)) {
    checked(http, thread,
            {thread.update_method, thread.item_url_prefix + std::to_string(*id), {}, payload});
    return {false, *id};
  }
  auto created = parsed(checked(http, thread, {"POST", thread.create_url, {}, payload}),
                        "POST " + without_userinfo(thread.create_url));
  auto id = created.find("id");
  return {true, id != created.end() && id->is_number_integer() ? id->get<int64_t>() : 0};
}

}  // namespace perfgate
