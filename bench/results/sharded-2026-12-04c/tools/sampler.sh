#!/bin/bash
# every 10 s: utime+stime ticks and RSS of every process of the run
while true; do
  t=$(date +%s)
  for p in $(pgrep -f 'fake|load_bench|slurmjob-operator|op-3c5b24d'); do
    [ -r /proc/$p/stat ] || continue
    read -r -a s < /proc/$p/stat 2>/dev/null || continue
    cmd=$(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-120)
    echo "$t $p ${s[13]} ${s[14]} ${s[23]} $cmd"
  done
  sleep 10
done
