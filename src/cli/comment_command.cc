// `perfgate comment SUMMARY.md`: the Markdown summary a run wrote (--summary)
// as one comment on the pull or merge request, created once and updated on
// every re-run. Its own step, so that a failed comment never touches the
// gate's exit code.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>

#include "perfgate/cli/command.h"
#include "perfgate/core/bounded_read.h"
#include "perfgate/core/error.h"
#include "sticky_comment.h"

namespace perfgate {
namespace {

struct CommentOptions {
  std::filesystem::path summary_path;
  std::string key = "summary";
  std::string provider = "auto";
  std::optional<int64_t> number;
  std::string timeout = "30s";
};

// A run's summary is a few KiB, and a comment holds 65,000 characters of it;
// the bound keeps `comment /dev/zero` from reading (and holding) without end.
constexpr size_t kMaxSummaryBytes = 16 * 1024 * 1024;

std::string read_summary(const std::filesystem::path& path) {
  auto read = read_bounded(path, kMaxSummaryBytes);
  if (read.too_large)
    throw Error("comment: " + path.string() +
                " is larger than 16 MiB; give the summary a run wrote with --summary");
  if (read.interrupted) throw Error("comment: reading " + path.string() + " was interrupted");
  if (read.error)
    throw Error("comment: cannot read " + path.string() + " (write it with run --summary)");
  if (read.bytes.empty()) throw Error("comment: " + path.string() + " is empty");
  return std::move(read.bytes);
}

std::string provider_of(const CommentOptions& options, const EnvLookup& env) {
  if (options.provider != "auto") return options.provider;
  if (env("GITHUB_ACTIONS").value_or("") == "true") return "github";
  if (env("GITLAB_CI").value_or("") == "true") return "gitlab";
  throw Error("comment: neither GITHUB_ACTIONS nor GITLAB_CI is \"true\"; give --provider");
}

int post_comment(const CommentOptions& options, const CommandContext& ctx) {
  auto marker = comment_marker(options.key);
  auto markdown = read_summary(options.summary_path);
  auto thread = provider_of(options, ctx.env) == "github" ? github_thread(ctx.env, options.number)
                                                          : gitlab_thread(ctx.env, options.number);
  HttpClient http(duration_flag("--timeout", options.timeout), ctx.stop);
  auto outcome = post_sticky_comment(http, thread, marker, markdown);
  std::cout << "perfgate: " << (outcome.created ? "created" : "updated") << " comment "
            << outcome.id << " on " << thread.request << "\n";
  return 0;
}

}  // namespace

void register_comment_command(CommandSet& commands) {
  auto opt = std::make_shared<CommentOptions>();
  auto* comment = commands.app().add_subcommand(
      "comment",
      "Post a run's Markdown summary as one pull/merge request comment, updated on re-runs");
  comment->add_option("summary", opt->summary_path, "The Markdown a run wrote with --summary")
      ->required();
  comment
      ->add_option("--key", opt->key,
                   "Which sticky comment: one per key (use the profile's name in a matrix)")
      ->capture_default_str();
  comment
      ->add_option("--provider", opt->provider,
                   "github (REST API, GITHUB_TOKEN) or gitlab (notes API, PERFGATE_GITLAB_TOKEN "
                   "or GITLAB_TOKEN); auto from GITHUB_ACTIONS / GITLAB_CI")
      ->check(CLI::IsMember({"auto", "github", "gitlab"}))
      ->capture_default_str();
  comment
      ->add_option_function<int64_t>(
          "--number", [opt](int64_t n) { opt->number = n; },
          "The pull request's number or merge request's IID (default: from the CI variables)")
      ->check(whole_number_from(1));
  comment->add_option("--timeout", opt->timeout, "Longest time for each API request")
      ->capture_default_str();
  commands.add(comment, [opt](const CommandContext& ctx) { return post_comment(*opt, ctx); });
}

}  // namespace perfgate
