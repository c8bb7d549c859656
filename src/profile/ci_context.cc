#include "perfgate/profile/ci_context.h"

#include <string>
#include <utility>

#include "perfgate/core/error.h"
#include "perfgate/profile/text_limits.h"

namespace perfgate {
namespace {

std::string first_set(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto value = env(name);
    if (value && !value->empty()) return *value;
  }
  return "";
}

std::string provider_of(const EnvLookup& env) {
  if (first_set(env, {"GITHUB_ACTIONS"}) == "true") return "github";
  if (first_set(env, {"GITLAB_CI"}) == "true") return "gitlab";
  return "local";
}

// A merge queue's branch: gh-readonly-queue/BASE/pr-N-SHA (BASE may hold `/`).
std::string queue_base(const std::string& ref_name) {
  constexpr std::string_view kPrefix = "gh-readonly-queue/";
  auto last = ref_name.rfind("/pr-");
  if (!ref_name.starts_with(kPrefix) || last == std::string::npos || last < kPrefix.size())
    return "";
  return ref_name.substr(kPrefix.size(), last - kPrefix.size());
}

// What must be judged before it merges, in the words of its CI: a pull request, a
// merge queue's run (GitHub's merge_group), a merge request pipeline (merge
// trains and merged results too), or a branch pipeline of a branch with an open
// merge request (GitLab's branch pipelines, which then gate the merge request).
std::string change_kind_of(const EnvLookup& env) {
  auto event = first_set(env, {"GITHUB_EVENT_NAME"});
  if (event == "pull_request" || event == "pull_request_target") return "pull request";
  if (event == "merge_group") return "merge queue run";
  if (!first_set(env, {"CI_MERGE_REQUEST_IID", "CI_OPEN_MERGE_REQUESTS"}).empty())
    return "merge request";
  return "";
}

}  // namespace

// A run stored with a longer text exported, and then its import refused the
// whole file (issue 41, item 12): refused here, before anything is measured.
static void check_sizes(const CiContext& ci) {
  const std::pair<const char*, const std::string*> texts[] = {
      {"commit (--commit, GITHUB_SHA, CI_COMMIT_SHA)", &ci.commit},
      {"branch (--branch, GITHUB_HEAD_REF, GITHUB_REF_NAME, CI_COMMIT_REF_NAME)", &ci.branch},
      {"baseline branch (--baseline-branch, GITHUB_BASE_REF, ...)", &ci.baseline_branch},
      {"pipeline id (GITHUB_RUN_ID, CI_PIPELINE_ID)", &ci.pipeline_id}};
  for (const auto& [what, text] : texts)
    if (text->size() > kMaxCiTextBytes)
      throw Error(std::string(what) + ": " + std::to_string(text->size()) +
                  " bytes; a stored run holds at most 1 KiB there");
}

CiContext read_ci_context(const CiOverrides& flags, const EnvLookup& env) {
  CiContext ci;
  ci.provider = provider_of(env);
  ci.commit = flags.commit.empty() ? first_set(env, {"GITHUB_SHA", "CI_COMMIT_SHA"}) : flags.commit;
  // On a pull request GITHUB_REF_NAME is "123/merge"; the head branch is the branch.
  ci.branch = flags.branch.empty()
                  ? first_set(env, {"GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"})
                  : flags.branch;
  // The merge request's target, else the default branch, else the branch itself
  // (a run on the baseline branch compares with its own earlier runs).
  ci.baseline_branch = flags.baseline_branch;
  if (ci.baseline_branch.empty() && first_set(env, {"GITHUB_EVENT_NAME"}) == "merge_group")
    ci.baseline_branch = queue_base(first_set(env, {"GITHUB_REF_NAME"}));
  if (ci.baseline_branch.empty())
    ci.baseline_branch = first_set(
        env, {"GITHUB_BASE_REF", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "CI_DEFAULT_BRANCH"});
  if (ci.baseline_branch.empty()) ci.baseline_branch = ci.branch;
  ci.pipeline_id = first_set(env, {"GITHUB_RUN_ID", "CI_PIPELINE_ID"});
  ci.summary_path = first_set(env, {"GITHUB_STEP_SUMMARY"});
  ci.change_kind = change_kind_of(env);
  ci.change_request = !ci.change_kind.empty();
  check_sizes(ci);
  return ci;
}

std::string unstarted_service_note(const Profile& profile, const CiContext& ci) {
  if (!ci.change_request || (profile.service && !profile.service->command.empty())) return "";
  std::string change = ci.change_kind == "merge queue run" ? "merge queue" : ci.change_kind;
  return "this " + change + " run measured the service at " + shown_url(profile.target) +
         ", which perfgate did not start: it runs the " + change +
         "'s code only if this pipeline deployed it there";
}

}  // namespace perfgate
