#!/usr/bin/env bash
# Configures and builds perfgate into build/ (or $1), warnings as errors.
# Extra arguments go to CMake, e.g. -DPERFGATE_SANITIZE=address,undefined.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFGATE_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
