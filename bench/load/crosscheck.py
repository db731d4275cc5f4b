#!/usr/bin/env python3
"""Cross-checks a running load bench from outside the harness (read-only).

Usage: python3 bench/load/crosscheck.py http://127.0.0.1:<kube.port> http://127.0.0.1:<ap.port>
(the ports are in the run's work directory: kube.port, ap.port; run it while the stand-ins are up; it
sends the harness's kubeconfig token, bench-token).

Reads the Agent Platform stand-in's job table of every cluster (/__admin/jobs) and a paged list of every
SlurmJob, and prints: SlurmJobs without a jobId; whether each (cluster, jobId) is named by exactly one
SlurmJob and known to Slurm with the SlurmJob's jobTag as its comment; Slurm jobs no SlurmJob names;
duplicate submits by comment; and how many Slurm jobs that ended a minute or more before the table was
read do not show a terminal jobState in their SlurmJob yet. Used for the third 100,000 run
(bench/README.md, "N = 100,000, third run").
"""
import json, sys, time, urllib.request, collections
KUBE, AP = sys.argv[1], sys.argv[2]
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
            "PREEMPTED", "BOOT_FAIL", "DEADLINE"}
def get(url, token=None):
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token} if token else {})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)
t0 = time.time()
table = get(AP + "/__admin/jobs")
t_table = time.time()
slurm = {}
for j in table["jobs"]:
    slurm[(j["cluster"], j["job_id"])] = j
print("slurm jobs: %d (fetched in %.1f s); accepted submits %d; duplicates by comment %d" % (
    len(slurm), t_table - t0, table["submit_counts"]["accepted"],
    len(table["submit_counts"]["duplicates_by_comment"])))
del table
sj, cont = [], ""
while True:
    page = get(KUBE + "/apis/hpc.slurmoperator.dev/v1alpha1/slurmjobs?limit=500" +
               ("&continue=" + cont if cont else ""), "bench-token")
    for o in page["items"]:
        st = o.get("status") or {}
        to = st.get("submittedTo") or {}
        sj.append((o["metadata"]["namespace"], o["metadata"]["name"], st.get("jobId"),
                   st.get("jobState"), "%s/%s/%s" % (to.get("projectId"), to.get("region"),
                                                      to.get("clusterId")), st.get("jobTag")))
    cont = (page.get("metadata") or {}).get("continue")
    if not cont:
        break
t_list = time.time()
print("SlurmJobs: %d (listed in %.1f s)" % (len(sj), t_list - t_table))
no_id = [x for x in sj if not x[2]]
print("SlurmJobs without a jobId: %d" % len(no_id))
print("SlurmJob jobStates: %s" % dict(collections.Counter(x[3] for x in sj)))
shown = {(x[4], x[2]): x for x in sj if x[2]}
print("SlurmJobs per (cluster, jobId) unique: %s" % (len(shown) == len(sj) - len(no_id)))
missing = [k for k in shown if k not in slurm]
print("SlurmJobs whose (cluster, jobId) Slurm does not know: %d %s" % (len(missing), missing[:3]))
tag_ok = sum(1 for k, x in shown.items() if k in slurm and slurm[k].get("comment") == x[5])
print("of those Slurm knows, the Slurm job's comment is the SlurmJob's jobTag: %d" % tag_ok)
unnamed = [k for k in slurm if k not in shown]
print("Slurm jobs no SlurmJob names: %d %s" % (len(unnamed), unnamed[:3]))
ended = [k for k, j in slurm.items() if j.get("end_time")]
early = [k for k in ended if slurm[k]["end_time"] < t_table - 60]
lag = [k for k in early if k in shown and shown[k][3] not in TERMINAL]
print("Slurm jobs ended: %d; ended >= 60 s before the read: %d; of them the SlurmJob does not show "
      "a terminal jobState yet: %d %s" % (len(ended), len(early), len(lag), lag[:3]))
print("Slurm states: %s" % dict(collections.Counter(j["state"] for j in slurm.values())))
