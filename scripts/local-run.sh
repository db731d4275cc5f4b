#!/usr/bin/env bash
# The operator's main job, locally, set-up included: builds it, starts the
# stand-in Kubernetes API server and the Agent Platform stand-in (a simulated
# Slurm cluster behind callSlurmRestApi), starts the operator, applies
# examples/hello-slurmjob.yaml with the real kubectl and shows the SlurmJob
# go to COMPLETED with its Slurm job id, as `kubectl get` prints it.
#
# Usage (as root on Debian bookworm): scripts/local-run.sh [--keep]
#   --keep   leave everything running afterwards and print how to use it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
KEEP=0
[ "${1:-}" = "--keep" ] && KEEP=1

scripts/install-deps.sh >/dev/null
echo "== building the operator"
# Only the operator binary: the demo needs nothing else built (the stand-ins
# are Python, crds/ is checked in). scripts/test.sh builds the rest.
BUILD_TARGETS=slurmjob-operator scripts/build.sh >/dev/null
BUILD="${BUILD_DIR:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
BIN="$BUILD/controller/slurmjob-operator"

WORK=$(mktemp -d /tmp/slurmjob-local.XXXXXX)
PIDS=()
cleanup() {
  if [ "$KEEP" = 1 ]; then return; fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

wait_file() { for _ in $(seq 1 300); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "timed out waiting for $1" >&2; return 1; }

echo "== starting the stand-in Kubernetes API server and Agent Platform (logs in $WORK)"
/usr/bin/python3 tests/fakes/kube_apiserver.py --port 0 --port-file "$WORK/kube.port" \
  --kubeconfig-out "$WORK/kubeconfig" --tls-auto "$WORK/tls" >"$WORK/kube_apiserver.log" 2>&1 &
PIDS+=($!)
/usr/bin/python3 tests/fakes/agent_platform.py --port 18443 --port-file "$WORK/ap.port" \
  --verbose >"$WORK/agent_platform.log" 2>&1 &
PIDS+=($!)
wait_file "$WORK/kube.port"; wait_file "$WORK/kubeconfig"; wait_file "$WORK/ap.port"
export KUBECONFIG="$WORK/kubeconfig"

kubectl apply -k crds/ >/dev/null
# The operator's own namespace, as deploy/ creates it: its submit-note key Secret goes there.
kubectl create namespace slurmjob-operator-system >/dev/null
# A single-team demo: the operator lends its identity to the namespaced SlurmCluster of examples/.
echo "== starting the operator (credentials from the stand-in metadata server)"
GCE_METADATA_HOST=127.0.0.1:18443 GOOGLE_APPLICATION_CREDENTIALS= HOME="$WORK" \
  "$BIN" --kubeconfig="$KUBECONFIG" --health-port=0 --health-port-file="$WORK/health.port" \
  --allowed-endpoint-hosts=127.0.0.1:18443 --allow-operator-identity-for-namespaced-clusters \
  >"$WORK/operator.log" 2>&1 &
PIDS+=($!)
wait_file "$WORK/health.port"

echo "== kubectl apply -f examples/hello-slurmjob.yaml"
t0=$(date +%s.%N)
kubectl apply -f examples/hello-slurmjob.yaml
kubectl get sj hello -w &
WATCH=$!
for _ in $(seq 1 600); do
  id=$(kubectl get sj hello -o jsonpath='{.status.jobId}' 2>/dev/null || true)
  [ -n "$id" ] && break
  sleep 0.05
done
t1=$(date +%s.%N)
kubectl wait sj/hello --for=jsonpath='{.status.jobState}'=COMPLETED --timeout=120s >/dev/null
sleep 0.3
kill "$WATCH" 2>/dev/null || true
wait "$WATCH" 2>/dev/null || true
echo
echo "== kubectl get slurmjobs"
kubectl get sj
echo
echo "apply -> jobId in status: $(/usr/bin/python3 -c "print(f'{$t1 - $t0:.2f}')") s"
pid=${PIDS[2]}
echo "operator resident memory now: $(awk '/VmRSS/{print $2" "$3}' /proc/$pid/status)"
if [ "$KEEP" = 1 ]; then
  echo
  echo "Still running. Try:  export KUBECONFIG=$KUBECONFIG; kubectl describe sj hello"
  echo "Stop with: kill ${PIDS[*]}"
fi
