"""End -> status lag per job from the operator logs (time of the status write that recorded the end)
and the Agent Platform stand-in's job table (Slurm's end_time). Usage: endlag.py WORKDIR TABLE.json"""
import collections, datetime, glob, json, os, re, statistics, sys
work, table_path = sys.argv[1], sys.argv[2]
tab = json.load(open(table_path))
end_by_id = {r[1]: r[6] for r in tab["rows"] if r[6]}
LINE = re.compile(r"^I(\d{8}) (\d\d:\d\d:\d\d\.\d+) +(\d+) executor\.cc:\d+\] (\S+): (.*)$")
def epoch(d, t):
    return datetime.datetime.strptime(d + " " + t, "%Y%m%d %H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()
job_id, ended_at, replica_of = {}, {}, {}
for path in sorted(glob.glob(os.path.join(work, "operator-1-r*.log"))):
    rep = path.rsplit("-", 1)[1].split(".")[0]
    last_write = {}
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        d, t, tid, key, msg = m.groups()
        if msg.startswith("submitted as Slurm job "):
            job_id[key] = int(msg.rsplit(" ", 1)[1])
        elif msg.startswith("write-status (status changed)"):
            last_write[(tid, key)] = epoch(d, t)
        elif msg.startswith("stop (the Slurm job has ended)") and key not in ended_at:
            w = last_write.get((tid, key))
            if w:
                ended_at[key] = w
                replica_of[key] = rep
lags = []
for key, t in ended_at.items():
    jid = job_id.get(key)
    if jid in end_by_id:
        lags.append((end_by_id[jid], t - end_by_id[jid], replica_of[key]))
lags.sort()
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else None
print("jobs with an end written: %d; with Slurm's end time: %d" % (len(ended_at), len(lags)))
print("all: p50 %.1f p99 %.1f max %.1f s" % (pct([l for _, l, _ in lags], 50), pct([l for _, l, _ in lags], 99), max(l for _, l, _ in lags)))
by_rep = collections.defaultdict(list)
for _, l, r in lags: by_rep[r].append(l)
for r, v in sorted(by_rep.items()):
    print("replica %s: n %d p50 %.1f p99 %.1f max %.1f s" % (r, len(v), pct(v, 50), pct(v, 99), max(v)))
by_min = collections.defaultdict(lambda: collections.defaultdict(list))
for e, l, r in lags: by_min[int(e // 300)][r].append(l)
print("by 5 minutes of Slurm's end (UTC): per replica n / p50 / p99 s")
for m in sorted(by_min):
    ts = datetime.datetime.fromtimestamp(m * 300, datetime.timezone.utc).strftime("%H:%M")
    print(ts, "  ".join("%s %d/%.0f/%.0f" % (r, len(v), pct(v, 50), pct(v, 99)) for r, v in sorted(by_min[m].items())))
