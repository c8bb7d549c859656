#pragma once

// Internal to the CLI stage: one comment on a pull request (GitHub) or merge
// request (GitLab) that perfgate creates once and then edits, found again by a
// hidden marker in its text. What perfgate comment does.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "http_client.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

/// A pull or merge request's comments, as its server's API reaches them.
struct CommentThread {
  std::string forge;                 // "GitHub" or "GitLab", for messages
  std::string request;               // "pull request 7" / "merge request !12"
  std::string list_url;              // the comments, without paging parameters
  std::string create_url;            // POST here
  std::string item_url_prefix;       // + id: the URL of one comment
  std::string update_method;         // PATCH (GitHub) or PUT (GitLab)
  std::string user_url;              // who the token is: only its own comments are edited
  std::vector<std::string> headers;  // authentication included: never printed
  std::string token;                 // to keep it out of every message
  std::string token_variable;        // where it came from, for the hints
  std::string not_found_hint;        // what to check on a 404
};

/// From GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_TOKEN and the pull request's
/// number: `number` when given, else GITHUB_EVENT_PATH's pull_request.number,
/// else GITHUB_REF refs/pull/N/merge. Throws Error naming what is missing.
CommentThread github_thread(const EnvLookup& env, std::optional<int64_t> number);

/// From CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID (or `number`) and
/// PERFGATE_GITLAB_TOKEN or GITLAB_TOKEN. Throws Error naming what is missing.
CommentThread gitlab_thread(const EnvLookup& env, std::optional<int64_t> number);

/// "<!-- perfgate:KEY -->". Throws Error unless KEY is letters, digits, '.', '_', '-'.
std::string comment_marker(const std::string& key);

struct CommentOutcome {
  bool created = false;  // false: an existing comment was updated
  int64_t id = 0;
};

/// Finds the first comment holding `marker` that the token's own user wrote
/// (every page of the list; GET user_url says who that is; where GitHub answers
/// 403 there, as for an installation token, any bot account's, never a
/// person's), replaces its text with the marker and `markdown`, or creates it.
/// Throws Error with one line (status, what the server said, what to check) on
/// any answer but 2xx.
CommentOutcome post_sticky_comment(const HttpClient& http, const CommentThread& thread,
                                   const std::string& marker, const std::string& markdown);

}  // namespace perfgate
