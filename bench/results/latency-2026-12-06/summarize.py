#!/usr/bin/python3
"""Ranges and medians of isolated create -> jobId runs (JSON from scripts/bench-load.sh
--json-out): the sequential floor (measured before the operator starts) and, where the run
had --paired-floor, the paired one (a floor sample before each isolated job).

    python3 summarize.py 'GLOB' ['GLOB' ...]
"""
import glob
import json
import statistics
import sys

FL = "floor (issue: delivery + submit + status write)"


def find(o, key):
    if isinstance(o, dict):
        if key in o:
            return o
        for v in o.values():
            x = find(v, key)
            if x:
                return x
    if isinstance(o, list):
        for v in o:
            x = find(v, key)
            if x:
                return x
    return None


def rng(vals, fmt):
    return ("%s-%s (median %s)" % (fmt, fmt, fmt)) % (min(vals), max(vals), statistics.median(vals))


def summarize(pat):
    rows = []
    for f in sorted(glob.glob(pat)):
        r = find(json.load(open(f)), "isolated_to_jobid")
        fl = r["floor"][FL] * 1000
        p50 = r["isolated_to_jobid"]["p50"] * 1000
        p99 = r["isolated_to_jobid"]["p99"] * 1000
        pf = (r.get("isolated_paired_floor") or {}).get("p50")
        rows.append((fl, p50, p99, p50 / fl, p99 / fl, pf * 1000 if pf else None))
    if not rows:
        return
    col = lambda i: [x[i] for x in rows]
    line = "%-40s n=%d floor %s | p50 %s | %s (<=3x: %d) | p99 %s | %s (<=10x: %d)" % (
        pat, len(rows), rng(col(0), "%.2f"), rng(col(1), "%.1f"), rng(col(3), "%.2fx"),
        sum(1 for x in rows if x[3] <= 3), rng(col(2), "%.1f"), rng(col(4), "%.1fx"),
        sum(1 for x in rows if x[4] <= 10))
    paired = [x for x in rows if x[5]]
    if paired:
        r50 = [x[1] / x[5] for x in paired]
        r99 = [x[2] / x[5] for x in paired]
        line += "\n%-40s paired floor %s | p50 %s (<=3x: %d) | p99 %s (<=10x: %d)" % (
            "", rng([x[5] for x in paired], "%.2f"), rng(r50, "%.2fx"),
            sum(1 for v in r50 if v <= 3), rng(r99, "%.1fx"), sum(1 for v in r99 if v <= 10))
    print(line)


for p in sys.argv[1:]:
    summarize(p)
