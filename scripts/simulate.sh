#!/usr/bin/env bash
# File: scripts/simulate.sh
#
# The deterministic simulation of #13 (tests/reconcile/simulation_test.cc)
# with more schedules, longer ones, or from other seeds than the suite's
# 10,000: builds simulation_test in the build directory and runs it.
#
# Contract: exits non-zero when the build fails or any schedule breaks an
# invariant; prints the summary line (schedules, steps, faults per kind,
# time) and, for the first failing seeds, the seed, the violation, the
# trace and the command that replays it.
#
# Usage: scripts/simulate.sh [SCHEDULES [FIRST_SEED [FAULT_STEPS]]]
#   scripts/simulate.sh 100000            # seeds 1..100000
#   scripts/simulate.sh 50000 1000001 40  # other seeds, longer fault phases
#   scripts/simulate.sh 1 877             # replay seed 877 with its trace and logs
# Environment: BUILD_DIR (default build), SIM_THREADS (default nproc),
#   JOBS (build jobs, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
ninja -C "$BUILD" -j "${JOBS:-2}" simulation_test >/dev/null
exec "$BUILD/tests/reconcile/simulation_test" --schedules="${1:-100000}" --seed="${2:-1}" \
  --fault-steps="${3:-20}" --threads="${SIM_THREADS:-$(nproc)}" \
  --gtest_filter='Simulation.*'
