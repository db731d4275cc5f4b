#!/usr/bin/python3
"""What one status write costs the stand-in API server alone, by the status's size.

Starts tests/fakes/kube_apiserver.py (or $KUBE), creates one SlurmJob, then PUTs /status 300
times with the floor's three-field status and 300 times with a status as the operator writes it
(four conditions, ~1.4 KB), serially on one keep-alive connection, and prints each median in ms;
two rounds. No operator and no watcher. Used for "tests/fakes: the stand-in API server copies
JSON trees without copy.deepcopy" (bench/README.md, "A worker kept for new SlurmJobs").

    /usr/bin/python3 bench/experiments/standin_status_write_cost.py
    KUBE=/path/to/an/older/kube_apiserver.py /usr/bin/python3 bench/experiments/...
"""
import copy
import http.client
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = {"clusterRef": {"name": "local", "kind": "SlurmCluster"}, "timeLimitMinutes": 60, "script": "#!/bin/bash\nsleep 5\n", "deletionPolicy": "Cancel", "backoffLimit": 3}
OPERATOR_STATUS = {"cluster": "local", "conditions": [{"lastTransitionTime": "2026-12-05T22:23:58Z", "message": "Submitted to cluster local as Slurm job 1530.", "observedGeneration": 1, "reason": "Submitted", "status": "True", "type": "Submitted"}, {"lastTransitionTime": "2026-12-05T22:23:58Z", "message": "Slurm job 1530 is queued (Priority).", "observedGeneration": 1, "reason": "JobPending", "status": "True", "type": "Reconciling"}, {"lastTransitionTime": "2026-12-05T22:23:58Z", "message": "Slurm job 1530 is queued (Priority).", "observedGeneration": 1, "reason": "JobPending", "status": "False", "type": "Ready"}, {"lastTransitionTime": "2026-12-05T22:23:58Z", "message": "", "observedGeneration": 1, "reason": "Progressing", "status": "False", "type": "Stalled"}], "firstSubmitTime": "2026-12-05T22:23:58Z", "jobId": 1530, "jobState": "PENDING", "jobTag": "slurmjob-operator:bench/f0ce7799-16f2-4df9-9fd6-b3928ed58b81/1@fdbff151-0ff4-4f18-8e3c-deb3bd360245", "message": "Slurm job 1530 is queued (Priority).", "observedGeneration": 1, "phase": "Pending", "reason": "Priority", "run": 1, "standardError": "/tmp/slurm-1530.out", "standardOutput": "/tmp/slurm-1530.out", "submitTarget": {"clusterId": "demo-cluster", "projectId": "demo-project", "region": "us-central1"}, "submitTime": "2026-12-05T22:23:58Z", "submittedTo": {"clusterId": "demo-cluster", "projectId": "demo-project", "region": "us-central1"}}
COLLECTION = "/apis/hpc.slurmoperator.dev/v1alpha1/namespaces/default/slurmjobs"


def main():
    work = tempfile.mkdtemp(prefix="standin-cost-")
    kube = os.environ.get("KUBE", REPO + "/tests/fakes/kube_apiserver.py")
    proc = subprocess.Popen(
        ["/usr/bin/python3", kube, "--port", "0", "--port-file", work + "/kube.port", "--token", "t",
         "--crd", REPO + "/crds/hpc.slurmoperator.dev_slurmjobs.yaml"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not os.path.exists(work + "/kube.port") or not open(work + "/kube.port").read().strip():
            time.sleep(0.05)
        conn = http.client.HTTPConnection("127.0.0.1", int(open(work + "/kube.port").read()))

        def req(method, path, body=None, ctype="application/json"):
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Authorization": "Bearer t", "Content-Type": ctype})
            r = conn.getresponse()
            data = r.read()
            return r.status, json.loads(data) if data else None

        for _ in range(100):
            if req("GET", "/api/v1/namespaces/default")[0] == 200:
                break
            time.sleep(0.1)

        def run(kind, rnd, n=300):
            name = "j-%s-%d" % (kind, rnd)
            st, obj = req("POST", COLLECTION, {"apiVersion": "hpc.slurmoperator.dev/v1alpha1",
                                               "kind": "SlurmJob", "spec": SPEC,
                                               "metadata": {"name": name, "namespace": "default"}})
            assert st == 201, (st, obj)
            st, obj = req("PATCH", COLLECTION + "/" + name,
                          {"metadata": {"finalizers": ["hpc.slurmoperator.dev/slurm-job"]}},
                          "application/merge-patch+json")
            took = []
            for i in range(n):
                if kind == "floor":
                    obj["status"] = {"jobId": i + 1, "jobState": "PENDING", "phase": "Pending"}
                else:
                    obj["status"] = copy.deepcopy(OPERATOR_STATUS)
                    obj["status"]["jobId"] = i + 1
                t = time.perf_counter()
                st, obj = req("PUT", COLLECTION + "/" + name + "/status", obj)
                took.append(time.perf_counter() - t)
                assert st == 200, (st, obj)
            return statistics.median(took) * 1000

        for rnd in range(2):
            for kind in ("floor", "operator"):
                print("%-8s status write: %.3f ms" % (kind, run(kind, rnd)), flush=True)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait()


if __name__ == "__main__":
    main()
