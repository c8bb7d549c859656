#!/bin/sh
# Builds the libFuzzer targets and runs each for SECONDS (default 20), as many
# at a time as there are cores; fails when any target finds something (its
# input is then in the build folder's fuzz-artifacts/TARGET/, its report in
# fuzz-artifacts/TARGET.log). Usage: tests/fuzz/run.sh [SECONDS]
set -eu
seconds="${1:-20}"
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
build="${PERFGATE_FUZZ_BUILD:-$src/build-fuzz}"
# Ninja where installed (a build folder made before keeps its generator).
generator=""
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator="-G Ninja"; fi
# -O1 without debug info, and the heavy headers precompiled: the sanitizers'
# reports still name the functions, and a crash's saved input replays in any
# build (a -g one for lines).
cmake -S "$src" -B "$build" $generator -DCMAKE_CXX_COMPILER=clang++ -DPERFGATE_FUZZ=ON \
  -DBUILD_TESTING=OFF -DPERFGATE_SANITIZE=address,undefined -DPERFGATE_PCH=ON \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g0" >/dev/null
targets="profile units histogram json_source_map http_response env_substitution cli_arguments"
# One build of all the targets, so their units compile side by side.
fuzz_targets=""
for t in $targets; do fuzz_targets="$fuzz_targets fuzz_$t"; done
cmake --build "$build" -j"$(nproc)" --target $fuzz_targets

fuzz() {
  # New inputs go to a scratch folder, so the checked-in seed corpus stays small.
  work="$build/fuzz-work/$1"
  mkdir -p "$work" "$build/fuzz-artifacts/$1"
  "$build/tests/fuzz/fuzz_$1" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$build/fuzz-artifacts/$1/" "$work" "$here/corpus/$1" \
    >"$build/fuzz-artifacts/$1.log" 2>&1
}

cores="$(nproc)"
failed=""
running=""
for t in $targets; do
  echo "== fuzz_$t for ${seconds}s"
  fuzz "$t" &
  running="$running $!:$t"
  if [ "$(echo "$running" | wc -w)" -ge "$cores" ]; then
    for job in $running; do wait "${job%%:*}" || failed="$failed ${job#*:}"; done
    running=""
  fi
done
for job in $running; do wait "${job%%:*}" || failed="$failed ${job#*:}"; done
for t in $targets; do grep -h "^Done" "$build/fuzz-artifacts/$t.log" | sed "s/^/fuzz_$t: /"; done
for t in $failed; do
  echo "fuzz_$t found a problem:" >&2
  tail -n 40 "$build/fuzz-artifacts/$t.log" >&2
done
[ -z "$failed" ]
