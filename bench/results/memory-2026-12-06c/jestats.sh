#!/bin/bash
# Prints jemalloc's statistics of a running bench operator into its log, once, 90 s into
# the tracking window (the harness logs "terminal: k/N" from then on).
# usage: jestats.sh BENCH-STDOUT-LOG BINARY-BASENAME   (the operator runs as /tmp/BINARY-BASENAME)
# The operator's log is operator-1.log in the bench's work dir (run the bench with --keep).
log=$1; bin=$2
until grep -q "terminal: " "$log" 2>/dev/null; do sleep 2; done
sleep 90
pid=$(pgrep -f "^/tmp/$bin" | head -1)
grep -E "^VmRSS|RssAnon|RssFile" /proc/$pid/status > /tmp/b7/jestats-$bin.status
# "a": leave out the per-arena tables (one arena: the merged ones are the same).
gdb -p $pid -batch -ex 'call (void)malloc_stats_print(0,0,"a")' > /tmp/b7/jestats-$bin.gdb 2>&1
echo done $pid
