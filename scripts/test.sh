#!/usr/bin/env bash
# The whole test suite, set-up included: installs the dependencies, builds,
# and runs every test with ctest (unit, stand-in conformance, end-to-end with
# the real kubectl, the short chaos run, the CRD drift check, and the
# end-to-end scenarios on Debian's real Slurm 22.05), then the same unit and
# integration tests under AddressSanitizer + UndefinedBehaviorSanitizer, then
# every fuzz target for a bounded time.
# Usage (as root on Debian bookworm): scripts/test.sh
# Environment: SLURMOP_REAL_SLURM=0 skips the real-Slurm suite,
#   SLURMOP_SANITIZERS=0 the sanitizer run, FUZZ_SECONDS=0 the fuzzing
#   (default 20 s per target); TEST_JOBS sets ctest -j (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$(date +%s)
scripts/install-deps.sh
scripts/build.sh
built=$(date +%s)
echo "build: $((built - start)) s (including dependency check)"
exclude=()
[ "${SLURMOP_REAL_SLURM:-1}" = 0 ] && exclude=(-LE real-slurm)
(cd "${BUILD_DIR:-build}" &&
  ctest --output-on-failure --timeout 900 -j "${TEST_JOBS:-2}" "${exclude[@]}")
tested=$(date +%s)
echo "tests: $((tested - built)) s"

if [ "${SLURMOP_SANITIZERS:-1}" != 0 ]; then
  # Unit and integration tests (the operator-as-a-process suites, label e2e, are left to the
  # plain build: cpprestsdk's set_body type-puns its stream buffers, and UBSan's vptr report
  # of it from the operator subprocess is not reliably suppressed).
  # CpprestTransportTest.Stream* end streaming responses early on purpose (callback stop,
  # inactivity timeout), and SendOfABodyCutShortIsUnavailable sends a request body whose source
  # ends early; cpprestsdk's own pending tasks for them (set_body's task, in its thread pool) are
  # still alive at exit, which LSan reports now and then (allocations inside libcpprest only,
  # unsymbolized, so no function-name suppression in tests/sanitizers/lsan.supp can match them;
  # seen once in 2 runs for SendOfABodyCutShort). RestClientOverHttpTest.ListAndWatchAgainstALocalServer
  # ends a watch stream the same way (its cpprestsdk task was reported once in fresh-clone CI on
  # 2026-12-04, 0 of 20 reruns). They run, and must pass, in the plain build above.
  SANITIZE_EXCLUDE='real-slurm|chaos|e2e' scripts/test-sanitizers.sh \
    -E 'CpprestTransportTest.(Stream|SendOfABodyCutShort)|RestClientOverHttpTest.ListAndWatchAgainstALocalServer'
  echo "sanitizers: $(($(date +%s) - tested)) s"
fi
fuzz_start=$(date +%s)
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
  scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
  echo "fuzzing: $(($(date +%s) - fuzz_start)) s"
fi
echo "total: $(($(date +%s) - start)) s"
