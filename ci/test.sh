#!/usr/bin/env bash
# The README's second command, and CI's: install, build with warnings as
# errors, run the whole test suite, then again under AddressSanitizer and
# UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh --test
jobs=$(nproc)

echo "== build (-Werror) and test"
bash ci/build.sh build
(cd build && ctest --output-on-failure -j"$jobs")

echo "== build and test under ASan + UBSan"
# -O1 with light debug info: sanitizer builds compile in half the time of -O2 -g.
bash ci/build.sh build-asan -DPERFGATE_SANITIZE=address,undefined \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs")
