#!/usr/bin/env bash
# The composite action (ci/github/action.yml) run step by step in ROOT, ci/package-test.sh's
# minimal Debian 12 root (no python3, no compiler), as GitHub's runner runs it in
# `container: debian:12`: ci/run-action.py evaluates the expressions and runs each
# `run:` step in the root with the GITHUB_* files; actions/cache and
# actions/upload-artifact are stubbed (see there), actions/checkout is not a step of
# the action. The .deb comes from a release served as file:// (the action's real
# download), then for pass, warn, fail and error the outputs, the annotations, the
# step summary, the artifacts and the cached store are checked; a pull request
# reads the default branch's store; a paired pull request builds and runs its merge
# base's checkout beside its own.
# Usage: github-action-test.sh ROOT DEB (as root).
set -euo pipefail
root=$1
deb=$2
cd "$(dirname "$0")/.."
fail() {
  echo "github-action-test: $*" >&2
  exit 1
}
for tool in python3 cc gcc g++ c++ clang; do
  if chroot "$root" /bin/sh -c "command -v $tool" >/dev/null; then fail "the root has $tool"; fi
done

version=$(dpkg-deb --field "$deb" Version)
gh=$root/gh
results=$(mktemp -d /tmp/perfgate-action-test.XXXXXX)
trap 'rm -rf "$results"' EXIT
rm -rf "$gh"
releases=$gh/releases/owner/perfgate/releases/download/v$version
mkdir -p "$gh/action/ci" "$gh/state" "$gh/temp" "$releases"
cp -r ci/github ci/profiles "$gh/action/ci/"
cp CMakeLists.txt "$gh/action/"
cp "$deb" "$releases/perfgate_${version}_$(dpkg --print-architecture).deb"
# Free ports (the pull request's, its merge base's), so that another demo on this
# machine cannot answer.
read -r port base_port < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')

# The user's repository: short profiles in the recipes' service contract.
# 4 kept windows against 4: the fewest whose rank test can reach 95 % at all
# (2/70 < 0.05); fewer would make every comparison inconclusive.
profile() { # NAME THRESHOLDS [PAIRED [COUNT]]
  cat <<PROFILE
{
  "name": "$1",
  "target": { "url": "http://127.0.0.1:$port/" },
  "load": { "threads": 1, "connections": 4, "duration": "300ms", "warmup": "100ms" },
  "repeat": { "count": ${4:-5}, "discard": 1 },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" },
  "thresholds": { $2 },
  "service": { "command": ["sh", "-c", "\${PERFGATE_SERVICE_COMMAND}"],
               "cwd": "\${PERFGATE_CANDIDATE_DIR:-.}", "env": { "PORT": "$port" } }${3:-}
}
PROFILE
}
paired=', "paired": { "baseline": { "origin": "http://127.0.0.1:'$base_port'",
  "commit": "${PERFGATE_BASELINE_COMMIT:-}",
  "service": { "command": ["sh", "-c", "${PERFGATE_SERVICE_COMMAND}"],
               "cwd": "${PERFGATE_BASELINE_DIR}", "env": { "PORT": "'$base_port'" } } } }'
new_workspace() {
  rm -rf "$gh/workspace" && mkdir -p "$gh/workspace"
  profile harness '"throughput": { "warn": "30%" }, "error_rate": { "max": "1%" }' >"$gh/workspace/harness.json"
  profile harness-fail '"latency_p50": { "max": "1ms" }' >"$gh/workspace/harness-fail.json"
  profile harness-paired '"error_rate": { "max": "1%" }' "$paired" 7 >"$gh/workspace/paired.json"
}
demo() { echo "exec perfgate demo-server --port \"\$PORT\" --delay $1"; }

# run NAME HARNESS-ARGS...: the action's steps; the results in $results/NAME.
run() {
  local name=$1
  shift
  echo "== action: $name (at ${SECONDS}s)"
  python3 ci/run-action.py "$root" /gh/action/ci/github /gh/state "$results/$name" \
    --input version="$version" --input artifact-name="perfgate-$name" "$@"
  sed 's/^/   /' "$results/$name/log" | grep -v '^   $' | tail -n 40
}
expect() { # NAME FILE REGEX
  grep -Eq -- "$3" "$results/$1/$2" || {
    cat "$results/$1/$2" >&2
    fail "$1: $2 has no line matching $3"
  }
}
key=perfgate-store-Linux-perfgate-harness.json

new_workspace
run pass --run-id 1 --input profile=harness.json --input service-command="$(demo 2ms)"
expect pass outputs '^verdict=pass$'
expect pass outputs '^exit-code=0$'
expect pass outputs '^mode=stored$'
expect pass annotations '^::notice title=perfgate harness%3A note::no baseline yet'
expect pass summary.md '^## perfgate harness: PASS'
expect pass conclusion '^success$'
expect pass log '^perfgate [0-9]'
for file in junit.xml result.json report.html; do
  [ -f "$gh/state/artifacts/perfgate-pass/$file" ] || fail "pass: the artifact lacks $file"
