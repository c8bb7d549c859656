#!/usr/bin/env bash
# Configures and builds perfgate into build/ (or $1), warnings as errors.
# Extra arguments go to CMake, e.g. -DPERFGATE_SANITIZE=address,undefined.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
# Ninja where it is installed: unlike make it compiles a stage's units while the
# stages before it are still being archived, so both cores stay busy. A build
# folder made before keeps its generator (CMake refuses to switch).
generator=()
if [ ! -f "$dir/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFGATE_WERROR=ON "$@" >/dev/null
# PERFGATE_BUILD_TARGET=T builds only T (and what it needs).
cmake --build "$dir" -j"$(nproc)" ${PERFGATE_BUILD_TARGET:+--target "$PERFGATE_BUILD_TARGET"}
