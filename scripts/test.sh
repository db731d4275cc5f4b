#!/usr/bin/env bash
# The whole test suite, set-up included: installs the dependencies, builds,
# runs the operator as a process with ctest (end-to-end with the real kubectl,
# the short chaos run, the end-to-end scenarios on Debian's real Slurm 22.05),
# then every other test (unit, integration, stand-in conformance, the CRD
# drift check, the fuzz targets' replays) under AddressSanitizer +
# UndefinedBehaviorSanitizer, then every fuzz target for a bounded time. Each
# test runs once; with SLURMOP_SANITIZERS=0 all of them run on the plain build.
# Usage (as root on Debian bookworm): scripts/test.sh
# Environment: SLURMOP_REAL_SLURM=0 skips the real-Slurm suite,
#   SLURMOP_SANITIZERS=0 the sanitizer run, FUZZ_SECONDS=0 the fuzzing
#   (default 20 s per target); TEST_JOBS sets ctest -j (default 2), E2E_TEST_JOBS that of the
#   operator-as-a-process suites when the sanitizer run is on (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$(date +%s)
sanitizers=${SLURMOP_SANITIZERS:-1}
# Tests the sanitizer run leaves out, run on the plain build instead, and the binaries that hold
# them: cpprestsdk's own pending tasks (set_body's task, a streamed body's task chain, in its
# thread pool) are still alive at exit when these stop a request or a stream early, which
# LeakSanitizer reports now and then (allocations inside libcpprest only, unsymbolized, so no
# function-name suppression in tests/sanitizers/lsan.supp can match them).
#   CpprestTransportTest.SendOfABodyCutShortIsUnavailable: a request body whose source ends early
#     (seen once in 2 runs);
#   RestClientOverHttpTest.ListAndWatchAgainstALocalServer: a watch stream ended early (once in
#     fresh-clone CI on 2026-12-04, 0 of 20 reruns);
#   StreamTest.*/Cpprest: streams stopped mid-body (up to half the runs; tests/http/stream_test.cc).
plain_only_tests='CpprestTransportTest.SendOfABodyCutShortIsUnavailable|RestClientOverHttpTest.ListAndWatchAgainstALocalServer|StreamTest\..*/Cpprest'
plain_only_targets='slurmop_http_test slurmop_http_one_io_thread_test slurmop_kube_test'

scripts/install-deps.sh
if [ "$sanitizers" != 0 ]; then
  # The unit and integration tests run once, under the sanitizers below; the plain build holds
  # what runs only here: the operator, the end-to-end suites (e2e_all) and the plain-only tests.
  BUILD_TARGETS="slurmjob-operator e2e_all $plain_only_targets" scripts/build.sh
else
  scripts/build.sh
fi
built=$(date +%s)
echo "build: $((built - start)) s (including dependency check)"
cd "${BUILD_DIR:-build}"
if [ "$sanitizers" != 0 ]; then
  # The operator as a process (labels e2e, chaos, real-slurm), left to the plain build: cpprestsdk's
  # set_body type-puns its stream buffers, and UBSan's vptr report of it from the operator
  # subprocess is not reliably suppressed.
  # The sanitizer build leaves tests/e2e out, so a test of it with none of these labels would run
  # nowhere: refuse one.
  unlabelled=$(cd tests/e2e && ctest -N -LE 'e2e|chaos|real-slurm' | awk '/^Total Tests:/{print $3}')
  if [ "$unlabelled" != 0 ]; then
    echo "tests/e2e: $unlabelled test(s) without the label e2e, chaos or real-slurm:" >&2
    (cd tests/e2e && ctest -N -LE 'e2e|chaos|real-slurm') >&2
    exit 1
  fi
  labels='e2e|chaos'
  [ "${SLURMOP_REAL_SLURM:-1}" != 0 ] && labels+='|real-slurm'
  # Two at a time by default. These wait more than they compute (52% of a 2-core machine idle at 2,
  # 30% at 3, where all 80 took 567 s on 2026-12-07), but at 3 one fresh-clone run in three failed
  # TenantIdentity.RbacMatchesTheCode on a race in the test that the load exposed (since fixed);
  # E2E_TEST_JOBS=3 is there for whoever wants the time and will watch for more of those.
  ctest --output-on-failure --timeout 900 -j "${E2E_TEST_JOBS:-2}" -L "$labels"
  ctest --output-on-failure --timeout 900 -j "${TEST_JOBS:-2}" -R "$plain_only_tests" \
    --no-tests=error
else
  exclude=()
  [ "${SLURMOP_REAL_SLURM:-1}" = 0 ] && exclude=(-LE real-slurm)
  ctest --output-on-failure --timeout 900 -j "${TEST_JOBS:-2}" "${exclude[@]}"
fi
cd "$root"
tested=$(date +%s)
echo "tests: $((tested - built)) s"

if [ "$sanitizers" != 0 ]; then
  SANITIZE_EXCLUDE='real-slurm|chaos|e2e' scripts/test-sanitizers.sh -E "$plain_only_tests"
  echo "sanitizers: $(($(date +%s) - tested)) s"
fi
fuzz_start=$(date +%s)
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
  scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
  echo "fuzzing: $(($(date +%s) - fuzz_start)) s"
fi
echo "total: $(($(date +%s) - start)) s"
