#!/usr/bin/env bash
# The verdict's power and false-fail rates, simulated through the real decision
# code (tests/gate_simulation_test.cc, DISABLED_PowerTable): fail rates of A/A
# runs and of 5 % and 10 % losses for 8 to 48 pairs, quiet launches (1 %) and
# launches that differ by ±7 % (sd 4 %), with the pull-request recipe's limits.
# Pure computation: no load, no service, any machine; about half a minute.
# Usage: bench/power_table.sh [BUILD_DIR]   (default build/, with BUILD_TESTING on)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
binary="$build/tests/perfgate_tests"
if [ ! -x "$binary" ]; then
  echo "power_table.sh: no $binary; build the tests first (bash ci/build.sh $build)" >&2
  exit 3
fi
"$binary" --gtest_also_run_disabled_tests --gtest_filter='GateSimulationTest.DISABLED_PowerTable' |
  sed -n '/^launch sd/,/^\[/p' | grep -v '^\['
