#pragma once

#include <string>

#include "perfgate/profile/profile.h"

namespace perfgate {

/// Where a run comes from. Flags win; otherwise GitHub's or GitLab's variables.
struct CiContext {
  std::string provider;         // "github", "gitlab" or "local"
  std::string commit;           // GITHUB_SHA / CI_COMMIT_SHA
  std::string branch;           // GITHUB_REF_NAME (head ref on PRs) / CI_COMMIT_REF_NAME
  std::string baseline_branch;  // PR/MR target, else default branch, else `branch`
  std::string pipeline_id;      // GITHUB_RUN_ID / CI_PIPELINE_ID
  std::string summary_path;     // GITHUB_STEP_SUMMARY when set
  /// A pull request (GITHUB_EVENT_NAME pull_request or pull_request_target), a
  /// merge queue's run (merge_group), a merge request pipeline (CI_MERGE_REQUEST_IID)
  /// or a branch pipeline with an open merge request (CI_OPEN_MERGE_REQUESTS): a run
  /// that must be judged.
  bool change_request = false;
  std::string change_kind = "";  // "pull request", "merge queue run", "merge request" or ""
};

struct CiOverrides {
  std::string commit;
  std::string branch;
  std::string baseline_branch;
};

CiContext read_ci_context(const CiOverrides& flags, const EnvLookup& env);

/// A change request's run of a profile that starts no service (a shared
/// service, a staging URL; every sharded run) measured whatever was deployed
/// there, not necessarily the change's code: a note that says so. Empty when
/// perfgate started the service, or the run judges no change request.
std::string unstarted_service_note(const Profile& profile, const CiContext& ci);

}  // namespace perfgate
