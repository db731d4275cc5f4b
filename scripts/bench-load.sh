#!/usr/bin/env bash
# The load harness of issue #7 (bench/load/README section in bench/README.md): builds the operator
# if needed, then runs bench/load/load_bench.py, which starts the stand-in Kubernetes API server
# and the Agent Platform stand-in, starts the operator as a separate process, creates N SlurmJobs
# through the API, lets them run to completion, restarts the operator, deletes them, and prints
# one table per N.
#
# Usage: scripts/bench-load.sh [--sizes 100,1000,10000] [--repeat K] [any load_bench.py option]
#   --replicas R [--shards S] --clusters K: R sharded replicas, one SIGKILLed mid-run (bench/README.md,
#   "100,000 SlurmJobs over 4 sharded replicas"); --standins-scale: the stand-ins alone at N.
#   BUILD_DIR   build directory (default: build); OPERATOR=path skips the build entirely.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD="${BUILD_DIR:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
BIN="${OPERATOR:-$BUILD/controller/slurmjob-operator}"

if [ -z "${OPERATOR:-}" ]; then
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    cmake -S "$ROOT" -B "$BUILD" "${launcher[@]}" >/dev/null
  fi
  echo "== building slurmjob-operator in $BUILD" >&2
  nice cmake --build "$BUILD" --target slurmjob-operator -j"${JOBS:-2}" >/dev/null
fi
[ -x "$BIN" ] || { echo "no operator binary at $BIN" >&2; exit 1; }

exec /usr/bin/python3 "$ROOT/bench/load/load_bench.py" --operator "$BIN" "$@"
