#!/usr/bin/env bash
# File: scripts/fuzz.sh
#
# Fuzzes every parser of outside input with libFuzzer for a bounded time:
# configures a clang build with -DSLURMOP_FUZZ=ON in its own directory,
# builds the targets of tests/fuzz, and runs each for SECONDS_PER_TARGET
# seconds (-max_total_time) from its seed corpus (tests/fuzz/corpus/<target>)
# and regression inputs (tests/fuzz/regressions/<target>).
#
# Contract: prints the executions per target (libFuzzer's
# stat::number_of_executed_units) and exits 1 if any target found a crash,
# a leak, undefined behaviour, a timeout or an out-of-memory; the input that
# caused it is kept in $FUZZ_BUILD_DIR/artifacts/<target>/ (add it to
# tests/fuzz/regressions/<target>/ once fixed). New corpus entries go to
# $FUZZ_BUILD_DIR/corpus/<target>/, never into the source tree.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]
#   SECONDS_PER_TARGET  default 60
#   TARGET              e.g. slurm_response (default: every target)
# Environment: FUZZ_BUILD_DIR (default build/fuzz), JOBS (build jobs,
#   default nproc), CXX_CLANG (default clang++).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_PER_TARGET=${1:-60}
[ $# -gt 0 ] && shift
BUILD=${FUZZ_BUILD_DIR:-build/fuzz}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
JOBS=${JOBS:-$(nproc)}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cc; do
    t=$(basename "$f" _fuzz.cc)
    targets+=("$t")
  done
fi

launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
start=$(date +%s)
# -O1 -g1: libFuzzer's own recommendation (-O1 -g), with line tables only for the reports.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="${CXX_CLANG:-clang++}" -DSLURMOP_FUZZ=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "${launcher[@]}" >/dev/null
ninja -C "$BUILD" -j "$JOBS" "${targets[@]/#/fuzz_}"
echo "fuzz build: $(($(date +%s) - start)) s"

# Leaks are findings; UBSan stops at the first report (the build does not
# recover either).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
summary=()
for t in "${targets[@]}"; do
  bin="$BUILD/tests/fuzz/fuzz_$t"
  work="$BUILD/corpus/$t"
  artifacts="$BUILD/artifacts/$t"
  log="$BUILD/logs/$t.log"
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  dirs=("$work" "tests/fuzz/corpus/$t")
  [ -d "tests/fuzz/regressions/$t" ] && dirs+=("tests/fuzz/regressions/$t")
  echo "== fuzzing $t for ${SECONDS_PER_TARGET} s (log: $log)"
  rc=0
  "$bin" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2560 -dict=tests/fuzz/json.dict -artifact_prefix="$artifacts/" \
    "${dirs[@]}" >"$log" 2>&1 || rc=$?
  execs=$(awk '/stat::number_of_executed_units/{print $2}' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    echo "!! $t: finding (exit $rc); input in $artifacts/:"
    find "$artifacts" -type f -printf "   %f\n"
    grep -m 5 -E 'ERROR: |runtime error:|FUZZ_CHECK|SUMMARY:' "$log" | sed 's/^/   /' || true
  fi
  summary+=("$(printf '%-16s %12s executions  %6s edges  %s' "$t" "${execs:-?}" "${cov:-?}" \
    "$([ "$rc" -eq 0 ] && echo ok || echo FINDING)")")
done

echo
echo "== fuzzing summary (${SECONDS_PER_TARGET} s per target)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "findings in: ${failed[*]}"
  exit 1
fi
