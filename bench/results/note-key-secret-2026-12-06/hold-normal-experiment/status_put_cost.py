"""What one PUT of a SlurmJob's status costs the stand-in API server, the operator's status (as it
is once the job runs, ~1.5 KB) against the floor's three fields, 200 writes each, three rounds.

    python3 status_put_cost.py OPERATOR_BINARY   (from the repository's root)
"""
import sys, time, json, copy, statistics, types, os
sys.path.insert(0, os.path.join(os.getcwd(), "bench/load"))
import load_bench as lb
work = "/tmp/status-put-cost"; os.makedirs(work, exist_ok=True)
env = lb.Env(work, history=10000)
args = types.SimpleNamespace(operator=sys.argv[1], budget=0, workers=4, operator_arg=[], paired_floor=False, allocator="jemalloc", operator_env=[])
try:
    env.setup_cluster(); env.token()
    op, _, _ = lb.start_operator(args, env, work, "1")
    P = "%s/namespaces/%s/slurmjobs" % (lb.GROUP, lb.NS)
    env.k.json("POST", P, lb.job_manifest(lb.NS, "sc-0", 600), expect=(201,))
    for _ in range(200):
        _, o = env.k.json("GET", P + "/sc-0")
        if (o.get("status") or {}).get("jobId"): break
        time.sleep(0.05)
    time.sleep(1.5)
    op.stop()
    _, o = env.k.json("GET", P + "/sc-0")
    print(json.dumps(o, indent=1)[:6000])
    print("object bytes", len(json.dumps(o)), "status bytes", len(json.dumps(o["status"])))
    json.dump(o, open(work + "/obj.json", "w"))
    # time PUT /status: full operator status vs the floor's small one, alternating a field so each is a real write
    def bench(name, mk, n=200):
        ts = []
        _, cur = env.k.json("GET", P + "/" + name)
        for i in range(n):
            body = mk(cur, i)
            t0 = time.perf_counter()
            st, cur = env.k.json("PUT", P + "/" + name + "/status", body, expect=(200,))
            ts.append(time.perf_counter() - t0)
        return round(statistics.median(ts) * 1000, 3)
    env.k.json("POST", P, lb.job_manifest(lb.NS, "sc-1", 600), expect=(201,))
    env.k.json("POST", P, lb.job_manifest(lb.NS, "sc-2", 600), expect=(201,))
    full = o["status"]
    def mk_full(cur, i):
        b = copy.deepcopy(cur); b["status"] = copy.deepcopy(full); b["status"]["jobId"] = 100000 + i; return b
    def mk_small(cur, i):
        b = copy.deepcopy(cur); b["status"] = {"jobId": 100000 + i, "jobState": "PENDING", "phase": "Pending"}; return b
    for r in range(3):
        print("full status PUT ms", bench("sc-1", mk_full), "small status PUT ms", bench("sc-2", mk_small))
finally:
    env.stop()
