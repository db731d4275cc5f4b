#!/usr/bin/env bash
# File: scripts/leak-check-local-run.sh
#
# LeakSanitizer on the stand-alone run: the same steps as scripts/local-run.sh
# (stand-in API server and Agent Platform, the operator, the hello example
# applied with kubectl and followed to COMPLETED, then deleted), with the
# operator built by scripts/test-sanitizers.sh (-DSLURMOP_SANITIZE=ON), on
# free ports. The operator is then stopped with SIGTERM (its clean shutdown)
# so that LeakSanitizer runs at exit.
#
# Contract: exits 0 only when the job completed, the operator exited 0 on
# SIGTERM, and its log holds no ASan/LSan/UBSan report; prints the leak
# result and the log's path otherwise.
#
# Usage: scripts/leak-check-local-run.sh   (after scripts/test-sanitizers.sh)
# Environment: SANITIZE_BUILD_DIR (default build/asan).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${SANITIZE_BUILD_DIR:-build/asan}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
BIN="$BUILD/controller/slurmjob-operator"
[ -x "$BIN" ] || { echo "no sanitizer build at $BIN; run scripts/test-sanitizers.sh" >&2; exit 1; }

WORK=$(mktemp -d /tmp/slurmjob-leakcheck.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
wait_file() { for _ in $(seq 1 600); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "timed out waiting for $1" >&2; return 1; }

/usr/bin/python3 tests/fakes/kube_apiserver.py --port 0 --port-file "$WORK/kube.port" \
  --kubeconfig-out "$WORK/kubeconfig" --tls-auto "$WORK/tls" >"$WORK/kube_apiserver.log" 2>&1 &
PIDS+=($!)
/usr/bin/python3 tests/fakes/agent_platform.py --port 0 --port-file "$WORK/ap.port" \
  >"$WORK/agent_platform.log" 2>&1 &
PIDS+=($!)
wait_file "$WORK/kube.port"; wait_file "$WORK/kubeconfig"; wait_file "$WORK/ap.port"
AP_PORT=$(cat "$WORK/ap.port")
export KUBECONFIG="$WORK/kubeconfig"
kubectl apply -k crds/ >/dev/null
sed "s#http://127.0.0.1:18443#http://127.0.0.1:$AP_PORT#" examples/hello-slurmjob.yaml >"$WORK/hello.yaml"

# fast_unwind_on_malloc=0: whole stacks through uninstrumented libraries (libcrypto has no frame
# pointers), so that tests/sanitizers/lsan.supp can name their functions; slower, fine for one run.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:fast_unwind_on_malloc=0"
export LSAN_OPTIONS="suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$ROOT/tests/sanitizers/ubsan.supp"
GCE_METADATA_HOST=127.0.0.1:$AP_PORT GOOGLE_APPLICATION_CREDENTIALS="" HOME="$WORK" \
  "$BIN" --kubeconfig="$KUBECONFIG" --health-port=0 --health-port-file="$WORK/health.port" \
  --allowed-endpoint-hosts="127.0.0.1:$AP_PORT" --allow-operator-identity-for-namespaced-clusters \
  >"$WORK/operator.log" 2>&1 &
OP=$!
wait_file "$WORK/health.port"

kubectl apply -f "$WORK/hello.yaml" >/dev/null
kubectl wait sj/hello --for=jsonpath='{.status.jobState}'=COMPLETED --timeout=180s
kubectl get sj hello
kubectl delete -f "$WORK/hello.yaml" --wait=true --timeout=120s >/dev/null
sleep 1
kill -TERM "$OP"
rc=0
wait "$OP" || rc=$?
echo "operator exit status after SIGTERM: $rc (log: $WORK/operator.log)"
if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$WORK/operator.log"; then
  grep -E -A30 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$WORK/operator.log" | head -80
  echo "leak check: FINDINGS (see $WORK/operator.log)"
  exit 1
fi
grep -A20 'Suppressions used' "$WORK/operator.log" || true
[ "$rc" -eq 0 ] || { echo "leak check: operator exited $rc"; exit 1; }
echo "leak check: no leaks, no ASan/UBSan reports"
