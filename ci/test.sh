#!/usr/bin/env bash
# The README's second command, and CI's: install, build the product with
# warnings as errors, build and run the whole test suite: the unit tests and
# the CLI tests of bad and hostile input under AddressSanitizer and
# UndefinedBehaviorSanitizer (warnings as errors too), the CLI tests that run
# loads on the product's own -O2 binary; the fuzz targets'
# corpora and seeded mutations of them among its tests (tests/fuzz/run.sh 600
# runs libFuzzer itself, on demand: its clang build cost CI about 5 minutes); the
# load engines' tests under ThreadSanitizer; and the Debian package installed into
# a fresh Debian 12 root. Each stage is a `stage` line and its commands: a new
# one goes before "all passed".
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh --test
jobs=$(nproc)
# Each stage's start, in seconds since this script began: CI's limit is the
# whole run's time, and this shows where it goes. The table of every stage's
# minutes is printed again at the end, pass or fail, where a log's tail shows it.
stages=()
stage() {
  stages+=("$SECONDS $*")
  echo "== $* (at ${SECONDS}s)"
}
minutes() {
  local i start next name
  echo "== stages (minutes), $([ "${1:-1}" = 0 ] && echo passed || echo "failed, exit $1"):"
  for i in "${!stages[@]}"; do
    start=${stages[$i]%% *} name=${stages[$i]#* }
    next=${stages[$((i + 1))]:-$SECONDS}
    next=${next%% *}
    awk -v s="$start" -v e="$next" -v n="$name" 'BEGIN { printf "%6.1f  %s\n", (e - s) / 60, n }'
  done
  echo "total $((SECONDS / 60)) min $((SECONDS % 60)) s"
}
trap 'minutes $?' EXIT

# The package stage's Debian root, made meanwhile: network and disk, not CPU.
mkdir -p build-package
bash ci/debootstrap-root.sh build-package/debootstrap-cache >build-package/debootstrap-root.log 2>&1 &
root_pid=$!

stage "build the product (-Werror, -O2)"
# What the .deb ships (the last stage packages these objects): -O2 and its
# flow warnings as errors. Line tables only (-g1): a third less compile time
# than full debug info, and backtraces still name files and lines. No tests
# here: the suite runs once, below, under ASan + UBSan (-Werror too), which run
# every test this build would and catch what it cannot. Compiling the tests
# here and running them a second time cost about 7 of CI's 50 minutes, for the
# same assertions; the .deb's stage still runs this build's binary end to end.
bash ci/build.sh build -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DBUILD_TESTING=OFF

stage "build and test under ASan + UBSan"
# -O1 with light debug info: sanitizer builds compile in half the time of -O2 -g.
# At -O1 precompiled headers are safe with GCC 12 (cmake/precompiled_headers.cmake).
# The test files at -O0: instrumented -O1 made them half of this build's time.
# The load-running CLI tests run the first build's binary, the one the .deb
# ships (PERFGATE_CLI_BINARY, tests/CMakeLists.txt): under ASan their timed
# loads took 41 of CI's minutes and measured the sanitizer's slowdown. Every
# unit test and the CLI tests of bad and hostile input run this build's
# binaries, under ASan + UBSan. The unit tests and the input-only CLI tests run
# as 4 GoogleTest shards each (PERFGATE_TEST_SHARDS), not a process per test: an
# ASan test binary's start, a thousand times, was minutes of nothing tested.
bash ci/build.sh build-asan -DPERFGATE_SANITIZE=address,undefined -DPERFGATE_PCH=ON \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DPERFGATE_TEST_OPT=-O0 \
  -DPERFGATE_CLI_BINARY="$PWD/build/perfgate" -DPERFGATE_TEST_SHARDS=4
stage "ctest: under ASan + UBSan, the load-running CLI tests on the -O2 build"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs")

stage "load engine tests under ThreadSanitizer"
# Only the engine stages and their tests (tests/CMakeLists.txt): a few minutes.
PERFGATE_BUILD_TARGET=perfgate_engine_tests bash ci/build.sh build-tsan \
  -DPERFGATE_SANITIZE=thread -DPERFGATE_PCH=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
stage "engine tests under TSan"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/perfgate_engine_tests \
  --gtest_filter='NativeEngine*:CurlEngine*:LoadEngine*:DemoServer*:HostSampler*'

stage "the .deb: lintian, then installed and run in a fresh Debian 12 root"
# ci/package-test.sh: the package built, checked, installed with apt-get into a
# debootstrap --variant=minbase root and gating the demo server there. It packages
# the first build's objects (same flags), so the product is not compiled again.
wait "$root_pid" || { cat build-package/debootstrap-root.log >&2; exit 1; }
PERFGATE_PACKAGE_BUILD=build bash ci/package-test.sh
stage "every GitHub event through the action's steps" && bash ci/github-events-test.sh build
stage "GitLab templates run by gitlab-ci-local" && bash ci/gitlab-pipeline-test.sh build
stage "all passed"