done
[ -f "$gh/state/cache/$key-main-1-1/file" ] || fail "pass: the store was not saved as $key-main-1-1"

# A run again (attempt 2) of a service three times slower: throughput warns
# (its only limit is a warn limit; the stated prior judges the one baseline run,
# docs/statistics.md "The stated prior", and -66 % is surely past it: exit 2).
new_workspace
run warn --run-id 2 --run-attempt 2 --input profile=harness.json --input service-command="$(demo 6ms)"
expect warn outputs '^verdict=warn$'
expect warn outputs '^exit-code=2$'
expect warn annotations '^::warning title=perfgate harness%3A throughput_rps::(inconclusive: )?throughput_rps '
expect warn summary.md '^## perfgate harness: WARN'
expect warn conclusion '^success$' # a warn passes unless fail-on-warn
expect warn log "^cache restore: $key-main-1-1 for $key-main-2-2"
[ -f "$gh/state/cache/$key-main-2-2/file" ] || fail "warn: the store was not saved as $key-main-2-2"

new_workspace
run fail --run-id 3 --input profile=harness-fail.json --input service-command="$(demo 2ms)"
expect fail outputs '^verdict=fail$'
expect fail outputs '^exit-code=1$'
expect fail annotations '^::error title=perfgate harness-fail%3A latency_p50_ms::latency_p50_ms '
expect fail summary.md '^## perfgate harness-fail: FAIL'
expect fail conclusion '^failure$'
expect fail log '^== Verdict: failure$'
[ -f "$gh/state/artifacts/perfgate-fail/junit.xml" ] || fail "fail: the reports were not uploaded"

new_workspace
run error --run-id 4 --input profile=harness.json --input service-command="exit 7"
expect error outputs '^verdict=error$'
expect error outputs '^exit-code=3$'
expect error annotations '^::error title=perfgate error::'
expect error summary.md '^## perfgate harness: ERROR'
expect error conclusion '^failure$'
expect error log '^== Save the baseline store: skipped$'
[ -f "$gh/state/artifacts/perfgate-error/result.json" ] || fail "error: the reports were not uploaded"

# A pull request in stored mode: judged against the default branch's newest store,
# and never saves one.
new_workspace
run pr-stored --event pull_request --ref-name 5/merge --ref refs/pull/5/merge --base-ref main \
  --head-ref feature --run-id 5 --input mode=stored --input profile=harness.json \
  --input service-command="$(demo 2ms)"
expect pr-stored outputs '^exit-code=[012]$'
expect pr-stored log "^cache restore: $key-main-2-2 for $key-main-5-1"
expect pr-stored log '^== Prune the baseline store: skipped$'

# A paired pull request: git in the root (the recipe installs it before
# actions/checkout), a repository whose main is the merge base, the build command
# run in both checkouts, both services measured in turns.
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends git >/dev/null
new_workspace
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
in_root sh -c 'cd /gh/workspace && git init -q -b main && git -c user.name=t -c user.email=t@t add . &&
  git -c user.name=t -c user.email=t@t commit -qm base && git init -q --bare /gh/origin.git &&
  git remote add origin /gh/origin.git && git push -q origin main &&
  git checkout -qb feature && echo change >feature.txt && git add feature.txt &&
  git -c user.name=t -c user.email=t@t commit -qm feature'
base=$(in_root git -C /gh/workspace rev-parse main)
run pr-paired --event pull_request --ref-name 6/merge --ref refs/pull/6/merge --base-ref main \
  --head-ref feature --run-id 6 --input profile=harness.json --input paired-profile=paired.json \
  --input build-command='echo built >built.txt' --input service-command="$(demo 2ms)"
expect pr-paired outputs '^mode=paired$'
expect pr-paired outputs '^exit-code=[02]$'
expect pr-paired summary.md '^## perfgate harness-paired: (PASS|WARN)'
[ -f "$gh/workspace/built.txt" ] && [ -f "$gh/temp/perfgate-baseline/built.txt" ] ||
  fail "pr-paired: the build command did not run in both checkouts"
[ ! -e "$gh/temp/perfgate-baseline/feature.txt" ] || fail "pr-paired: the baseline is not the merge base"
grep -q "\"$base\"" "$gh/state/artifacts/perfgate-pr-paired/result.json" ||
  fail "pr-paired: result.json does not name the merge base $base"
echo "github-action-test: pass, warn, fail, error, a stored and a paired pull request as expected"
