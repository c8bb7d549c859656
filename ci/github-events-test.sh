#!/usr/bin/env bash
# Every GitHub event a repository sends, through the composite action's steps
# (ci/run-action.py --host: on this machine, perfgate from BUILD_DIR, the .deb's
# install left out; ci/github-action-test.sh runs that in a fresh Debian root).
# The user's service is perfgate's demo server, 2 ms a request, or 6 ms (three
# times slower: throughput -66 %, past the profile's 40 % fail limit). Each case
# states its verdict (the action's exit-code output) and its cache effect (a
# store saved under the ref's key, or none); docs/ci.md has the same table.
# The last case runs the example workflow's own build and service commands.
# One cache carries the store from case to case, as actions/cache does.
# Usage: ci/github-events-test.sh [BUILD_DIR]   (default: build)
set -euo pipefail
# The recipe's cost phase has its own end-to-end tests (tests/cli/cost_cli_test.cc);
# here it would only add Valgrind's minutes to every paired event.
export PERFGATE_COST=off
# The recipe extends an undecided run up to its 80 s budget; these cases test
# the pipeline around the verdict, not the verdict's power.
export PERFGATE_BUDGET=40s
cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "${1:-build}" && pwd)
# Another copy of the action (e.g. an older one, to see a case fail).
action=${PERFGATE_ACTION_DIR:-$src/ci/github}
[ -x "$build/perfgate" ] || { echo "no perfgate in $build: build first" >&2; exit 1; }
work=$(mktemp -d /tmp/perfgate-events.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "github-events-test: $*" >&2
  exit 1
}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# 4 kept windows against 4: the fewest whose rank test can reach 95 % at all.
profile() {
  cat <<PROFILE
{
  "name": "events",
  "target": { "url": "http://127.0.0.1:$port/" },
  "load": { "threads": 1, "connections": 4, "duration": "300ms", "warmup": "100ms" },
  "repeat": { "count": 5, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { "throughput": { "warn": "30%", "fail": "40%" }, "error_rate": { "max": "1%" } },
  "service": { "command": ["sh", "-c", "\${PERFGATE_SERVICE_COMMAND}"],
               "cwd": "\${PERFGATE_CANDIDATE_DIR:-.}", "env": { "PORT": "$port" } }
}
PROFILE
}
# Paired mode's: the same service in the run's checkout and in the baseline's,
# on the ports the action picks.
paired_profile() {
  cat <<'PROFILE'
{
  "name": "events-paired",
  "target": { "url": "http://127.0.0.1:${PERFGATE_CANDIDATE_PORT}/" },
  "load": { "threads": 1, "connections": 4, "duration": "300ms", "warmup": "100ms" },
  "repeat": { "count": 7, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { "throughput": { "warn": "30%", "fail": "40%" }, "error_rate": { "max": "1%" } },
  "service": { "command": ["sh", "-c", "${PERFGATE_SERVICE_COMMAND}"],
               "cwd": "${PERFGATE_CANDIDATE_DIR:-.}", "env": { "PORT": "${PERFGATE_CANDIDATE_PORT}" } },
  "paired": { "baseline": { "origin": "http://127.0.0.1:${PERFGATE_BASELINE_PORT}",
    "commit": "${PERFGATE_BASELINE_COMMIT:-}",
    "service": { "command": ["sh", "-c", "${PERFGATE_SERVICE_COMMAND}"],
                 "cwd": "${PERFGATE_BASELINE_DIR}", "env": { "PORT": "${PERFGATE_BASELINE_PORT}" } } } }
}
PROFILE
}
demo() { echo "exec perfgate demo-server --port \"\$PORT\" --delay $1"; }
key=perfgate-store-Linux-perfgate-events.json
cache=$work/state/cache
mkdir -p "$cache"
run_id=0

# event NAME DELAY HARNESS-ARGS...: one run of the action, its results in $work/out/NAME.
event() {
  local name=$1 delay=$2
  shift 2
  run_id=$((run_id + 1))
  rm -rf "$work/workspace" "$work/temp" && mkdir -p "$work/workspace" "$work/temp"
  profile >"$work/workspace/events.json"
  paired_profile >"$work/workspace/events-paired.json"
  [ -z "${PREPARE:-}" ] || (cd "$work/workspace" && $PREPARE)
  # @RELEASE_HEAD@: release-1's commit in the workspace PREPARE made.
  local args=() a
  for a in "$@"; do
    [ "$a" != @RELEASE_HEAD@ ] || a=$(git -C "$work/workspace" rev-parse release-1)
    args+=("$a")
  done
  echo "== $name (run $run_id, at ${SECONDS}s)"
  python3 ci/run-action.py / "$action" "$work/state" "$work/out/$name" --host \
    --workspace "$work/workspace" --temp "$work/temp" --path "$build" \
    --skip-step "Install perfgate" --run-id "$run_id" --sha "$(printf %040d "$run_id")" \
    --input profile=events.json \
    --input artifact-name="perfgate-$name" --input service-command="$(demo "$delay")" "${args[@]}"
  grep -E '^(::|== |cache )' "$work/out/$name/log" | sed 's/^/   /' | tail -n 30
}
expect() { # NAME FILE REGEX
  grep -Eq -- "$3" "$work/out/$1/$2" || {
    cat "$work/out/$1/$2" >&2
    fail "$1: $2 has no line matching $3"
  }
}
# saved NAME REF / unsaved NAME: the case's cache effect.
saved() { [ -f "$cache/$key-$2-$run_id-1/file" ] || fail "$1: no store saved as $key-$2-$run_id-1"; }
unsaved() {
  if ls "$cache" | grep -q -- "-$run_id-1\$"; then fail "$1: saved a store: $(ls "$cache" | grep -- "-$run_id-1\$")"; fi
}

# aged: the calibrations in the store the last event saved under main move a
# day back, as if the pipelines so far had run on the days before (the noise
# pool counts days: docs/statistics.md, "A young store").
aged() {
  sqlite3 "$cache/$key-main-$run_id-1/file" "UPDATE runs SET created_at = \
    strftime('%Y-%m-%dT%H:%M:%SZ', created_at, '-1 day') WHERE kind = 'calibration'"
}

# The first run on main calibrates the empty store (A/A runs of its commit: the
# noise pool, never a baseline), once a day until the pool holds three days; a
# second pipeline on the same day skips it. Until then the stated prior of
# run-to-run noise judges main's later runs (issue 46): an unchanged service
# passes the profile's 30 % / 40 % limits from the second run, and joins the baseline.
event push-default 2ms
expect push-default outputs '^exit-code=0$'
expect push-default annotations 'no baseline yet'
expect push-default log '^calibration: 5 A/A runs'
saved push-default main

event push-default-again 2ms
expect push-default-again outputs '^exit-code=0$'
expect push-default-again log 'the stated prior of run-to-run noise judged throughput_rps'
expect push-default-again log "^cache restore: $key-main-1-1 "
expect push-default-again log '^calibrate: nothing to do today'
if grep -q '^calibration: ' "$work/out/push-default-again/log"; then
  fail "push-default-again: calibrated twice in one day"
fi
saved push-default-again main
for day in 2 3; do
  aged
  event push-default-day$day 2ms
  expect push-default-day$day outputs '^exit-code=[02]$'
  expect push-default-day$day log '^calibration: 5 A/A runs'
  saved push-default-day$day main
done

# Another branch, then a merge queue: judged against the default branch's store,
# never saved (they would otherwise start stores of their own, or main's).
event push-release 6ms --ref-name release-1 --ref refs/heads/release-1
expect push-release outputs '^exit-code=1$'
expect push-release conclusion '^failure$'
unsaved push-release

queue=gh-readonly-queue/main/pr-5-0123456789abcdef0123456789abcdef01234567
event merge-group 6ms --event merge_group --ref-name "$queue" --ref "refs/heads/$queue" \
  --input mode=stored
expect merge-group outputs '^exit-code=1$'
expect merge-group outputs '^mode=stored$'
unsaved merge-group

event pull-request 2ms --event pull_request --ref-name 5/merge --ref refs/pull/5/merge \
  --base-ref main --head-ref feature --input mode=stored
expect pull-request outputs '^exit-code=[02]$'
if grep -Eq '^calibrat(e|ion): ' "$work/out/pull-request/log"; then
  fail "pull-request: calibrated a store it does not save"
fi
unsaved pull-request

# A fork's pull request: its token is read-only, so no comment (one notice, no
# error), but the gate runs and its fail stands; nothing is saved.
event pull-request-fork 6ms --event pull_request --ref-name 7/merge --ref refs/pull/7/merge \
  --base-ref main --head-ref main --head-repository someone/perfgate \
  --input mode=stored --input comment=true
expect pull-request-fork outputs '^exit-code=1$'
expect pull-request-fork conclusion '^failure$'
expect pull-request-fork annotations '^::notice title=perfgate::no pull request comment: .*fork someone/perfgate'
expect pull-request-fork log '^== Comment on the pull request: success$'
if grep -E '^::(error|warning)' "$work/out/pull-request-fork/annotations" | grep -qi comment; then
  fail "pull-request-fork: the comment became a warning or an error"
fi
unsaved pull-request-fork

event pull-request-target 2ms --event pull_request_target --ref-name main --base-ref main \
  --head-ref feature
expect pull-request-target annotations '^::error title=perfgate::pull_request_target .*pull_request'
expect pull-request-target log '^== Plan: failure$'
expect pull-request-target log '^== Run perfgate: skipped$'
expect pull-request-target conclusion '^failure$'
unsaved pull-request-target

# A nightly run: its event has no repository, and it still records on main.
event schedule 2ms --event schedule
expect schedule outputs '^exit-code=[02]$'
saved schedule main

# An intended regression lands on main: it fails, is recorded (never a baseline),
# and the next run fails again, until a dispatch accepts it.
event push-regression 6ms
expect push-regression outputs '^exit-code=1$'
saved push-regression main
event dispatch-elsewhere 6ms --event workflow_dispatch --ref-name release-1 --input accept=latest
expect dispatch-elsewhere annotations '^::error title=perfgate::accept changes the default branch'
unsaved dispatch-elsewhere
event dispatch-accept 6ms --event workflow_dispatch --input accept=latest --input accept-reason="the new cache"
expect dispatch-accept outputs '^verdict=accepted$'
expect dispatch-accept outputs '^exit-code=0$'
expect dispatch-accept log '^perfgate: run [0-9]+ accepted as the baseline of main$'
expect dispatch-accept conclusion '^success$'
saved dispatch-accept main
accepted=$(sed -n 's/^perfgate: run \([0-9]*\) accepted as the baseline of main$/\1/p' "$work/out/dispatch-accept/log")
[ -n "$accepted" ] || fail "dispatch-accept: no run accepted"
# The accepted run is the baseline now: the regressed code passes against it.
event push-after-accept 6ms
expect push-after-accept outputs '^exit-code=[02]$'
expect push-after-accept log "compared with run $accepted( |\$)"
saved push-after-accept main
event push-release-after-accept 6ms --ref-name release-1 --ref refs/heads/release-1
expect push-release-after-accept outputs '^exit-code=[02]$'
expect push-release-after-accept log "compared with run [0-9]+"
unsaved push-release-after-accept
# A maintenance branch whose workflow names itself the default branch
# (default-branch: release-1) keeps a store of its own, here at 2 ms, saved
# under release-1's ref.
event push-release-own 2ms --ref-name release-1 --ref refs/heads/release-1 \
  --input default-branch=release-1
expect push-release-own outputs '^exit-code=0$'
saved push-release-own release-1
# GitHub lets a merge queue's run read the caches of its own ref and of the
# default branch only: release-1's store is out of its reach. In stored mode
# (asked for) it finds no release-1 run and warns that it was not judged,
# never a pass; nothing is saved.
queue=gh-readonly-queue/release-1/pr-6-0123456789abcdef0123456789abcdef01234567
event merge-group-release-stored 6ms --event merge_group --ref-name "$queue" --ref "refs/heads/$queue" \
  --queue-base release-1 --input default-branch=release-1 --input mode=stored
expect merge-group-release-stored outputs '^exit-code=2$'
expect merge-group-release-stored log "^cache restore: no entry for "
expect merge-group-release-stored log "this merge queue run was not judged"
unsaved merge-group-release-stored
# By default a merge queue is paired, like a pull request: the queue's commit
# against its merge_group.base_sha (release-1's head), both built and run here,
# no store needed. The pull request makes the service 3x slower: it fails.
queue_repo() {
  git init -q -b release-1 && echo 2ms >delay && git add -A
  git -c user.name=t -c user.email=t@t commit -qm "release-1's head"
  git init -q --bare ../origin.git && git remote add origin ../origin.git && git push -q origin release-1
  git checkout -qb queue && echo 6ms >delay
  git -c user.name=t -c user.email=t@t commit -qam "the pull request: 3x slower"
}
rm -rf "$work/origin.git"
# shellcheck disable=SC2016  # the service reads its checkout's delay file itself
PREPARE=queue_repo event merge-group-release-paired '$(cat delay)' --event merge_group \
  --ref-name "$queue" --ref "refs/heads/$queue" --queue-base release-1 \
  --queue-base-sha @RELEASE_HEAD@ --input default-branch=release-1 --input paired-profile=events-paired.json
expect merge-group-release-paired outputs '^mode=paired$'
expect merge-group-release-paired outputs '^exit-code=1$'
expect merge-group-release-paired conclusion '^failure$'
[ "$(cat "$work/temp/perfgate-baseline/delay")" = 2ms ] ||
  fail "merge-group-release-paired: the baseline is not release-1's head"
grep -q "\"$(git -C "$work/workspace" rev-parse release-1)\"" "$work/state/artifacts/perfgate-merge-group-release-paired/result.json" ||
  fail "merge-group-release-paired: result.json does not name release-1's head"
unsaved merge-group-release-paired

# The example workflow's own build and service commands, as a user copies them:
# its pull request is paired (the demo server against itself, each side its own
# checkout's copy: an A/A run), passes, and never warns that both sides run one
# installed program.
example_input() {
  python3 -c 'import sys, yaml
steps = yaml.safe_load(open(sys.argv[1]))["jobs"]["perfgate"]["steps"]
print(next(s["with"][sys.argv[2]] for s in steps if sys.argv[2] in s.get("with", {})))' \
    ci/github/perfgate-example.yml "$1"
}
example_repo() {
  git init -q -b main && git add -A
  git -c user.name=t -c user.email=t@t commit -qm "main's head"
  git init -q --bare ../origin.git && git remote add origin ../origin.git && git push -q origin main
  git checkout -qb feature && echo "a change" >README
  git add README && git -c user.name=t -c user.email=t@t commit -qm "the pull request"
}
rm -rf "$work/origin.git"
PREPARE=example_repo event pull-request-example 2ms --event pull_request --ref-name 8/merge \
  --ref refs/pull/8/merge --base-ref main --head-ref feature --input paired-profile=events-paired.json \
  --input build-command="$(example_input build-command)" \
  --input service-command="$(example_input service-command)"
expect pull-request-example outputs '^mode=paired$'
expect pull-request-example outputs '^exit-code=[02]$'
for dir in "$work/workspace" "$work/temp/perfgate-baseline"; do
  [ -x "$dir/.perfgate-demo/perfgate" ] || fail "pull-request-example: no demo server copied into $dir"
done
if grep -q 'both paired sides run' "$work/out/pull-request-example/log" "$work/out/pull-request-example/annotations"; then
  fail "pull-request-example: the example's demo warns that both sides run one program"
fi
unsaved pull-request-example
echo "github-events-test: every event's verdict and cache effect as expected (${SECONDS}s)"
