import json, sys, time, urllib.request
AP = sys.argv[1]; out = sys.argv[2]
t0 = time.time()
with urllib.request.urlopen(AP + "/__admin/jobs", timeout=900) as r:
    table = json.load(r)
t1 = time.time()
rows = [(j.get("cluster"), j.get("job_id"), j.get("comment"), j.get("name"), j.get("submit_time"),
         j.get("start_time"), j.get("end_time"), j.get("state") or j.get("job_state")) for j in table["jobs"]]
json.dump({"t_request": t0, "t_answer": t1, "rows": rows, "submit_counts": {k: (len(v) if isinstance(v, (dict, list)) else v) for k, v in table["submit_counts"].items()}}, open(out, "w"))
print(len(rows), "rows in", round(t1 - t0, 1), "s; keys of a job:", sorted(table["jobs"][0].keys()))
