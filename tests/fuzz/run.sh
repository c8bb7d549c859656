#!/bin/sh
# Builds the libFuzzer targets and runs each for SECONDS (default 20); fails on
# the first finding. Usage: tests/fuzz/run.sh [SECONDS]
set -eu
seconds="${1:-20}"
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
build="${PERFGATE_FUZZ_BUILD:-$src/build-fuzz}"
cmake -S "$src" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DPERFGATE_FUZZ=ON \
  -DBUILD_TESTING=OFF -DPERFGATE_SANITIZE=address,undefined >/dev/null
targets="profile units histogram json_source_map"
for t in $targets; do cmake --build "$build" -j2 --target "fuzz_$t"; done
for t in $targets; do
  # New inputs go to a scratch folder, so the checked-in seed corpus stays small.
  work="$build/fuzz-work/$t"
  mkdir -p "$work" "$build/fuzz-artifacts/$t"
  echo "== fuzz_$t for ${seconds}s"
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$build/fuzz-artifacts/$t/" "$work" "$here/corpus/$t"
done
