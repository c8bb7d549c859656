#!/usr/bin/env bash
# The README's second command, and CI's: install, build with warnings as
# errors, run the whole test suite, then again under AddressSanitizer and
# UndefinedBehaviorSanitizer; the load engines' tests under ThreadSanitizer;
# and a short run of every libFuzzer target (tests/fuzz/run.sh 600 for a long one).
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

echo "== load engine tests under ThreadSanitizer"
# Only the engine stages and their tests (tests/CMakeLists.txt): a few minutes.
cmake -S . -B build-tsan -DPERFGATE_WERROR=ON -DPERFGATE_SANITIZE=thread \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" >/dev/null
cmake --build build-tsan -j"$jobs" --target perfgate_engine_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/perfgate_engine_tests \
  --gtest_filter='NativeEngine*:CurlEngine*:LoadEngine*:DemoServer*:HostSampler*'

echo "== fuzz every target briefly"
PERFGATE_FUZZ_BUILD="$PWD/build-fuzz" sh tests/fuzz/run.sh 20
