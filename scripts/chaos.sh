#!/usr/bin/env bash
# The long chaos run (issue #5's crash test, issue #6's chaos runs): at least
# 200 SlurmJobs while the operator is SIGKILLed at seeded random points and
# restarted, the stand-in API server is restarted and its watches dropped, and
# Agent Platform answers UNAVAILABLE/500, loses submit replies after
# performing them and holds submits past the client timeout. Ends by checking
# every SlurmJob against the simulator's job table (one Slurm job per tag,
# none lost, true final states, deletions finished) and prints the counts.
#
# Usage: scripts/chaos.sh [--seed S] [--jobs N] [--duration SECONDS] [--keep-logs]
# Defaults: a time-based seed (printed), 200 jobs, 240 s of faults. Every
# other knob is a CHAOS_* environment variable (see tests/e2e/chaos_test.cc).
# Builds the chaos_test target into ${BUILD_DIR:-build} unless SKIP_BUILD=1.
set -euo pipefail
cd "$(dirname "$0")/.."
seed=$(( $(date +%s) % 1000000 ))
jobs=200
duration=240
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) seed=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --keep-logs) export CHAOS_KEEP_LOGS=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
BUILD_DIR=${BUILD_DIR:-build}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} >/dev/null
  fi
  cmake --build "$BUILD_DIR" --target chaos_test -j "${JOBS:-$(nproc)}"
fi
export CHAOS_SEED=$seed CHAOS_JOBS=$jobs CHAOS_DURATION_SECONDS=$duration
export CHAOS_SETTLE_SECONDS=${CHAOS_SETTLE_SECONDS:-300}
log=$(mktemp /tmp/slurmop-chaos-run.XXXXXX.log)
echo "chaos: seed $seed, $jobs SlurmJobs, $duration s of faults; output in $log"
status=0
"$BUILD_DIR/tests/e2e/chaos_test" 2>&1 | tee "$log" || status=$?
echo "---- chaos counts (seed $seed) ----"
grep '^METRIC chaos_' "$log" || true
exit "$status"
