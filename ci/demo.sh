#!/usr/bin/env bash
# The README's first command: install, build, then gate the embedded demo
# service with the example profile twice. The first run records the baseline,
# the second is judged against it and ends in a verdict table and a JUnit file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
bash ci/build.sh build >/dev/null
out=build/demo
rm -rf "$out" && mkdir -p "$out"
profile=ci/profiles/hello.json
echo "== run 1 of 2: no baseline yet, this run records it"
./build/perfgate run "$profile" --store "$out/perfgate.db" --json "$out/run1.json"
echo
echo "== run 2 of 2: judged against run 1"
status=0
./build/perfgate run "$profile" --store "$out/perfgate.db" --junit "$out/junit.xml" \
  --json "$out/run2.json" --summary "$out/summary.md" || status=$?
echo
echo "JUnit report: $out/junit.xml; JSON: $out/run2.json; Markdown: $out/summary.md (exit $status)"
exit $status
