#!/usr/bin/env bash
# scripts/slurm-local.sh's is_ours, the check behind "munged exited during start-up":
#  1. a daemon that is alive is never called dead while it goes through its start-up execs
#     (env -> setsid -> setpriv -> env -> sleep, as `launch` starts munged). Before is_ours
#     looked again, 6-13% of such starts read once as not ours on a 2-core machine, and CI failed
#     when that happened to munged;
#  2. a live process without the marker, an exited one and an empty PID are not ours.
# Usage: slurm_local_is_ours_test.sh SCRIPT [STARTS]   (as root: setpriv changes the user)
set -u
script=$1
starts=${2:-100}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SLURM_LOCAL_DIR="$tmp/cluster"
# shellcheck source=/dev/null
source "$script"
set +e

fail=0
misread=0
for i in $(seq 1 "$starts"); do
  (exec env SLURM_LOCAL_INSTANCE="$DIR" setsid setpriv --reuid=nobody --regid=nogroup \
     --clear-groups env sleep 0.05 </dev/null >/dev/null 2>&1) &
  pid=$!
  # As `launch` does: wait for the first exec (the subshell itself has no marker).
  until grep -qzxF "SLURM_LOCAL_INSTANCE=$DIR" "/proc/$pid/environ" 2>/dev/null; do
    if ! [ -d "/proc/$pid" ]; then
      echo "FAIL: start $i exited before its first exec (setpriv to nobody:nogroup failed?)"
      exit 1
    fi
  done
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    if ! is_ours "$pid"; then
      # Not ours is right only once the process has exited (or is a zombie).
      if [ -d "/proc/$pid" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status"; then
        misread=$((misread + 1))
      fi
      break
    fi
  done
  wait "$pid"
done
if [ "$misread" -ne 0 ]; then
  echo "FAIL: is_ours called a live, starting daemon not ours in $misread of $starts starts"
  fail=1
fi

sleep 5 & stranger=$!
t0=$(date +%s%N)
if is_ours "$stranger"; then echo "FAIL: a process without the marker is ours"; fail=1; fi
waited_ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$waited_ms" -gt 2000 ]; then
  echo "FAIL: is_ours took ${waited_ms} ms to say no to a live stranger"; fail=1
fi
kill "$stranger"; wait "$stranger" 2>/dev/null
if is_ours "$stranger"; then echo "FAIL: an exited process is ours"; fail=1; fi
if is_ours ""; then echo "FAIL: the empty PID is ours"; fail=1; fi

[ "$fail" -eq 0 ] && echo "PASS: $starts starts, no live daemon misread; strangers and the dead are not ours"
exit "$fail"
