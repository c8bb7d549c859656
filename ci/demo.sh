#!/usr/bin/env bash
# The README's first command: install what the perfgate binary needs to build,
# build only that binary, then gate the embedded demo service with the example
# profile twice. The first run records the baseline, the second is judged
# against it and ends in a verdict table and a JUnit file. With valgrind (which
# install-deps.sh brings) each run also counts the demo's instructions per request.
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
profile=ci/profiles/hello.json
echo "== run 1 of 2: no baseline yet, this run records it"
# A warn (say, a runner busy enough to saturate the run) must not end the demo
# before its verdict: run 2 then says what baseline it had. An error does.
first=0
"./$dir/perfgate" run "$profile" --store "$out/perfgate.db" --json "$out/run1.json" || first=$?
[ "$first" -eq 3 ] && exit 3
[ "$first" -eq 0 ] || echo "(run 1 ended with exit $first; its notes say why)"
echo
echo "== run 2 of 2: judged against run 1"
status=0
"./$dir/perfgate" run "$profile" --store "$out/perfgate.db" --junit "$out/junit.xml" \
  --json "$out/run2.json" --summary "$out/summary.md" || status=$?
echo
echo "JUnit report: $out/junit.xml; JSON: $out/run2.json; Markdown: $out/summary.md (exit $status)"
exit $status
