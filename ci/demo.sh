#!/usr/bin/env bash
# The README's first command: install what the perfgate binary needs to build,
# build only that binary, then show what the gate is for, on the embedded demo
# service in paired mode (ci/profiles/hello-paired.json: the candidate and the
# baseline build measured in turns, so it decides on its first run, with no
# stored history):
#   1. the unchanged demo against itself (an A/A gate): PASS, exit 0;
#   2. a planted regression, the candidate answering every request 1 ms later
#      (a slower database call): FAIL, exit 1, the metrics that caught it named.
# Both runs land in the store; `perfgate history` lists them. The demo exits 0
# when the gate did both, else with the exit that went wrong (2 when a busy
# machine kept a run from deciding: its notes say why and what to do).
# Lean on purpose: no test suite, no -Werror (ci/test.sh builds those), the
# heavy third-party headers precompiled; its own folder, build-demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh --binary
dir=build-demo
generator=()
if [ ! -f "$dir/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DBUILD_TESTING=OFF -DPERFGATE_WERROR=OFF -DPERFGATE_PCH=ON >/dev/null
# Warnings go to the log; a failed build prints it.
cmake --build "$dir" -j"$(nproc)" --target perfgate >"$dir/build.log" 2>&1 || {
  cat "$dir/build.log" >&2
  exit 3
}
out=$dir/demo
rm -rf "$out" && mkdir -p "$out"
perfgate=$dir/perfgate
profile=ci/profiles/hello-paired.json
# Relative paths, so that what it prints is the same on every machine.
echo "== 1 of 2: the demo service against itself (an A/A gate): it should pass"
same=0
"$perfgate" run "$profile" --store "$out/perfgate.db" --junit "$out/junit-same.xml" \
  --json "$out/same.json" || same=$?
echo
echo "== 2 of 2: a planted regression, the candidate 1 ms slower a request: it should fail"
slower=0
PERFGATE_DEMO_DELAY=3ms "$perfgate" run "$profile" --store "$out/perfgate.db" \
  --junit "$out/junit.xml" --json "$out/slower.json" --summary "$out/summary.md" || slower=$?
echo
echo "== the store now holds both runs, each side of each pair:"
"$perfgate" history --store "$out/perfgate.db" --limit 4
echo
echo "JUnit: $out/junit.xml; JSON: $out/slower.json; Markdown: $out/summary.md"
if [ "$same" -eq 0 ] && [ "$slower" -eq 1 ]; then
  echo "demo: the unchanged build passed (exit 0) and the planted regression failed (exit 1)"
  exit 0
fi
echo "demo: expected exit 0 then exit 1, got $same then $slower (their notes above say why)" >&2
for status in "$same" "$slower"; do [ "$status" -eq 3 ] && exit 3; done
exit 2
