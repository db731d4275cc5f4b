"""Per-process CPU share (cores) per window (default 300 s) from sampler.sh's log.
Usage: cpushare.py LOG [WINDOW_S] [PID=NAME,...] (the replicas' pids; the default is the 2026-12-04c run's)."""
import collections, datetime, sys
rows = collections.defaultdict(list)  # pid -> [(t, ticks)]
name = {}
PIDS = (dict(kv.split("=") for kv in sys.argv[3].split(",")) if len(sys.argv) > 3 else
        {"31262": "r0", "31264": "r1", "31266": "r3", "31267": "r2"})
for line in open(sys.argv[1], errors="replace"):
    p = line.split(" ", 5)
    if len(p) < 6: continue
    t, pid, ut, st = int(p[0]), p[1], int(p[2]), int(p[3])
    cmd = p[5]
    n = ("ap" if "agent_platform" in cmd else "kube" if "kube_apiserver" in cmd else
         "harness" if "load_bench" in cmd else ("op-" + cmd.split("--identity=")[1].split()[0]) if "--identity=" in cmd else
         PIDS.get(pid) if "op-" in cmd or "slurmjob-operator" in cmd else None)
    if not n: continue
    name[pid] = n
    rows[pid].append((t, ut + st))
W = int(sys.argv[2]) if len(sys.argv) > 2 else 300
out = collections.defaultdict(dict)
for pid, v in rows.items():
    v.sort()
    for (t0, c0), (t1, c1) in zip(v, v[1:]):
        w = t0 // W * W
        a = out[w].setdefault(name[pid], [0, 0])
        a[0] += (c1 - c0) / 100.0; a[1] += t1 - t0
names = sorted({n for d in out.values() for n in d})
print("window(UTC) " + " ".join("%8s" % n for n in names) + "   (cores)")
for w in sorted(out):
    print(datetime.datetime.fromtimestamp(w, datetime.timezone.utc).strftime("%H:%M"), "    ",
          " ".join("%8.2f" % (out[w][n][0] / out[w][n][1]) if n in out[w] and out[w][n][1] else "%8s" % "-" for n in names))
