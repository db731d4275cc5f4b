#!/usr/bin/env bash
# Configures and builds into ${BUILD_DIR:-build}: everything, or only the
# ninja targets named in $BUILD_TARGETS (e.g. BUILD_TARGETS=slurmjob-operator).
# Usage: scripts/build.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
ninja -C "$BUILD_DIR" -j "$JOBS" ${BUILD_TARGETS:-}
