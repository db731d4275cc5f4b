#!/usr/bin/python3
"""Load harness for slurmjob-operator (issue #7).

For each N it starts the stand-in Kubernetes API server (tests/fakes/kube_apiserver.py) and the
Agent Platform stand-in with its Slurm simulator (tests/fakes/agent_platform.py, zero added
latency), measures the stand-ins alone (the floor of the create -> jobId path and their capacity),
starts the operator binary as a separate process, creates N SlurmJobs through the API (HTTP, not
kubectl), lets them run to completion, restarts the operator with the N SlurmJobs present, deletes
them, and prints one table.

    /usr/bin/python3 bench/load/load_bench.py --operator BUILD/controller/slurmjob-operator \
        [--sizes 100,1000,10000] [--repeat 1] [--json-out FILE] [--keep]

Only the standard library is used. Timestamps are time.time() in this process; watch events are
stamped when this process reads them, so every latency includes one watch delivery to the
harness, as a user's `kubectl get -w` would see it.
"""

import argparse
import collections
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc_health  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PY = "/usr/bin/python3"
PY_PREFIX = [a for a in os.environ.get("BENCH_PY_PREFIX", "").split() if a]
GROUP = "/apis/hpc.slurmoperator.dev/v1alpha1"
NS = "bench"
CLUSTER = "local"
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
            "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def log(msg):
    sys.stderr.write("%s bench: %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


# ----------------------------------------------------------------------------------- /proc

def proc_cpu(pid):
    """utime+stime of a process in seconds (None once it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def proc_mem(pid):
    """(VmRSS, VmHWM) in bytes."""
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        return None, None
    return out.get("VmRSS"), out.get("VmHWM")


def pct(values, p):
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# ----------------------------------------------------------------------------------- HTTP

class Http:
    """Keep-alive HTTP/1.1 connections, one per thread."""

    def __init__(self, port, headers=None):
        self.port = port
        self.headers = dict(headers or {})
        self.tls = threading.local()

    def _conn(self):
        c = getattr(self.tls, "conn", None)
        if c is None:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.tls.conn = c
        return c

    def request(self, method, path, body=None, ctype="application/json", headers=None):
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        h = dict(self.headers)
        if data is not None:
            h["Content-Type"] = ctype
        h.update(headers or {})
        for attempt in (0, 1):
            c = self._conn()
            try:
                c.request(method, path, body=data, headers=h)
                r = c.getresponse()
                raw = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                    self.tls.conn = None
                return r.status, raw
            except (http.client.HTTPException, OSError):
                c.close()
                self.tls.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def json(self, method, path, body=None, ctype="application/json", expect=None):
        status, raw = self.request(method, path, body, ctype)
        if expect is not None and status not in expect:
            raise RuntimeError("%s %s -> %d %s" % (method, path, status, raw[:300]))
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, None


class WatchStream(threading.Thread):
    """A watch on a collection that re-watches from the last resourceVersion; calls
    on_event(type, obj, t_received) for every event."""

    def __init__(self, port, token, path, rv, on_event):
        super().__init__(daemon=True)
        self.port, self.token, self.path, self.rv, self.on_event = port, token, path, rv, on_event
        self.stop = False
        self.selector = None  # labelSelector, if any
        self.requests = 0  # watch requests made (counted by the apiserver as verb "watch")
        self.connected = threading.Event()

    def run(self):
        while not self.stop:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=3600)
                qd = {"watch": "true", "resourceVersion": self.rv,
                      "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
                if self.selector:
                    qd["labelSelector"] = self.selector
                q = urllib.parse.urlencode(qd)
                self.requests += 1
                c.request("GET", self.path + "?" + q,
                          headers={"Authorization": "Bearer " + self.token})
                r = c.getresponse()
                if r.status != 200:
                    r.read()
                    time.sleep(0.2)
                    continue
                self.connected.set()
                while not self.stop:
                    line = r.readline()
                    if not line:
                        break
                    t = time.time()
                    line = line.strip()
                    if not line:
                        continue
                    ev = json.loads(line)
                    obj = ev.get("object") or {}
                    if ev.get("type") == "ERROR":
                        self.rv = ""  # 410: start over from now (the harness tracks by name)
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self.rv = rv
                    if ev.get("type") != "BOOKMARK":
                        self.on_event(ev["type"], obj, t)
                c.close()
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.1)


# ----------------------------------------------------------------------------------- stand-ins

class Proc:
    def __init__(self, argv, logpath, env=None):
        self.logpath = logpath
        self.log = open(logpath, "ab")
        e = dict(os.environ)
        e.update(env or {})
        self.started = time.time()
        self.p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=e,
                                  start_new_session=True)
        self.pid = self.p.pid

    def stop(self, sig=signal.SIGTERM, grace=15):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(grace)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()
        return self.p.returncode


def wait_file(path, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                text = f.read().strip()
            if text:
                return text
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for %s" % path)


class Env:
    """The two stand-ins for one run."""

    def __init__(self, work, history, clusters=1, kube_args=()):
        self.work = work
        self.kube_token = "bench-token"
        self.kube = Proc([PY] + PY_PREFIX + [os.path.join(REPO, "tests/fakes/kube_apiserver.py"), "--port", "0",
                          ] + list(kube_args) + [
                          "--port-file", work + "/kube.port", "--kubeconfig-out",
                          work + "/kubeconfig", "--token", self.kube_token,
                          "--history-size", str(history),
                          "--crd", os.path.join(REPO, "crds/hpc.slurmoperator.dev_slurmjobs.yaml"),
                          "--crd", os.path.join(REPO,
                                                "crds/hpc.slurmoperator.dev_slurmclusters.yaml"),
                          # readiness waits for every informer's first list
                          "--crd", os.path.join(
                              REPO, "crds/hpc.slurmoperator.dev_clusterslurmclusters.yaml"),
                          "--crd", os.path.join(
                              REPO, "crds/hpc.slurmoperator.dev_slurmcronjobs.yaml")],
                         work + "/kube_apiserver.log")
        # --clusters K > 1: K simulated clusters c0..c{K-1} in the project beside demo-cluster
        # (which the floor and the capacity measures use).
        self.clusters = clusters
        extra = []
        if clusters > 1:
            extra = ["--cluster", "demo-project/us-central1/demo-cluster"]
            for c in range(clusters):
                extra += ["--cluster", "demo-project/us-central1/c%d" % c]
        self.ap = Proc([PY] + PY_PREFIX + [os.path.join(REPO, "tests/fakes/agent_platform.py"), "--port", "0",
                        "--port-file", work + "/ap.port"] + extra, work + "/agent_platform.log")
        self.kube_port = int(wait_file(work + "/kube.port"))
        self.ap_port = int(wait_file(work + "/ap.port"))
        wait_file(work + "/kubeconfig")
        self.k = Http(self.kube_port, {"Authorization": "Bearer " + self.kube_token,
                                       "Accept": "application/json",
                                       "User-Agent": "slurmop-load-bench"})
        self.a = Http(self.ap_port)
        self.ap_token = None

    def stop(self):
        self.kube.stop()
        self.ap.stop()

    # kube ------------------------------------------------------------------------------
    def kadmin(self, method, name, body=None):
        return self.k.json(method, "/__admin/" + name, body if body is not None else (
            {} if method == "POST" else None), expect=(200,))[1]

    def setup_cluster(self):
        # The operator's own namespace, as deploy/ creates it: its submit-note key Secret (on by
        # default, created at its first start) goes there.
        for ns in (NS, "bench-floor", "bench-cap", PROBE_NS, "slurmjob-operator-system"):
            self.k.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": ns}},
                        expect=(201, 409))
        for ns in (NS, "bench-floor", "bench-cap", PROBE_NS):
            self.k.json("POST", "%s/namespaces/%s/slurmclusters" % (GROUP, ns), {
                "apiVersion": "hpc.slurmoperator.dev/v1alpha1", "kind": "SlurmCluster",
                "metadata": {"name": CLUSTER, "namespace": ns},
                "spec": {"projectId": "demo-project", "region": "us-central1",
                         "clusterId": "demo-cluster", "slurmApiVersion": "v0.0.42",
                         "defaultPartition": "debug",
                         "endpoint": "http://127.0.0.1:%d" % self.ap_port}}, expect=(201,))
        if self.clusters > 1:
            for c in range(self.clusters):
                self.k.json("POST", "%s/namespaces/%s/slurmclusters" % (GROUP, NS), {
                    "apiVersion": "hpc.slurmoperator.dev/v1alpha1", "kind": "SlurmCluster",
                    "metadata": {"name": "c%d" % c, "namespace": NS},
                    "spec": {"projectId": "demo-project", "region": "us-central1",
                             "clusterId": "c%d" % c, "slurmApiVersion": "v0.0.42",
                             "defaultPartition": "debug",
                             "endpoint": "http://127.0.0.1:%d" % self.ap_port}}, expect=(201,))

    def set_project_budget(self, per_minute):
        """The installer's ClusterSlurmCluster in the project, whose spec.callBudget is the
        budget of the whole project and region (#16 item 3)."""
        self.k.json("POST", "%s/clusterslurmclusters" % GROUP, {
            "apiVersion": "hpc.slurmoperator.dev/v1alpha1", "kind": "ClusterSlurmCluster",
            "metadata": {"name": "bench-budget"},
            "spec": {"projectId": "demo-project", "region": "us-central1",
                     "clusterId": "demo-cluster", "slurmApiVersion": "v0.0.42",
                     "endpoint": "http://127.0.0.1:%d" % self.ap_port,
                     "namespaceSelector": {}, "callBudget": {"requestsPerMinute": per_minute}}},
                    expect=(201,))

    # agent platform --------------------------------------------------------------------
    def aadmin(self, method, name, body=None):
        return self.a.json(method, "/__admin/" + name, body if body is not None else (
            {} if method == "POST" else None), expect=(200,))[1]

    def token(self):
        if self.ap_token is None:
            st, raw = self.a.request(
                "GET", "/computeMetadata/v1/instance/service-accounts/default/token",
                headers={"Metadata-Flavor": "Google"})
            self.ap_token = json.loads(raw)["access_token"]
        return self.ap_token

    def slurm(self, method, path, body=None):
        env = {"method": "HTTP_METHOD_" + method, "path": path}
        if body is not None:
            env["body"] = body
        st, raw = self.a.request(
            "POST", "/v1beta1/projects/demo-project/locations/us-central1/"
                    "modelDevelopmentClusters/demo-cluster:callSlurmRestApi", env,
            headers={"Authorization": "Bearer " + self.token()})
        if st != 200:
            raise RuntimeError("callSlurmRestApi -> %d %s" % (st, raw[:300]))
        return json.loads(raw)


def job_manifest(ns, name, run_seconds, cluster=CLUSTER):
    return {"apiVersion": "hpc.slurmoperator.dev/v1alpha1", "kind": "SlurmJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"clusterRef": {"name": cluster}, "timeLimitMinutes": 60,
                     "script": "#!/bin/bash\nsleep %g\n" % run_seconds}}


def submit_body(name, comment):
    return {"script": "#!/bin/bash\nexit 0\n",
            "job": {"name": name, "partition": "debug", "current_working_directory": "/tmp",
                    "environment": ["PATH=/bin:/usr/bin"], "comment": comment}}


def parallel(items, fn, threads):
    """Runs fn(item) over items with `threads` threads; returns (seconds, errors)."""
    it = iter(items)
    lock = threading.Lock()
    errors = []

    def work():
        while True:
            with lock:
                try:
                    x = next(it)
                except StopIteration:
                    return
            try:
                fn(x)
            except Exception as e:  # noqa: BLE001 -- counted and reported
                with lock:
                    errors.append(repr(e))

    t0 = time.time()
    ts = [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.time() - t0, errors


# ----------------------------------------------------------------------------------- floor

FLOOR_KEY = "floor (issue: delivery + submit + status write)"


class FloorProbe:
    """The ideal client of the floor, one sample at a time: create, watch delivery of ADDED, the
    finalizer patch, one submit through callSlurmRestApi, one status write, watch delivery of that
    write, on SlurmJobs of its own namespace (which the operator must not watch while it runs:
    --paired-floor starts it with --namespace=bench). stop() deletes what it created."""

    def __init__(self, env, ns="bench-floor"):
        self.env, self.ns = env, ns
        self.seen = {}
        self.cond = threading.Condition()
        self.names = []
        st, lst = env.k.json("GET", "%s/namespaces/%s/slurmjobs" % (GROUP, ns), expect=(200,))
        self.w = WatchStream(env.kube_port, env.kube_token, "%s/namespaces/%s/slurmjobs" % (GROUP, ns),
                             lst["metadata"]["resourceVersion"], self.on_event)
        self.w.start()
        self.w.connected.wait(10)
        time.sleep(0.2)

    def on_event(self, etype, obj, t):
        md = obj.get("metadata") or {}
        with self.cond:
            self.seen.setdefault((md.get("name"), etype, bool((obj.get("status") or {}).get(
                "jobId"))), t)
            self.cond.notify_all()

    def wait_for(self, key):
        with self.cond:
            while key not in self.seen:
                if not self.cond.wait(10):
                    raise RuntimeError("floor: no watch event %s" % (key,))
            return self.seen[key]

    def sample(self, name):
        """One pass of the ideal client's path; the seconds of each step and the floor's sum."""
        env, ns = self.env, self.ns
        self.names.append(name)
        t0 = time.time()
        env.k.json("POST", "%s/namespaces/%s/slurmjobs" % (GROUP, ns),
                   job_manifest(ns, name, 0), expect=(201,))
        t1 = self.wait_for((name, "ADDED", False))
        _, obj = env.k.json("PATCH", "%s/namespaces/%s/slurmjobs/%s" % (GROUP, ns, name),
                            {"metadata": {"finalizers": ["hpc.slurmoperator.dev/slurm-job"]}},
                            ctype="application/merge-patch+json", expect=(200,))
        t2 = time.time()
        r = env.slurm("POST", "/slurm/v0.0.42/job/submit", submit_body(name, "floor:%s" % name))
        job_id = r["structuredBody"]["job_id"]
        t3 = time.time()
        obj["status"] = {"jobId": job_id, "jobState": "PENDING", "phase": "Pending"}
        env.k.json("PUT", "%s/namespaces/%s/slurmjobs/%s/status" % (GROUP, ns, name), obj,
                   expect=(200,))
        t4 = time.time()
        t5 = self.wait_for((name, "MODIFIED", True))
        row = {"create+watch delivery": t1 - t0, "finalizer patch": t2 - t1,
               "submit (callSlurmRestApi)": t3 - t2, "status write": t4 - t3,
               "watch delivery of the write": t5 - t4, "whole path, serial": t5 - t0}
        row[FLOOR_KEY] = row["create+watch delivery"] + row["submit (callSlurmRestApi)"] + row[
            "status write"]
        return row

    def stop(self):
        """Removes the finalizers and deletes, so that no operator ever acts on these."""
        self.w.stop = True
        for name in self.names:
            self.env.k.json("PATCH", "%s/namespaces/%s/slurmjobs/%s" % (GROUP, self.ns, name),
                            {"metadata": {"finalizers": None}}, ctype="application/merge-patch+json")
            self.env.k.json("DELETE", "%s/namespaces/%s/slurmjobs/%s" % (GROUP, self.ns, name))


def measure_floor(env, samples):
    """The stand-ins' own round trips along the create -> status.jobId path, done serially by an
    ideal client with no work of its own (FloorProbe), `samples` times; the median of each step,
    and the floor the issue counts (delivery + submit + status write, each step's median)."""
    probe = FloorProbe(env)
    rows = collections.defaultdict(list)
    for i in range(samples):
        for k, v in probe.sample("floor-%d" % i).items():
            rows[k].append(v)
    probe.stop()
    med = {k: statistics.median(v) for k, v in rows.items() if k != FLOOR_KEY}
    med[FLOOR_KEY] = (
        med["create+watch delivery"] + med["submit (callSlurmRestApi)"] + med["status write"])
    return med


# ----------------------------------------------------------------------------------- capacity

def measure_capacity(env, count, threads):
    """What the stand-ins sustain alone, with `threads` concurrent keep-alive clients (the
    operator's default worker count): creates/s, status writes/s, deletes/s and watch events
    delivered/s on the kube stand-in; submits/s, GET job/s and the batched list on the Agent
    Platform stand-in. Returns a dict of rates plus the stand-ins' CPU seconds per request."""
    out = {}
    ns = "bench-cap"
    names = ["cap-%d" % i for i in range(count)]
    delivered = []
    lock = threading.Lock()

    def on_event(etype, obj, t):
        with lock:
            delivered.append(t)

    _, lst = env.k.json("GET", "%s/namespaces/%s/slurmjobs" % (GROUP, ns), expect=(200,))
    w = WatchStream(env.kube_port, env.kube_token, "%s/namespaces/%s/slurmjobs" % (GROUP, ns),
                    lst["metadata"]["resourceVersion"], on_event)
    w.start()
    w.connected.wait(10)
    objs = {}

    def create(n):
        _, o = env.k.json("POST", "%s/namespaces/%s/slurmjobs" % (GROUP, ns),
                          job_manifest(ns, n, 0), expect=(201,))
        objs[n] = o

    c0 = proc_cpu(env.kube.pid)
    t0 = time.time()
    secs, errs = parallel(names, create, threads)
    c1 = proc_cpu(env.kube.pid)
    out["kube creates/s"] = count / secs
    out["kube CPU ms per create"] = (c1 - c0) * 1000 / count
    deadline = time.time() + 60
    while len(delivered) < count and time.time() < deadline:
        time.sleep(0.01)
    with lock:
        if delivered:
            out["kube watch events/s (during creates)"] = len(delivered) / max(
                1e-6, max(delivered) - t0)
            out["kube watch lag at end of creates, s"] = max(0.0, max(delivered) - (t0 + secs))

    def status_write(n):
        o = objs[n]
        o["status"] = {"jobId": 1, "jobState": "PENDING", "phase": "Pending"}
        env.k.json("PUT", "%s/namespaces/%s/slurmjobs/%s/status" % (GROUP, ns, n), o,
                   expect=(200,))

    c0 = proc_cpu(env.kube.pid)
    secs, errs2 = parallel(names, status_write, threads)
    c1 = proc_cpu(env.kube.pid)
    out["kube status writes/s"] = count / secs
    out["kube CPU ms per status write"] = (c1 - c0) * 1000 / count
    c0 = proc_cpu(env.kube.pid)
    secs, errs3 = parallel(
        names, lambda n: env.k.json("DELETE", "%s/namespaces/%s/slurmjobs/%s" % (GROUP, ns, n),
                                    expect=(200,)), threads)
    c1 = proc_cpu(env.kube.pid)
    out["kube deletes/s"] = count / secs
    out["kube CPU ms per delete"] = (c1 - c0) * 1000 / count
    w.stop = True

    # Agent Platform: submits, GETs of one job, the batched list
    env.token()
    ap_count = max(50, count // 2)
    ids = []
    idl = threading.Lock()

    def submit(i):
        r = env.slurm("POST", "/slurm/v0.0.42/job/submit",
                      dict(submit_body("cap-%d" % i, "cap:%d" % i),
                           script="#!/bin/bash\nsleep 3600\n"))
        with idl:
            ids.append(r["structuredBody"]["job_id"])

    c0 = proc_cpu(env.ap.pid)
    secs, errs4 = parallel(range(ap_count), submit, threads)
    c1 = proc_cpu(env.ap.pid)
    out["AP submits/s"] = ap_count / secs
    out["AP CPU ms per submit"] = (c1 - c0) * 1000 / ap_count
    c0 = proc_cpu(env.ap.pid)
    secs, errs5 = parallel(ids, lambda j: env.slurm("GET", "/slurm/v0.0.42/job/%d" % j), threads)
    c1 = proc_cpu(env.ap.pid)
    out["AP GET job/s (%d live jobs)" % len(ids)] = len(ids) / secs
    out["AP CPU ms per GET job"] = (c1 - c0) * 1000 / len(ids)
    c0 = proc_cpu(env.ap.pid)
    t0 = time.time()
    reps = 3
    for _ in range(reps):
        r = env.slurm("GET", "/slurm/v0.0.42/jobs/")
    secs = (time.time() - t0) / reps
    c1 = proc_cpu(env.ap.pid)
    listed = len((r.get("structuredBody") or {}).get("jobs") or [])
    out["AP GET jobs/ (list of %d): ms" % listed] = secs * 1000
    out["AP list ms per listed job"] = secs * 1000 / max(1, listed)
    out["AP CPU ms per list"] = (c1 - c0) * 1000 / reps
    # A Python stand-in runs on one core at most (the GIL): its ceiling for a kind of request is
    # one core divided by the CPU it spends per request (the rates above are limited by this
    # harness's own Python client as well).
    for label, key in (("kube creates/s", "kube CPU ms per create"),
                       ("kube status writes/s", "kube CPU ms per status write"),
                       ("kube deletes/s", "kube CPU ms per delete"),
                       ("AP submits/s", "AP CPU ms per submit"),
                       ("AP GET job/s", "AP CPU ms per GET job")):
        if out.get(key):
            out["ceiling (1 core) " + label] = 1000.0 / out[key]
    out["errors"] = len(errs) + len(errs2) + len(errs3) + len(errs4) + len(errs5)
    env.aadmin("POST", "reset")
    return out


# ----------------------------------------------------------------------------------- the run

class Tracker:
    """What the harness's own watch saw of each SlurmJob."""

    def __init__(self):
        self.lock = threading.Condition()
        self.jobs = {}  # name -> dict
        self.events = 0

    def on_event(self, etype, obj, t):
        md = obj.get("metadata") or {}
        name = md.get("name")
        st = obj.get("status") or {}
        with self.lock:
            self.events += 1
            j = self.jobs.setdefault(name, {})
            j.setdefault("t_added", t)
            if st.get("jobId") and "t_jobid" not in j:
                j["t_jobid"] = t
                j["job_id"] = st["jobId"]
            state = st.get("jobState")
            if state and state != j.get("state"):
                j["state"] = state
                if state in TERMINAL and "t_terminal" not in j:
                    j["t_terminal"] = t
            if md.get("finalizers") and "t_finalizer" not in j:
                j["t_finalizer"] = t
            if etype == "DELETED":
                j["t_deleted"] = t
            self.lock.notify_all()

    def count(self, key, names):
        with self.lock:
            return sum(1 for n in names if key in self.jobs.get(n, {}))

    def wait(self, key, names, timeout, what, progress=None, stall=False, cut_at=0):
        """Until every name has `key`. Gives up `timeout` s after the start or, with `stall`,
        after the last name that got it (a long run that keeps progressing is not cut by a
        timeout meant for one that stopped); never later than `cut_at` (absolute, 0: none)."""
        start = time.time()
        last, last_done, last_change = 0, -1, start
        while True:
            done = self.count(key, names)
            if done >= len(names):
                return True
            now = time.time()
            if done != last_done:
                last_done, last_change = done, now
            limit = (last_change if stall else start) + timeout
            if cut_at:
                limit = min(limit, cut_at)
            if now > limit:
                log("timed out waiting for %s: %d/%d" % (what, done, len(names)))
                return False
            if progress and time.time() - last > 10:
                last = time.time()
                log("%s: %d/%d" % (what, done, len(names)))
            with self.lock:
                self.lock.wait(0.5)


def end_run(samp, ops, env, res):
    """Stops the sampler, the operators and the stand-ins; the harness's CPU and load at the end."""
    if samp:
        samp.stop = True
    for o in ops:
        o.stop()
    env.stop()
    res["harness_cpu_s"] = proc_cpu(os.getpid())
    res["loadavg_end"] = float(open("/proc/loadavg").read().split()[0])


def measure_standins(env, args, res):
    """Phases 2-3: the floor and the stand-ins alone; then the project's quota (from here on the
    Agent Platform stand-in enforces it, a sliding minute) and budget, if asked. With
    --kube-write-latency-ms every write to the stand-in API server (the harness's, the floor's and
    the operator's) waits that long before it is handled, without holding the stand-in's CPU: a
    real API server's wait for etcd, which the stand-in (one Python process, no storage) lacks."""
    if args.kube_write_latency_ms > 0:
        env.kadmin("POST", "latency", {"method": "^(POST|PUT|PATCH|DELETE)$", "path": "^/api",
                                       "delay_ms": args.kube_write_latency_ms})
        res["kube_write_latency_ms"] = args.kube_write_latency_ms
    res["floor"] = measure_floor(env, args.floor_samples)
    log("floor: %s" % {k: round(v * 1000, 2) for k, v in res["floor"].items()})
    res["capacity"] = measure_capacity(env, args.capacity_count, args.workers)
    log("capacity: %s" % {k: round(v, 2) for k, v in res["capacity"].items()})
    if args.quota_per_minute > 0:
        env.aadmin("POST", "quota", {"per_minute": args.quota_per_minute,
                                     "window_seconds": 60, "retry_delay": 10})
    if args.cluster_budget > 0:
        env.set_project_budget(args.cluster_budget)


# The allocator deploy/Dockerfile runs the operator on (keep the two in step).
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
JEMALLOC_CONF = "narenas:1,tcache:false,dirty_decay_ms:1000,muzzy_decay_ms:0,background_thread:true"


def allocator_env(allocator):
    """The operator's environment for --allocator: jemalloc as deployed, or glibc's malloc."""
    if allocator == "glibc":
        return {}
    if not os.path.exists(JEMALLOC):
        raise SystemExit("--allocator=jemalloc needs %s (Debian's libjemalloc2, which "
                         "scripts/install-deps.sh installs); or pass --allocator=glibc" % JEMALLOC)
    # SLURMOP_BENCH_MALLOC_CONF_EXTRA adds to the deployed settings, e.g. a heap profile:
    # "prof:true,prof_gdump:true,prof_prefix:/tmp/jeprof/op" (bench/README.md).
    extra = os.environ.get("SLURMOP_BENCH_MALLOC_CONF_EXTRA")
    conf = JEMALLOC_CONF + ("," + extra if extra else "")
    return {"LD_PRELOAD": JEMALLOC, "MALLOC_CONF": conf}


def isolated_phase(env, tracker, count, res, paired_floor=False):
    """Phase 4b: `count` SlurmJobs one at a time; their create -> jobId into res, and
    the operator's requests on SlurmJobs per isolated job (its writes, and the re-reads
    a conflict costs) from the stand-in's counters. With paired_floor, one floor sample
    (FloorProbe) right before each isolated job: the floor in the same seconds, with the
    operator running, rather than minutes earlier without it."""
    before = env.kadmin("GET", "counters").get("byVerbResource")
    probe = FloorProbe(env) if paired_floor else None
    floors = []
    iso = measure_isolated(env, tracker, count, 5.0, probe, floors)
    if probe:
        sums = [row[FLOOR_KEY] for row in floors]
        res["isolated_paired_floor"] = {"p50": pct(sums, 50), "n": len(sums)}
        res["isolated_paired_floor_steps_ms"] = {
            k: round(statistics.median(row[k] for row in floors) * 1000, 3) for k in floors[0]}
        res["isolated_paired_floor_each_ms"] = [round(v * 1000, 2) for v in sums]
    res["isolated_to_jobid"] = {"p50": pct(iso, 50), "p99": pct(iso, 99),
                                "max": max(iso) if iso else None, "n": len(iso)}
    res["isolated_each_ms"] = [round(v * 1000, 2) for v in iso]  # in creation order
    log("isolated create -> jobId: %s" % {k: (round(v * 1000, 1) if k != "n" else v)
                                          for k, v in res["isolated_to_jobid"].items()
                                          if v is not None})
    time.sleep(1.0)  # also: the stand-in counts a request after its reply and watch event
    counted = diff(before, env.kadmin("GET", "counters").get("byVerbResource"))
    if probe:
        probe.stop()  # after the count; the probe's own patch and status write are taken off
        for verb_resource in ("patch slurmjobs.hpc.slurmoperator.dev",
                              "update slurmjobs.hpc.slurmoperator.dev/status"):
            if verb_resource in counted:
                counted[verb_resource] -= len(floors)
    res["isolated_kube_per_job"] = isolated_requests_per_job(counted, count)


def isolated_requests_per_job(by_verb_resource, count):
    """The operator's get / patch / update of SlurmJobs per isolated job. The harness's
    own requests in that phase are creates, deletes and its watch, none of these verbs."""
    sj = "slurmjobs.hpc.slurmoperator.dev"
    keep = ("get " + sj, "patch " + sj, "patch " + sj + "/status", "update " + sj,
            "update " + sj + "/status")
    return {k: round(by_verb_resource.get(k, 0) / count, 3) for k in keep} if count else {}


# Extra wait before each isolated SlurmJob after the first, uniform in [0, this) s
# (--isolated-gap-jitter-ms; 0: every gap is 0.1 s). With fixed gaps the SlurmJobs are
# created in step with the tracker's 1 s tick: every ~9th one lands in the tick's status
# writes, and a change of a few ms in the path moves which ones do.
ISOLATED_GAP_JITTER_S = 0.0

# --isolated-quiet: each isolated SlurmJob is deleted, and gone, a second before the next is
# created; otherwise the earlier ones (each runs 5 s) are still tracked, and their status
# writes meet the new one's in the stand-in.
ISOLATED_QUIET = False


def measure_isolated(env, tracker, count, run_seconds, probe=None, floors=None):
    """create -> status.jobId for SlurmJobs created one at a time (each waits for the
    previous one's jobId): the operator's own path with nothing queued before it, the
    figure to hold against the floor. The jobs are deleted again afterwards. With a
    FloorProbe, a floor sample precedes each job (its floor sum appended to `floors`)."""
    lat, names = [], []
    gaps = random.Random(1)  # the same gaps in every run
    for i in range(count):
        if probe is not None:
            floors.append(probe.sample("pf-%03d" % i))
            time.sleep(0.02)  # the probe's own watch event settles
        name = "iso-%03d" % i
        t0 = time.time()
        env.k.json("POST", "%s/namespaces/%s/slurmjobs" % (GROUP, NS),
                   job_manifest(NS, name, run_seconds), expect=(201,))
        names.append(name)
        if not tracker.wait("t_jobid", [name], 30, "isolated jobId"):
            break
        with tracker.lock:
            lat.append(tracker.jobs[name]["t_jobid"] - t0)
        if ISOLATED_QUIET:
            # Nothing of this job's left when the next one is created: deleted, its Slurm
            # job cancelled, its finalizer off, and a second for the follow-ups to settle.
            env.k.json("DELETE", "%s/namespaces/%s/slurmjobs/%s" % (GROUP, NS, name),
                       expect=(200, 202))
            tracker.wait("t_deleted", [name], 30, "isolated delete")
            time.sleep(1.0)
            continue
        # the operator's follow-up of its own writes settles
        time.sleep(0.1 + gaps.uniform(0, ISOLATED_GAP_JITTER_S))
    for name in names:
        if not ISOLATED_QUIET:
            env.k.json("DELETE", "%s/namespaces/%s/slurmjobs/%s" % (GROUP, NS, name),
                       expect=(200, 202))
    tracker.wait("t_deleted", names, 60, "isolated deletes")
    return lat


PROBE_NS = "bench-probe"


class Probes(threading.Thread):
    """SlurmJobs created one at a time in their own namespace (so the N-job figures leave
    them out), each waiting for its status.jobId, until stopped or `count` are done: whether
    a new SlurmJob waits behind the operator's other work (a restart's backlog, the status
    writes of N jobs that end). Their requests do fall in the stand-ins' counters."""

    def __init__(self, env, count=0, gap=0.05):
        super().__init__(daemon=True)
        self.env, self.count, self.gap = env, count, gap
        self.stop = False
        self.lat_ms = []

    def run(self):
        env, probes = self.env, Tracker()
        path = "%s/namespaces/%s/slurmjobs" % (GROUP, PROBE_NS)
        _, lst = env.k.json("GET", path, expect=(200,))
        w = WatchStream(env.kube_port, env.kube_token, path,
                        lst["metadata"]["resourceVersion"], probes.on_event)
        w.start()
        w.connected.wait(10)
        names = []
        while not self.stop and (self.count <= 0 or len(names) < self.count):
            name = "probe-%04d" % len(names)
            t0 = time.time()
            env.k.json("POST", path, job_manifest(PROBE_NS, name, 1.0), expect=(201,))
            names.append(name)
            if not probes.wait("t_jobid", [name], 60, "probe jobId"):
                break
            with probes.lock:
                self.lat_ms.append(round((probes.jobs[name]["t_jobid"] - t0) * 1000, 1))
            time.sleep(self.gap)
        for name in names:
            env.k.json("DELETE", "%s/%s" % (path, name), expect=(200, 202))
        probes.wait("t_deleted", names, 60, "probe deletes")
        w.stop = True


def probe_summary(lat_ms):
    return {"n": len(lat_ms), "p50": pct(lat_ms, 50), "p99": pct(lat_ms, 99),
            "max": max(lat_ms) if lat_ms else None}


class Sampler(threading.Thread):
    """Every `interval` s: the processes' CPU and RSS, and the Agent Platform call counters."""

    def __init__(self, env, interval=0.5):
        super().__init__(daemon=True)
        self.env, self.interval = env, interval
        self.pids = {}
        self.samples = []
        self.stop = False
        self.lock = threading.Lock()
        self.by_cluster = False

    def run(self):
        while not self.stop:
            t = time.time()
            row = {"t": t, "cpu": {}, "rss": {}}
            with self.lock:
                pids = dict(self.pids)
            for k, pid in pids.items():
                row["cpu"][k] = proc_cpu(pid)
                row["rss"][k] = proc_mem(pid)[0]
            try:
                calls = self.env.aadmin("GET", "calls")
                row["calls"] = calls.get("by_call", {})
                if self.by_cluster:
                    row["by_cluster"] = calls.get("by_cluster", {})
            except Exception:  # noqa: BLE001
                row["calls"] = None
            self.samples.append(row)
            time.sleep(max(0.0, self.interval - (time.time() - t)))


def rss_max_sample(samples, first_create, last_jobid, first_end):
    """The operator's largest sampled RSS so far, when it was (s after the first create) and
    in which phase: while submitting (to the last jobId), tracking, or ending (from the
    first Slurm end). VmHWM gives the peak's size but not its moment."""
    rows = [s for s in samples if s["rss"].get("op")]
    if not rows:
        return None
    top = max(rows, key=lambda s: s["rss"]["op"])
    phase = ("submitting" if top["t"] <= last_jobid else
             "tracking" if top["t"] < first_end else "ending")
    return {"rss": top["rss"]["op"], "t": top["t"] - first_create, "phase": phase}


def slurm_calls(by_call):
    """callSlurmRestApi calls only (metadata-server and token-endpoint calls left out)."""
    out = {}
    for k, v in (by_call or {}).items():
        parts = k.split(" ", 1)
        if k == "callSlurmRestApi" or (len(parts) == 2 and parts[1].startswith("/slurm")):
            out[k] = v
    return out


def peak_per_minute(samples):
    """The most callSlurmRestApi calls in any 60 s between two samples (the quota's window)."""
    pts = [(x["t"], sum(slurm_calls(x["calls"]).values())) for x in samples
           if x.get("calls") is not None]
    best, j = 0, 0
    for i in range(len(pts)):
        while pts[i][0] - pts[j][0] > 60.0:
            j += 1
        best = max(best, pts[i][1] - pts[j][1])
    return best


def rss_slope(samples):
    """Least-squares slope of the operator's RSS over `samples`, in bytes per minute."""
    pts = [(s["t"], s["rss"].get("op")) for s in samples if s["rss"].get("op")]
    if len(pts) < 2:
        return None
    mt = sum(t for t, _ in pts) / len(pts)
    mr = sum(r for _, r in pts) / len(pts)
    den = sum((t - mt) ** 2 for t, _ in pts)
    if den <= 0:
        return None
    return 60.0 * sum((t - mt) * (r - mr) for t, r in pts) / den


def diff(a, b):
    keys = set(a or {}) | set(b or {})
    return {k: (b or {}).get(k, 0) - (a or {}).get(k, 0) for k in keys
            if (b or {}).get(k, 0) - (a or {}).get(k, 0)}


def start_operator(args, env, work, tag):
    hp = "%s/health-%s.port" % (work, tag)
    if os.path.exists(hp):
        os.remove(hp)
    argv = [args.operator, "--kubeconfig=" + work + "/kubeconfig", "--health-port=0",
            "--health-port-file=" + hp,
            # 0 (the default here) = no client-side budget (quota_budget.h: <= 0 is off)
            "--agent-platform-requests-per-minute=%g" % args.budget,
            # The stand-in is on loopback, which is allowed only when listed.
            "--allowed-endpoint-hosts=127.0.0.1:%d" % env.ap_port,
            "--workers=%d" % args.workers,
            # the stand-in SlurmCluster has no credentialsSecretRef: lend the operator's ADC
            "--allow-operator-identity-for-namespaced-clusters"] + args.operator_arg
    if getattr(args, "paired_floor", False):
        argv.append("--namespace=" + NS)  # the paired floor's SlurmJobs are not the operator's
    penv = {"GCE_METADATA_HOST": "127.0.0.1:%d" % env.ap_port,
            "GOOGLE_APPLICATION_CREDENTIALS": "", "HOME": work}
    penv.update(allocator_env(args.allocator))
    penv.update(kv.split("=", 1) for kv in args.operator_env)
    p = Proc(argv, "%s/operator-%s.log" % (work, tag), penv)
    port = int(wait_file(hp, 60))
    deadline = time.time() + 600
    while time.time() < deadline:
        if grpc_health.check(port, "readiness", timeout=5) == grpc_health.SERVING:
            return p, port, time.time() - p.started
        if p.p.poll() is not None:
            raise RuntimeError("operator exited %s; see %s" % (p.p.returncode, p.logpath))
        time.sleep(0.01)
    raise RuntimeError("operator not ready after 600 s")


def run_once(args, n):
    work = tempfile.mkdtemp(prefix="slurmop-load-%d-" % n)
    log("N=%d: work dir %s; operator allocator %s" % (n, work, args.allocator))
    res = {"N": n, "work": work}
    env = Env(work, history=max(10000, min(n * 20, args.max_history)), clusters=args.clusters)
    samp = None
    ops = []
    try:
        env.setup_cluster()
        env.token()
        measure_standins(env, args, res)
        res["clusters"] = args.clusters
        res["quota_per_minute"] = args.quota_per_minute
        res["budget"] = args.cluster_budget or args.budget
        tracker = Tracker()
        _, lst = env.k.json("GET", "%s/namespaces/%s/slurmjobs" % (GROUP, NS), expect=(200,))
        watch = WatchStream(env.kube_port, env.kube_token,
                            "%s/namespaces/%s/slurmjobs" % (GROUP, NS),
                            lst["metadata"]["resourceVersion"], tracker.on_event)
        watch.start()
        watch.connected.wait(10)
        env.kadmin("POST", "counters/reset")
        env.aadmin("POST", "calls")
        watch_requests0 = watch.requests

        res["loadavg_start"] = float(open("/proc/loadavg").read().split()[0])
        samp = Sampler(env)
        samp.pids = {"kube": env.kube.pid, "ap": env.ap.pid, "harness": os.getpid()}
        samp.start()
        op, hport, ready_s = start_operator(args, env, work, "1")
        ops.append(op)
        with samp.lock:
            samp.pids["op"] = op.pid
        res["ready_first_s"] = ready_s
        time.sleep(2.0)
        rss_idle, _ = proc_mem(op.pid)
        res["rss_idle"] = rss_idle
        if args.isolated > 0:
            isolated_phase(env, tracker, args.isolated, res, args.paired_floor)
            # The N-job figures below count from here.
            env.kadmin("POST", "counters/reset")
            env.aadmin("POST", "calls")
            watch_requests0 = watch.requests
            if args.isolated_only:
                watch.stop = True
                return res
        cpu_idle = proc_cpu(op.pid)

        run_seconds = args.run_seconds or max(20.0, min(300.0, n / 60.0 + 20))
        res["run_seconds"] = run_seconds
        names = ["job-%05d" % i for i in range(n)]
        t_create = {}

        def create(name):
            t0 = time.time()
            cluster = CLUSTER if args.clusters <= 1 else "c%d" % (int(name[4:]) % args.clusters)
            env.k.json("POST", "%s/namespaces/%s/slurmjobs" % (GROUP, NS),
                       job_manifest(NS, name, run_seconds, cluster), expect=(201,))
            t_create[name] = t0

        log("creating %d SlurmJobs (%d threads), each runs %g s" % (n, args.create_threads,
                                                                   run_seconds))
        t_burst = time.time()
        create_secs, errs = parallel(names, create, args.create_threads)
        res["create_seconds"] = create_secs
        res["create_errors"] = len(errs)
        log("created in %.1f s (%.0f/s), %d errors" % (create_secs, n / create_secs, len(errs)))
        ok_jobid = tracker.wait("t_jobid", names, args.timeout, "jobId", progress=True,
                                stall=True)
        t_all_submitted = time.time()
        # The steady window: every job submitted, none finished yet.
        mark_all_submitted = len(samp.samples)
        ending_probes = None
        if args.probes_while_ending:
            # From just before the first of the N jobs ends until the last one has.
            time.sleep(max(0.0, run_seconds - (time.time() - t_burst) - 2.0))
            ending_probes = Probes(env)
            ending_probes.start()
        ok_term = tracker.wait("t_terminal", names, args.timeout + run_seconds, "terminal",
                               progress=True, stall=True)
        t_all_terminal = time.time()
        if ending_probes:
            ending_probes.stop = True
            ending_probes.join(120)
            res["ending_probes"] = probe_summary(ending_probes.lat_ms)
            log("probes while the N jobs end, create -> jobId (ms): %s" % res["ending_probes"])
        time.sleep(1.0)
        res["ok"] = ok_jobid and ok_term and not errs
        with tracker.lock:
            jobs = {k: dict(v) for k, v in tracker.jobs.items() if k in t_create}
        lat_jobid = [jobs[k]["t_jobid"] - t_create[k] for k in names if "t_jobid" in jobs.get(k, {})]
        res["create_to_jobid"] = {"p50": pct(lat_jobid, 50), "p99": pct(lat_jobid, 99),
                                  "max": max(lat_jobid) if lat_jobid else None}
        first_create = min(t_create.values())
        last_jobid = max(j["t_jobid"] for j in jobs.values() if "t_jobid" in j)
        res["throughput_submits_per_s"] = len(lat_jobid) / max(1e-6, last_jobid - first_create)
        # Slurm's own end time of each job, from the simulator's table
        table = env.aadmin("GET", "jobs")
        ours = {j["job_id"] for j in jobs.values() if "job_id" in j}  # not the isolated ones
        end_by_id = {j["job_id"]: j["end_time"] for j in table["jobs"]
                     if j.get("end_time") and j["job_id"] in ours}
        res["slurm_submits"] = table["submit_counts"]["accepted"]
        res["duplicate_submits"] = len(table["submit_counts"].get("duplicates_by_comment") or {})
        lat_term = [jobs[k]["t_terminal"] - end_by_id[jobs[k]["job_id"]]
                    for k in names if "t_terminal" in jobs.get(k, {})
                    and jobs[k].get("job_id") in end_by_id]
        res["terminal_to_status"] = {"p50": pct(lat_term, 50), "p99": pct(lat_term, 99),
                                     "max": max(lat_term) if lat_term else None}
        states = collections.Counter(j.get("state") for j in jobs.values())
        res["final_states"] = dict(states)

        # Agent Platform calls while N were active: from the last jobId to the first end
        first_end = min(end_by_id.values()) if end_by_id else t_all_terminal
        win = [s for s in samp.samples if last_jobid + 0.5 <= s["t"] <= first_end - 0.5
               and s.get("calls") is not None]
        active_window = None
        if len(win) >= 2:
            a, b = win[0], win[-1]
            d = slurm_calls(diff(a["calls"], b["calls"]))
            secs = b["t"] - a["t"]
            lists = sum(v for k, v in d.items() if k.startswith("GET /slurm/") and
                        k.endswith("/jobs/"))
            active_window = {"seconds": secs, "calls": d, "calls_per_s": sum(d.values()) / secs,
                             "list_calls": lists,
                             "calls_per_tick": (sum(d.values()) / lists) if lists else None,
                             "rss": statistics.median(s["rss"].get("op") or 0 for s in win),
                             "rss_max": max(s["rss"].get("op") or 0 for s in win),
                             "rss_slope": rss_slope(win)}
        res["active_window"] = active_window
        res["rss_max_sample"] = rss_max_sample(samp.samples, first_create, last_jobid, first_end)
        # Peak load on each process while submitting (first create -> last jobId)
        before = [s for s in samp.samples if s["t"] <= first_create]
        after = [s for s in samp.samples if s["t"] >= last_jobid]
        if before and after:  # the samples just outside the window bracket it
            a, b = before[-1], after[0]
            res["burst_cpu_util"] = {k: ((b["cpu"].get(k) or 0) - (a["cpu"].get(k) or 0)) /
                                     (b["t"] - a["t"]) for k in b["cpu"]}
        answered = env.aadmin("GET", "calls")
        res["resource_exhausted"] = sum(v for kk, v in (answered.get("by_result") or {}).items()
                                        if kk.startswith("RESOURCE_EXHAUSTED"))
        res["peak_calls_per_minute"] = peak_per_minute(samp.samples)
        life_calls = slurm_calls(answered.get("by_call"))
        res["ap_calls_to_completion"] = life_calls
        rss, hwm = proc_mem(op.pid)
        res["rss_tracked_all_done"] = rss
        res["rss_peak_first"] = hwm
        cpu_first = proc_cpu(op.pid) - cpu_idle

        # Restart with N SlurmJobs present
        calls_before = env.aadmin("GET", "calls").get("by_call")
        kube_before = env.kadmin("GET", "counters")
        # The floor of a restart: one list of the N SlurmJobs, by this harness, operator stopped.
        log("restarting the operator with %d SlurmJobs present" % n)
        op.stop()
        t0 = time.time()
        env.k.json("GET", "%s/slurmjobs" % GROUP, expect=(200,))
        res["list_all_s"] = time.time() - t0
        kube_before = env.kadmin("GET", "counters")  # the new process's requests only
        t_stop = time.time()
        op2, hport2, ready2 = start_operator(args, env, work, "2")
        ops.append(op2)
        with samp.lock:
            samp.pids["op"] = op2.pid
        res["ready_after_restart_s"] = ready2
        if args.restart_probes > 0:
            pr = Probes(env, count=args.restart_probes, gap=0)
            pr.run()  # here, on this thread
            res["restart_probes_ms"] = pr.lat_ms
            log("restart probes, create -> jobId (ms): %s" % pr.lat_ms)
        time.sleep(5.0)
        res["restart_ap_calls_5s"] = slurm_calls(diff(calls_before,
                                                      env.aadmin("GET", "calls").get("by_call")))
        res["restart_kube_requests_5s"] = {k: v for k, v in diff(
            kube_before.get("byVerbResource"),
            env.kadmin("GET", "counters").get("byVerbResource")).items()}
        res["rss_after_restart"] = proc_mem(op2.pid)[0]

        # Delete them all
        cpu2_0 = proc_cpu(op2.pid)
        log("deleting %d SlurmJobs" % n)
        del_secs, derrs = parallel(
            names, lambda nm: env.k.json("DELETE", "%s/namespaces/%s/slurmjobs/%s" %
                                         (GROUP, NS, nm), expect=(200, 202)),
            args.create_threads)
        ok_del = tracker.wait("t_deleted", names, args.timeout, "deleted", progress=True)
        res["delete_seconds"] = del_secs
        res["ok"] = res["ok"] and ok_del and not derrs
        time.sleep(2.0)
        cpu_second = proc_cpu(op2.pid) - cpu2_0
        res["cpu_s_per_1000"] = (cpu_first + cpu_second) * 1000.0 / n
        res["cpu_s_first"] = cpu_first
        res["cpu_s_delete"] = cpu_second
        rss_end, hwm2 = proc_mem(op2.pid)
        res["rss_end"] = rss_end
        res["rss_peak_second"] = hwm2
        res["ap_calls_total"] = slurm_calls(env.aadmin("GET", "calls").get("by_call"))
        kc = env.kadmin("GET", "counters")
        by = dict(kc.get("byVerbResource") or {})
        # leave out the harness's own requests: N creates, N deletes, its watch(es)
        sj = "slurmjobs.hpc.slurmoperator.dev"
        by["create " + sj] = by.get("create " + sj, 0) - n
        by["delete " + sj] = by.get("delete " + sj, 0) - n
        by["watch " + sj] = by.get("watch " + sj, 0) - (watch.requests - watch_requests0)
        by["list " + sj] = by.get("list " + sj, 0) - 1  # the restart floor's list
        res["kube_requests"] = {k: v for k, v in by.items() if v}
        watch.stop = True
    finally:
        end_run(samp, ops, env, res)
    return res


# ----------------------------------------------------------------------------------- replicas

OP_NS = "bench-op"  # the replicas' Lease namespace (--operator-namespace)
SHARD_LABEL = "hpc.slurmoperator.dev/shard"


def fnv1a32(text):
    h = 0x811C9DC5
    for b in text.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def read_leases(env):
    """shard -> (holderIdentity, renewTime) of the shard Leases in OP_NS."""
    _, lst = env.k.json("GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % OP_NS,
                        expect=(200,))
    out = {}
    for it in (lst or {}).get("items") or []:
        name = it["metadata"]["name"]
        if "-shard-" not in name:
            continue
        spec = it.get("spec") or {}
        out[int(name.rsplit("-", 1)[1])] = (spec.get("holderIdentity") or "",
                                            spec.get("renewTime"))
    return out


class ShardTracker(Tracker):
    """Tracker that also keeps each SlurmJob's shard label and the instants of its status
    changes (jobId set, jobState changed), for the shard-move measure."""

    def __init__(self):
        super().__init__()
        self.progress = []  # (t, shard label, name, what)

    def on_event(self, etype, obj, t):
        md = obj.get("metadata") or {}
        name = md.get("name")
        st = obj.get("status") or {}
        shard = (md.get("labels") or {}).get(SHARD_LABEL)
        with self.lock:
            j = self.jobs.get(name) or {}
            had_id, had_state = "t_jobid" in j, j.get("state")
        super().on_event(etype, obj, t)
        with self.lock:
            j = self.jobs[name]
            if shard is not None:
                j["shard"] = shard
            if st.get("jobId") and not had_id:
                self.progress.append((t, shard, name, "jobId"))
            elif st.get("jobState") and st.get("jobState") != had_state:
                self.progress.append((t, shard, name, "state"))


def start_replicas(args, env, work, count, tag):
    """Starts `count` replicas (identities r0..), returns [(Proc, ready seconds)]."""
    base = list(args.operator_arg)
    extra = ["--shards=%d" % args.shards, "--leader-elect", "--operator-namespace=" + OP_NS]
    if args.lease_timings:
        d, r, p = args.lease_timings.split(",")
        extra += ["--leader-elect-lease-duration-seconds=" + d,
                  "--leader-elect-renew-deadline-seconds=" + r,
                  "--leader-elect-retry-period-seconds=" + p]
    out = [None] * count
    errs = []

    def one(i):
        a = argparse.Namespace(**vars(args))
        a.operator_arg = base + extra + ["--leader-elect-identity=r%d" % i]
        try:
            p, _, ready = start_operator(a, env, work, "%s-r%d" % (tag, i))
            out[i] = (p, ready)
        except Exception as e:  # noqa: BLE001
            errs.append(repr(e))

    ts = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(count)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise RuntimeError("replica start: %s" % errs)
    return out


def wait_shards_held(env, shards, live, timeout):
    """Waits until every shard's Lease is held by one of `live`; returns the seconds."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        le = read_leases(env)
        if all(le.get(k, ("", None))[0] in live for k in range(shards)):
            return time.time() - t0, le
        time.sleep(0.1)
    return None, read_leases(env)


def run_sharded(args, n):
    """N SlurmJobs over --clusters K and --replicas R replicas with --shards S: per-replica
    RSS, calls per cluster per tick, create -> jobId against the floor, and the time for the
    shards of a replica killed with SIGKILL (while jobs are being submitted) to move."""
    work = tempfile.mkdtemp(prefix="slurmop-load-%d-r%d-" % (n, args.replicas))
    log("N=%d, %d replicas, %d shards, %d clusters: work dir %s" % (
        n, args.replicas, args.shards, args.clusters, work))
    res = {"N": n, "work": work, "replicas": args.replicas, "shards": args.shards,
           "prelabel": args.prelabel,
           "clusters": args.clusters, "sharded": True, "lease_timings": args.lease_timings or
           "operator defaults (15,10,2)"}
    env = Env(work, history=max(10000, min(n * 20, args.max_history)), clusters=args.clusters)
    samp, ops = None, []
    try:
        env.setup_cluster()
        env.k.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": OP_NS}},
                   expect=(201, 409))
        env.token()
        measure_standins(env, args, res)
        tracker = ShardTracker()
        _, lst = env.k.json("GET", "%s/namespaces/%s/slurmjobs" % (GROUP, NS), expect=(200,))
        watch = WatchStream(env.kube_port, env.kube_token,
                            "%s/namespaces/%s/slurmjobs" % (GROUP, NS),
                            lst["metadata"]["resourceVersion"], tracker.on_event)
        watch.start()
        watch.connected.wait(10)
        res["loadavg_start"] = float(open("/proc/loadavg").read().split()[0])
        samp = Sampler(env)
        samp.by_cluster = True
        samp.pids = {"kube": env.kube.pid, "ap": env.ap.pid, "harness": os.getpid()}
        samp.start()
        t0 = time.time()
        started = start_replicas(args, env, work, args.replicas, "1")
        live = {"r%d" % i for i in range(args.replicas)}
        held_s, leases = wait_shards_held(env, args.shards, live, 120)
        res["ready_s"] = [r for _, r in started]
        res["all_shards_held_s"] = (time.time() - t0) if held_s is not None else None
        ops = [p for p, _ in started]
        with samp.lock:
            for i, p in enumerate(ops):
                samp.pids["r%d" % i] = p.pid
        log("replicas ready in %s s; shards held: %s" % (
            [round(x, 2) for x in res["ready_s"]], {k: v[0] for k, v in leases.items()}))
        time.sleep(3.0)
        res["rss_idle"] = {"r%d" % i: proc_mem(p.pid)[0] for i, p in enumerate(ops)}
        cluster_shard = {"c%d" % c: fnv1a32("%s/c%d" % (NS, c)) % args.shards
                         for c in range(args.clusters)}
        res["cluster_shard"] = cluster_shard
        if args.isolated > 0:
            isolated_phase(env, tracker, args.isolated, res)
        env.kadmin("POST", "counters/reset")
        env.aadmin("POST", "calls")
        cpu_idle = {k: proc_cpu(p.pid) for k, p in zip(sorted(res["rss_idle"]), ops)}

        run_seconds = args.run_seconds or max(60.0, min(1800.0, n / 60.0 + 60))
        res["run_seconds"] = run_seconds
        width = max(5, len(str(n - 1)))
        names = ["job-%0*d" % (width, i) for i in range(n)]
        t_create = {}

        def cluster_of(name):
            return "c%d" % (int(name[4:]) % args.clusters) if args.clusters > 1 else CLUSTER

        def create(name):
            t = time.time()
            m = job_manifest(NS, name, run_seconds, cluster_of(name))
            if args.prelabel:
                # the shard label the labeller would write (README: FNV-1a("ns/cluster") mod S)
                m["metadata"]["labels"] = {SHARD_LABEL: str(cluster_shard[cluster_of(name)])}
            env.k.json("POST", "%s/namespaces/%s/slurmjobs" % (GROUP, NS), m, expect=(201,))
            t_create[name] = t

        # The kill: once --kill-at of the N have a jobId, SIGKILL the replica holding the most
        # shards; a thread reads the shard Leases every 0.1 s until another replica holds each.
        kill = {}

        def killer():
            target = int(args.kill_at * n)
            while tracker.count("t_jobid", names) < target:
                with tracker.lock:
                    tracker.lock.wait(0.5)
            le = read_leases(env)
            held = collections.Counter(v[0] for v in le.values())
            victim = max(sorted(live), key=lambda r: held.get(r, 0))
            vi = int(victim[1:])
            shards_v = sorted(k for k, v in le.items() if v[0] == victim)
            kill["victim"], kill["shards"] = victim, shards_v
            kill["jobids_at_kill"] = tracker.count("t_jobid", names)
            kill["rss_victim_before"] = proc_mem(ops[vi].pid)
            log("SIGKILL %s (pid %d) holding shards %s, %d jobIds so far" % (
                victim, ops[vi].pid, shards_v, kill["jobids_at_kill"]))
            t_kill = time.time()
            ops[vi].p.send_signal(signal.SIGKILL)
            ops[vi].p.wait()
            kill["t_kill"] = t_kill
            others = live - {victim}
            moved = {}
            while len(moved) < len(shards_v) and time.time() - t_kill < 600:
                le = read_leases(env)
                t = time.time()
                for k in shards_v:
                    if k not in moved and le.get(k, ("", None))[0] in others:
                        moved[k] = (t - t_kill, le[k][0])
                time.sleep(0.1)
            kill["moved"] = moved
            log("shards moved: %s" % moved)

        # Every 60 s a line in the log with what the sampler saw last: a run stopped before its
        # end still leaves per-replica RSS, progress and the Agent Platform calls behind.
        def progress_log():
            prev = None
            while not getattr(progress_log, "stop", False):
                time.sleep(60)
                if not samp.samples:
                    continue
                x = samp.samples[-1]
                calls = sum(slurm_calls(x.get("calls")).values())
                lists = sum(v for kk, v in (x.get("calls") or {}).items()
                            if kk.endswith("/jobs/"))
                line = {"jobIds": tracker.count("t_jobid", names),
                        "terminal": tracker.count("t_terminal", names),
                        "rss_MB": {kk: round(v / 1e6) for kk, v in x["rss"].items() if v},
                        "AP calls": calls, "AP lists": lists,
                        "cpu_s": {kk: round(v) for kk, v in x["cpu"].items() if v},
                        "loadavg": open("/proc/loadavg").read().split()[0]}
                if prev:
                    dt = x["t"] - prev["t"]
                    line["AP calls/s"] = round((calls - sum(slurm_calls(
                        prev.get("calls")).values())) / dt, 1)
                prev = x
                log("progress %s" % json.dumps(line, sort_keys=True))
        plog = threading.Thread(target=progress_log, daemon=True)
        plog.start()
        t_burst = time.time()
        kth = None
        if args.replicas > 1 and args.kill_at > 0:
            kth = threading.Thread(target=killer, daemon=True)
            kth.start()
        log("creating %d SlurmJobs over %d clusters (%d threads), each runs %g s" % (
            n, args.clusters, args.create_threads, run_seconds))
        create_secs, errs = parallel(names, create, args.create_threads)
        res["create_seconds"], res["create_errors"] = create_secs, len(errs)
        log("created in %.1f s (%.0f/s), %d errors" % (create_secs, n / create_secs, len(errs)))
        def until(limit):  # --deadline cuts every wait
            return max(1.0, min(limit, args.deadline - time.time())) if args.deadline else limit
        # Both waits give up only after `--timeout` (+ the run) without progress: at 100,000 the
        # submits alone take most of an hour. --deadline still cuts them.
        ok_jobid = tracker.wait("t_jobid", names, args.timeout, "jobId", progress=True,
                                stall=True, cut_at=args.deadline)
        if kth:
            kth.join(until(660))
        ok_term = tracker.wait("t_terminal", names, args.timeout + run_seconds, "terminal",
                               progress=True, stall=True, cut_at=args.deadline)
        res["cut_at_deadline"] = bool(args.deadline) and time.time() >= args.deadline - 1.5 \
            and not ok_term
        if res["cut_at_deadline"]:
            log("deadline reached: reporting what the run got so far")
        t_all_terminal = time.time()
        time.sleep(1.0)
        res["ok"] = ok_jobid and ok_term and not errs
        progress_log.stop = True
        with tracker.lock:
            jobs = {k: dict(v) for k, v in tracker.jobs.items() if k in t_create}
            progress = list(tracker.progress)
        lat = [jobs[k]["t_jobid"] - t_create[k] for k in names if "t_jobid" in jobs.get(k, {})]
        res["create_to_jobid"] = {"p50": pct(lat, 50), "p99": pct(lat, 99),
                                  "max": max(lat) if lat else None}
        first_create = min(t_create.values())
        last_jobid = max(j["t_jobid"] for j in jobs.values() if "t_jobid" in j)
        res["throughput_submits_per_s"] = len(lat) / max(1e-6, last_jobid - first_create)
        tj = sorted(j["t_jobid"] for j in jobs.values() if "t_jobid" in j)
        if tj:
            t99 = tj[int(0.99 * (len(tj) - 1))]
            res["to_99pct_jobid_s"] = t99 - first_create
            res["throughput_99pct_per_s"] = int(0.99 * (len(tj) - 1)) / max(1e-6,
                                                                             t99 - first_create)
        res["lost_no_jobid"] = sum(1 for k in names if "t_jobid" not in jobs.get(k, {}))
        res["lost_not_terminal"] = sum(1 for k in names if "t_terminal" not in jobs.get(k, {}))
        table = env.aadmin("GET", "jobs")
        sc = table["submit_counts"]
        res["slurm_submits"] = sc["accepted"]
        res["duplicate_submits"] = len(sc.get("duplicates_by_comment") or {})
        res["duplicate_names"] = len(sc.get("duplicates_by_name") or {})
        # every SlurmJob's own name is the Slurm job name? count by the jobId the status shows
        ours = {j["job_id"] for j in jobs.values() if "job_id" in j}
        end_by_id = {j["job_id"]: j["end_time"] for j in table["jobs"]
                     if j.get("end_time") and j["job_id"] in ours}
        del table
        lt = [jobs[k]["t_terminal"] - end_by_id[jobs[k]["job_id"]]
              for k in names if "t_terminal" in jobs.get(k, {})
              and jobs[k].get("job_id") in end_by_id]
        res["terminal_to_status"] = {"p50": pct(lt, 50), "p99": pct(lt, 99),
                                     "max": max(lt) if lt else None}
        res["final_states"] = dict(collections.Counter(j.get("state") for j in jobs.values()))
        res["jobs_per_shard"] = dict(collections.Counter(j.get("shard") for j in jobs.values()))

        if kill and "t_kill" in kill:
            t_kill = kill["t_kill"]
            kill.setdefault("moved", {})
            moved_shards = {str(s) for s in kill["shards"]}
            # The new holder's first jobId or jobState change in each moved shard (after its
            # Lease moved; what arrives between the kill and the move is the victim's last
            # writes), and the last one before the move.
            first_prog, last_before = {}, {}
            for t, sh, _, _ in sorted(progress):
                if sh not in moved_shards or int(sh) not in kill["moved"]:
                    continue
                t_move = t_kill + kill["moved"][int(sh)][0]
                if t <= t_move:
                    last_before[sh] = t - t_kill
                else:
                    first_prog.setdefault(sh, t - t_kill)
            kill["first_progress_after_kill"] = first_prog
            kill["last_progress_before_move"] = last_before
            # What the new holder owes first: the moved shard's SlurmJobs still without a
            # jobId. When its first one got a jobId, and its last one, after the kill (a
            # holder busy re-reading the shard's running jobs submits nothing meanwhile).
            first_new, last_new = {}, {}
            for t, sh, _, what in sorted(progress):
                if what != "jobId" or sh not in moved_shards or int(sh) not in kill["moved"]:
                    continue
                if t > t_kill + kill["moved"][int(sh)][0]:
                    first_new.setdefault(sh, t - t_kill)
                    last_new[sh] = t - t_kill
            kill["first_jobid_after_kill"] = first_new
            kill["last_jobid_after_kill"] = last_new
            kill["move_s"] = max((v[0] for v in kill["moved"].values()), default=None) \
                if len(kill["moved"]) == len(kill["shards"]) else None
            kill.pop("t_kill")
            res["kill"] = kill
        elif kill:
            res["kill"] = None

        # Calls while N were active (last jobId -> first Slurm end), in total and per cluster
        first_end = min(end_by_id.values()) if end_by_id else t_all_terminal
        win = [s for s in samp.samples if last_jobid + 0.5 <= s["t"] <= first_end - 0.5
               and s.get("calls") is not None and s.get("by_cluster") is not None]
        res["window_kind"] = "all N submitted, none ended"
        if len(win) < 2 and not res["cut_at_deadline"]:
            # the first jobs ended before the last were submitted: the 120 s before the first end
            win = [s for s in samp.samples if first_end - 120 <= s["t"] <= first_end - 0.5
                   and s.get("calls") is not None and s.get("by_cluster") is not None]
            res["window_kind"] = "the 120 s before the first job ended (submits going on)"
        if len(win) < 2 and res["cut_at_deadline"]:
            # cut before all N were submitted: the last 120 s (submits still going on)
            win = [s for s in samp.samples if s["t"] >= t_all_terminal - 120
                   and s.get("calls") is not None and s.get("by_cluster") is not None]
            res["window_kind"] = "the last 120 s before the cut (submits going on)"
        aw = None
        if len(win) >= 2:
            a, b = win[0], win[-1]
            secs = b["t"] - a["t"]
            per_cluster = {}
            for c in set(b["by_cluster"]) | set(a["by_cluster"]):
                d = diff(a["by_cluster"].get(c), b["by_cluster"].get(c))
                lists = sum(v for kk, v in d.items() if kk.endswith("/jobs/"))
                submits = sum(v for kk, v in d.items() if kk.endswith("/job/submit"))
                per_cluster[c] = {"calls": sum(d.values()), "lists": lists, "submits": submits,
                                  "per_tick": (sum(d.values()) / lists) if lists else None,
                                  "tracking_per_tick": ((sum(d.values()) - submits) / lists)
                                  if lists else None,
                                  "ticks_per_min": lists * 60.0 / secs}
            d = slurm_calls(diff(a["calls"], b["calls"]))
            aw = {"seconds": secs, "calls": d, "calls_per_s": sum(d.values()) / secs,
                  "per_cluster": per_cluster,
                  "rss": {k: statistics.median(s["rss"].get(k) or 0 for s in win)
                          for k in b["rss"] if k.startswith("r")},
                  "rss_max": {k: max(s["rss"].get(k) or 0 for s in win)
                              for k in b["rss"] if k.startswith("r")}}
        res["active_window"] = aw
        before = [s for s in samp.samples if s["t"] <= first_create]
        after = [s for s in samp.samples if s["t"] >= last_jobid]
        if before and after:
            a, b = before[-1], after[0]
            res["burst_cpu_util"] = {k: ((b["cpu"].get(k) or 0) - (a["cpu"].get(k) or 0)) /
                                     (b["t"] - a["t"]) for k in b["cpu"]
                                     if b["cpu"].get(k) is not None and
                                     a["cpu"].get(k) is not None}
        answered = env.aadmin("GET", "calls")
        res["resource_exhausted"] = sum(v for kk, v in (answered.get("by_result") or {}).items()
                                        if kk.startswith("RESOURCE_EXHAUSTED"))
        res["ap_calls_to_completion"] = slurm_calls(answered.get("by_call"))
        res["rss_peak"] = {}
        res["rss_tracked_all_done"] = {}
        for i, p in enumerate(ops):
            r = "r%d" % i
            if kill and kill.get("victim") == r:
                res["rss_peak"][r] = kill["rss_victim_before"][1]
                continue
            rss, hwm = proc_mem(p.pid)
            res["rss_tracked_all_done"][r] = rss
            res["rss_peak"][r] = hwm
        res["cpu_s"] = {"r%d" % i: (proc_cpu(p.pid) or 0) - (cpu_idle.get("r%d" % i) or 0)
                        for i, p in enumerate(ops) if p.p.poll() is None}
        res["kube_counters"] = env.kadmin("GET", "counters").get("byVerbResource")
        res["kube_rss_peak"] = proc_mem(env.kube.pid)[1]
        res["ap_rss_peak"] = proc_mem(env.ap.pid)[1]
        if not args.skip_delete and not res["cut_at_deadline"]:
            log("deleting %d SlurmJobs" % n)
            del_secs, derrs = parallel(
                names, lambda nm: env.k.json("DELETE", "%s/namespaces/%s/slurmjobs/%s" %
                                             (GROUP, NS, nm), expect=(200, 202)),
                args.create_threads)
            ok_del = tracker.wait("t_deleted", names, args.timeout, "deleted", progress=True)
            res["delete_seconds"] = del_secs
            res["delete_to_gone_s"] = time.time() - (t_all_terminal + 1.0)
            res["ok"] = res["ok"] and ok_del and not derrs
            time.sleep(2.0)
            res["rss_end"] = {"r%d" % i: proc_mem(p.pid)[0] for i, p in enumerate(ops)
                              if p.p.poll() is None}
        watch.stop = True
    finally:
        end_run(samp, ops, env, res)
    return res


def report_sharded(r, out=sys.stdout):
    w = out.write
    fl = r["floor"]["floor (issue: delivery + submit + status write)"]
    w("\n=== N = %d SlurmJobs over %d clusters, %d replicas, %d shards (lease timings %s)%s ===\n"
      % (r["N"], r["clusters"], r["replicas"], r["shards"], r["lease_timings"],
         "; created with their shard label" if r.get("prelabel") else
         "; labelled by the leader's labeller"))
    w("ok: %s; final states: %s; jobs per shard: %s\n" % (
        r.get("ok"), r.get("final_states"), r.get("jobs_per_shard")))
    w("each job runs %g s in Slurm; creates took %.1f s (%d errors)\n" % (
        r["run_seconds"], r["create_seconds"], r["create_errors"]))
    rows = []
    c2j = r["create_to_jobid"]
    rows.append(("create -> status.jobId p50 / p99 / max (ms)",
                 "%s / %s / %s" % (ms(c2j["p50"]), ms(c2j["p99"]), ms(c2j["max"]))))
    rows.append(("floor (delivery + submit + status write) (ms)", ms(fl)))
    rows.append(("p50 / floor ; p99 / floor (N created at once: mostly queueing)",
                 "%.1fx ; %.1fx" % (c2j["p50"] / fl, c2j["p99"] / fl) if c2j["p50"] else "-"))
    iso = r.get("isolated_to_jobid") or {}
    if iso.get("p50"):
        rows.append(("isolated create -> jobId p50 / p99 (ms) ; /floor",
                     "%s / %s ; %.1fx / %.1fx" % (ms(iso["p50"]), ms(iso["p99"]),
                                                  iso["p50"] / fl, iso["p99"] / fl)))
    t2s = r["terminal_to_status"]
    rows.append(("Slurm end -> status p50 / p99 / max (ms)",
                 "%s / %s / %s" % (ms(t2s["p50"]), ms(t2s["p99"]), ms(t2s["max"]))))
    rows.append(("throughput, SlurmJobs submitted/s (first create -> last jobId)",
                 "%.1f" % r["throughput_submits_per_s"]))
    if r.get("to_99pct_jobid_s"):
        rows.append(("  first create -> 99 % of the N have a jobId (s) ; that rate (/s)",
                     "%.1f ; %.1f" % (r["to_99pct_jobid_s"], r["throughput_99pct_per_s"])))
    rows.append(("duplicates (SlurmJobs submitted more than once, by comment ; by name)",
                 "%d ; %d" % (r["duplicate_submits"], r["duplicate_names"])))
    if r.get("cut_at_deadline"):
        rows.append(("CUT AT THE DEADLINE: the counts below are 'not yet', not 'lost'", ""))
    rows.append(("lost: never a jobId ; never a terminal jobState",
                 "%d ; %d" % (r["lost_no_jobid"], r["lost_not_terminal"])))
    rows.append(("Slurm submits accepted", "%d" % r["slurm_submits"]))
    k = r.get("kill")
    if k:
        rows.append(("kill: victim, its shards, jobIds when killed",
                     "%s, %s, %d" % (k["victim"], k["shards"], k["jobids_at_kill"])))
        rows.append(("shard move after SIGKILL: Lease held by another replica (s, by shard)",
                     "max %s  %s" % ("-" if k.get("move_s") is None else "%.1f" % k["move_s"],
                                     json.dumps({s: [round(v[0], 1), v[1]]
                                                 for s, v in k["moved"].items()}))))
        rows.append(("  in a moved shard, s after the kill: last jobId/state change before "
                     "the move ; first after it",
                     "%s ; %s" % (json.dumps({s: round(v, 1) for s, v in
                                             k.get("last_progress_before_move", {}).items()}),
                                  json.dumps({s: round(v, 1) for s, v in
                                              k["first_progress_after_kill"].items()}))))
        rows.append(("  in a moved shard, s after the kill: first jobId given after the move ; "
                     "the last",
                     "%s ; %s" % (json.dumps({s: round(v, 1) for s, v in
                                             k.get("first_jobid_after_kill", {}).items()}),
                                  json.dumps({s: round(v, 1) for s, v in
                                              k.get("last_jobid_after_kill", {}).items()}))))
    aw = r.get("active_window")
    if aw:
        pc = aw["per_cluster"]
        ticks = [v["per_tick"] for v in pc.values() if v["per_tick"] is not None]
        rows.append(("calls per cluster per tick: median / max (window: %s)" % r.get(
                         "window_kind", "all N submitted, none ended"),
                     "%s / %s  (%.0f s, %d clusters listed)" % (
                         "%.2f" % statistics.median(ticks) if ticks else "-",
                         "%.2f" % max(ticks) if ticks else "-", aw["seconds"], len(ticks))))
        tt = [v.get("tracking_per_tick") for v in pc.values()
              if v.get("tracking_per_tick") is not None]
        if tt:
            rows.append(("  the same without submits (tracking calls per tick): median / max",
                         "%.2f / %.2f" % (statistics.median(tt), max(tt))))
        rows.append(("  ticks (lists) per cluster per minute: median",
                     "%.1f" % statistics.median(v["ticks_per_min"] for v in pc.values())))
        rows.append(("Agent Platform calls/s while all N active", "%.1f" % aw["calls_per_s"]))
    tot = sum(r["ap_calls_to_completion"].values())
    rows.append(("Agent Platform calls per job to completion", "%.2f" % (tot / r["N"])))
    rows.append(("429 answers", "%d" % r["resource_exhausted"]))
    reps = sorted(r["rss_idle"])
    rows.append(("per-replica RSS idle (MB)", " ".join("%s %.0f" % (x, r["rss_idle"][x] / 1e6)
                                                      for x in reps)))
    if aw:
        rows.append(("per-replica RSS, all N tracked: median / max of the window (MB)",
                     " ".join("%s %.0f/%.0f" % (x, aw["rss"].get(x, 0) / 1e6,
                                                aw["rss_max"].get(x, 0) / 1e6)
                              for x in reps if aw["rss"].get(x))))
    rows.append(("per-replica RSS peak (VmHWM; the victim's before the kill) (MB)",
                 " ".join("%s %.0f" % (x, (r["rss_peak"].get(x) or 0) / 1e6) for x in reps)))
    if r.get("rss_end"):
        rows.append(("per-replica RSS after the deletes (MB)",
                     " ".join("%s %.0f" % (x, v / 1e6) for x, v in sorted(r["rss_end"].items())
                              if v)))
    rows.append(("replica CPU s (create..end), survivors",
                 " ".join("%s %.0f" % kv for kv in sorted(r["cpu_s"].items()))))
    rows.append(("replicas ready (s) ; all shards held (s)",
                 "%s ; %s" % ([round(x, 2) for x in r["ready_s"]],
                              "-" if r["all_shards_held_s"] is None
                              else "%.1f" % r["all_shards_held_s"])))
    rows.append(("stand-ins' peak RSS: kube / Agent Platform (MB)",
                 "%.0f / %.0f" % (r["kube_rss_peak"] / 1e6, r["ap_rss_peak"] / 1e6)))
    if r.get("delete_seconds") is not None:
        rows.append(("deletes: requests took / until every DELETED event (s)",
                     "%.1f / %.1f" % (r["delete_seconds"], r["delete_to_gone_s"])))
    wid = max(len(a) for a, _ in rows)
    for a, b in rows:
        w("  %-*s  %s\n" % (wid, a, b))
    w("-- stand-ins alone (same run, before the operators started) --\n")
    for kk, v in r["capacity"].items():
        w("  %-*s  %.2f\n" % (wid, kk, v))
    w("-- CPU use while submitting (cores; a Python stand-in saturates at ~1.0) --\n")
    w("  %s\n" % ", ".join("%s %.2f" % kv for kv in sorted((r.get("burst_cpu_util") or {}).items())))
    w("  load average at start / end: %.1f / %.1f\n" % (r["loadavg_start"], r["loadavg_end"]))


# ----------------------------------------------------------------------------------- stand-ins at scale

class LeaseProbe(threading.Thread):
    """GET and PUT (renew) one Lease in NS every 0.2 s, on a connection of its own; take() returns
    the latencies since the last take: count, p50, p99, max, and how many took over 1 s / 5 s."""

    def __init__(self, env):
        super().__init__(daemon=True)
        self.http = Http(env.kube_port, {"Authorization": "Bearer " + env.kube_token})
        self.path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS
        self.lock = threading.Lock()
        self.times = []
        self.errors = 0
        self.stop = False
        self.http.json("POST", self.path, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                           "metadata": {"name": "probe"},
                                           "spec": {"holderIdentity": "probe", "leaseDurationSeconds": 15}},
                       expect=(201, 409))

    def run(self):
        while not self.stop:
            try:
                t0 = time.time()
                _, lease = self.http.json("GET", self.path + "/probe", expect=(200,))
                t1 = time.time()
                lease["spec"]["renewTime"] = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
                self.http.json("PUT", self.path + "/probe", lease, expect=(200,))
                t2 = time.time()
                with self.lock:
                    self.times += [t1 - t0, t2 - t1]
            except Exception:
                with self.lock:
                    self.errors += 1
            time.sleep(0.2)

    def take(self):
        with self.lock:
            t, self.times = sorted(self.times), []
            e, self.errors = self.errors, 0
        if not t:
            return {"n": 0, "errors": e}
        return {"n": len(t), "p50 ms": round(pct(t, 50) * 1000, 1), "p99 ms": round(pct(t, 99) * 1000, 1),
                "max ms": round(t[-1] * 1000, 1), "over 1 s": sum(1 for x in t if x > 1),
                "over 5 s": sum(1 for x in t if x > 5), "errors": e}


def measure_standins_at_scale(args, n):
    """What the stand-ins sustain with N SlurmJobs (and N Slurm jobs) over K clusters, with no
    operator: kube creates/s and status writes/s as the store fills (per tenth), a list of all N
    and of one shard's (label selector), watch delivery to S label-selected watches; Agent
    Platform submits/s as the simulators fill, and the per-cluster batched list (N/K jobs)."""
    work = tempfile.mkdtemp(prefix="slurmop-standins-scale-%d-" % n)
    k = max(1, args.clusters)
    s = max(1, args.shards or args.replicas or 1)
    out = {"N": n, "clusters": k, "shards": s}
    kube_args = []
    if args.standin_gc_freeze is not None:
        kube_args = ["--gc-freeze-interval", str(args.standin_gc_freeze)]
    env = Env(work, history=max(10000, min(n * 20, args.max_history)), clusters=k, kube_args=kube_args)
    probe = None
    try:
        env.setup_cluster()
        env.token()
        # A Lease read and renewed every 0.2 s on its own connection, as a leader does: the
        # stand-in's slowest answers to it (the 100,000 run lost leaders to them).
        probe = LeaseProbe(env)
        probe.start()
        width = max(5, len(str(n - 1)))
        names = ["job-%0*d" % (width, i) for i in range(n)]
        cl = {nm: ("c%d" % (i % k)) if k > 1 else CLUSTER for i, nm in enumerate(names)}
        shard = {nm: fnv1a32("%s/%s" % (NS, cl[nm])) % s for nm in names}
        # S watches, one per shard label, as the replicas' informers have
        got = collections.Counter()
        glock = threading.Lock()

        def on_ev(etype, obj, t):
            with glock:
                got[etype] += 1
        _, lst = env.k.json("GET", "%s/namespaces/%s/slurmjobs" % (GROUP, NS), expect=(200,))
        watches = []
        for x in range(s):
            w = WatchStream(env.kube_port, env.kube_token,
                            "%s/namespaces/%s/slurmjobs" % (GROUP, NS),
                            lst["metadata"]["resourceVersion"], on_ev)
            w.selector = "%s=%d" % (SHARD_LABEL, x)
            w.start()
            watches.append(w)
        objs = {}

        def create(nm):
            m = job_manifest(NS, nm, 0, cl[nm])
            m["metadata"]["labels"] = {SHARD_LABEL: str(shard[nm])}
            _, o = env.k.json("POST", "%s/namespaces/%s/slurmjobs" % (GROUP, NS), m,
                              expect=(201,))
            objs[nm] = o["metadata"]["resourceVersion"]

        tenth = max(1, n // 10)
        rates, cpus = [], []
        for i in range(0, n, tenth):
            chunk = names[i:i + tenth]
            c0 = proc_cpu(env.kube.pid)
            secs, errs = parallel(chunk, create, args.create_threads)
            c1 = proc_cpu(env.kube.pid)
            rates.append(len(chunk) / secs)
            cpus.append((c1 - c0) * 1000 / len(chunk))
            log("kube: %d SlurmJobs, last tenth %.0f creates/s, %.2f ms CPU each, RSS %.0f MB" % (
                i + len(chunk), rates[-1], cpus[-1], proc_mem(env.kube.pid)[0] / 1e6))
        out["kube creates/s by tenth"] = [round(r) for r in rates]
        out["kube CPU ms per create by tenth"] = [round(c, 2) for c in cpus]
        t0 = time.time()
        while sum(got.values()) < n and time.time() - t0 < 120:
            time.sleep(0.1)
        out["kube watch events delivered to the shard watches"] = sum(got.values())
        out["kube watch delivery lag after the last create, s"] = time.time() - t0
        t0 = time.time()
        st, raw = env.k.request("GET", "%s/slurmjobs" % GROUP)
        out["kube list all N SlurmJobs, s"] = time.time() - t0
        out["kube list all N, MB"] = len(raw) / 1e6
        del raw
        t0 = time.time()
        env.k.request("GET", "%s/slurmjobs?labelSelector=%s" % (
            GROUP, urllib.parse.quote("%s=0" % SHARD_LABEL)))
        out["kube list one shard (label selector), s"] = time.time() - t0
        out["kube Lease probe during the fill and the full lists"] = probe.take()
        # paged, as the operator's informers list: limit=500, following continue tokens
        for label, sel in (("all N", ""), ("one shard", "&labelSelector=" + urllib.parse.quote(
                "%s=0" % SHARD_LABEL))):
            t0, cont, pages, items, slowest = time.time(), "", 0, 0, 0.0
            while True:
                t1 = time.time()
                _, page = env.k.json("GET", "%s/slurmjobs?limit=500%s%s" % (
                    GROUP, sel, "&continue=" + urllib.parse.quote(cont) if cont else ""), expect=(200,))
                slowest = max(slowest, time.time() - t1)
                pages += 1
                items += len(page["items"])
                cont = page["metadata"].get("continue") or ""
                if not cont:
                    break
            out["kube paged list (limit=500) of %s: s, pages, items, slowest page s" % label] = [
                round(time.time() - t0, 3), pages, items, round(slowest, 3)]
        out["kube Lease probe during the paged lists"] = probe.take()
        sample = names[:: max(1, n // 5000)]

        def status_write(nm):
            env.k.json("PATCH", "%s/namespaces/%s/slurmjobs/%s/status" % (GROUP, NS, nm),
                       {"status": {"jobId": 1, "jobState": "PENDING", "phase": "Pending"}},
                       ctype="application/merge-patch+json", expect=(200,))
        c0 = proc_cpu(env.kube.pid)
        secs, errs = parallel(sample, status_write, args.create_threads)
        c1 = proc_cpu(env.kube.pid)
        out["kube status patches/s with N stored"] = len(sample) / secs
        out["kube CPU ms per status patch with N stored"] = (c1 - c0) * 1000 / len(sample)
        out["kube RSS MB with N stored"] = proc_mem(env.kube.pid)[0] / 1e6
        out["kube Lease probe during the status patches"] = probe.take()
        probe.stop = True
        _, g = env.k.json("GET", "/__admin/gc", expect=(200,))
        out["kube GC"] = g
        for w in watches:
            w.stop = True

        # Agent Platform: N submits over K clusters, then the per-cluster list
        def submit(i):
            c = "c%d" % (i % k) if k > 1 else "demo-cluster"
            body = {"method": "HTTP_METHOD_POST", "path": "/slurm/v0.0.42/job/submit",
                    "body": dict(submit_body("s-%d" % i, "scale:%d" % i),
                                 script="#!/bin/bash\nsleep 36000\n")}
            st, raw = env.a.request(
                "POST", "/v1beta1/projects/demo-project/locations/us-central1/"
                        "modelDevelopmentClusters/%s:callSlurmRestApi" % c, body,
                headers={"Authorization": "Bearer " + env.token()})
            if st != 200:
                raise RuntimeError("submit -> %d" % st)
        rates, cpus = [], []
        for i in range(0, n, tenth):
            chunk = range(i, min(n, i + tenth))
            c0 = proc_cpu(env.ap.pid)
            secs, errs = parallel(chunk, submit, args.create_threads)
            c1 = proc_cpu(env.ap.pid)
            rates.append(len(chunk) / secs)
            cpus.append((c1 - c0) * 1000 / len(chunk))
            log("AP: %d jobs, last tenth %.0f submits/s, %.2f ms CPU each, %d errors, RSS %.0f MB"
                % (i + len(chunk), rates[-1], cpus[-1], len(errs),
                   proc_mem(env.ap.pid)[0] / 1e6))
        out["AP submits/s by tenth"] = [round(r) for r in rates]
        out["AP CPU ms per submit by tenth"] = [round(c, 2) for c in cpus]
        c = "c0" if k > 1 else "demo-cluster"
        times, cpu = [], []
        for rep in range(4):
            c0 = proc_cpu(env.ap.pid)
            t0 = time.time()
            st, raw = env.a.request(
                "POST", "/v1beta1/projects/demo-project/locations/us-central1/"
                        "modelDevelopmentClusters/%s:callSlurmRestApi?prettyPrint=false" % c,
                {"method": "HTTP_METHOD_GET", "path": "/slurm/v0.0.42/jobs/"},
                headers={"Authorization": "Bearer " + env.token()})
            times.append(time.time() - t0)
            cpu.append(proc_cpu(env.ap.pid) - c0)
        out["AP list of one cluster (N/K jobs, compact): s, first / warm"] = [
            round(times[0], 3), round(statistics.median(times[1:]), 3)]
        out["AP list of one cluster: MB"] = len(raw) / 1e6
        out["AP CPU s per warm list"] = statistics.median(cpu[1:])
        out["AP lists of N/K jobs per s at one core (warm)"] = 1.0 / max(1e-6, statistics.median(cpu[1:]))
        out["AP RSS MB with N jobs"] = proc_mem(env.ap.pid)[0] / 1e6
    finally:
        if probe is not None:
            probe.stop = True
        env.stop()
    return out


# ----------------------------------------------------------------------------------- report

def ms(x):
    return "-" if x is None else ("%.1f" % (x * 1000))


def mb(x):
    return "-" if x is None else "%.1f MB" % (x / 1e6)


def report_isolated(r, out=sys.stdout):
    """One line for an --isolated-only run: the floor, isolated p50 / p99, their multiples."""
    floor = r["floor"]["floor (issue: delivery + submit + status write)"]
    iso = r.get("isolated_to_jobid") or {}
    p50, p99 = iso.get("p50"), iso.get("p99")
    out.write("isolated: floor %s ms; create -> jobId p50 %s / p99 %s ms (n=%s); "
              "%.2fx ; %.2fx the floor\n" % (ms(floor), ms(p50), ms(p99), iso.get("n"),
                                              (p50 or 0) / floor, (p99 or 0) / floor))
    per_job = r.get("isolated_kube_per_job") or {}
    out.write("  operator's SlurmJob requests per isolated job: %s\n" % ", ".join(
        "%s %.2f" % kv for kv in sorted(per_job.items())))
    paired = (r.get("isolated_paired_floor") or {}).get("p50")
    if paired:
        out.write("  paired floor (a sample before each isolated job, operator running): %s ms; "
                  "%.2fx ; steps (median ms): %s\n" % (
                      ms(paired), (p50 or 0) / paired,
                      r.get("isolated_paired_floor_steps_ms")))
    each = r.get("isolated_each_ms") or []
    if each:  # which jobs set the tail, in creation order
        out.write("  each isolated job, in order (ms): %s\n" % " ".join("%.1f" % v for v in each))
    out.flush()


def report(results, out=sys.stdout):
    n = results[0]["N"]
    k = len(results)

    def med(f):
        vals = [f(r) for r in results]
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else None

    def rng(f, fmt):
        vals = [v for v in (f(r) for r in results) if v is not None]
        if not vals:
            return "-"
        if len(vals) == 1:
            return fmt(vals[0])
        return "%s (%s..%s)" % (fmt(statistics.median(vals)), fmt(min(vals)), fmt(max(vals)))

    w = out.write
    w("\n=== N = %d SlurmJobs  (%d run%s; median (min..max) where K > 1) ===\n" % (
        n, k, "s" if k > 1 else ""))
    r0 = results[0]
    w("runs ok: %s; final states: %s; Slurm submits accepted: %s; duplicate submits: %s\n" % (
        [r.get("ok") for r in results], r0.get("final_states"), r0.get("slurm_submits"),
        r0.get("duplicate_submits")))
    w("each job runs %g s in Slurm; creates took %s s\n" % (
        r0["run_seconds"], rng(lambda r: r.get("create_seconds"), lambda x: "%.1f" % x)))
    rows = []
    f = lambda x: ms(x)  # noqa: E731
    rows.append(("create -> status.jobId p50 / p99 / max (ms)",
                 "%s / %s / %s" % (rng(lambda r: r["create_to_jobid"]["p50"], f),
                                   rng(lambda r: r["create_to_jobid"]["p99"], f),
                                   rng(lambda r: r["create_to_jobid"]["max"], f))))
    rows.append(("Slurm end -> status shows it p50 / p99 / max (ms)",
                 "%s / %s / %s" % (rng(lambda r: r["terminal_to_status"]["p50"], f),
                                   rng(lambda r: r["terminal_to_status"]["p99"], f),
                                   rng(lambda r: r["terminal_to_status"]["max"], f))))
    fl = "floor (issue: delivery + submit + status write)"
    rows.append(("floor: create+watch delivery / submit / status write (ms)",
                 "%s / %s / %s" % (rng(lambda r: r["floor"]["create+watch delivery"], f),
                                   rng(lambda r: r["floor"]["submit (callSlurmRestApi)"], f),
                                   rng(lambda r: r["floor"]["status write"], f))))
    rows.append(("floor = sum of those (ms)", rng(lambda r: r["floor"][fl], f)))
    rows.append(("floor, whole path serial incl. finalizer patch + 2nd delivery (ms)",
                 rng(lambda r: r["floor"]["whole path, serial"], f)))
    rows.append(("burst: p50 / floor ; p99 / floor (N created at once: mostly queueing)",
                 "%s ; %s" % (rng(lambda r: r["create_to_jobid"]["p50"] / r["floor"][fl],
                                  lambda x: "%.1fx" % x),
                              rng(lambda r: r["create_to_jobid"]["p99"] / r["floor"][fl],
                                  lambda x: "%.1fx" % x))))
    rows.append(("isolated: create -> jobId, one job at a time, p50 / p99 (ms)",
                 "%s / %s" % (rng(lambda r: (r.get("isolated_to_jobid") or {}).get("p50"), f),
                              rng(lambda r: (r.get("isolated_to_jobid") or {}).get("p99"), f))))
    rows.append(("isolated p50 / floor ; p99 / floor (issue targets: 3x ; 10x)",
                 "%s ; %s" % (
                     rng(lambda r: ((r.get("isolated_to_jobid") or {}).get("p50") or 0) /
                         r["floor"][fl] or None, lambda x: "%.1fx" % x),
                     rng(lambda r: ((r.get("isolated_to_jobid") or {}).get("p99") or 0) /
                         r["floor"][fl] or None, lambda x: "%.1fx" % x))))
    rows.append(("throughput, SlurmJobs submitted/s (first create -> last jobId)",
                 rng(lambda r: r["throughput_submits_per_s"], lambda x: "%.1f" % x)))

    def tot(d):
        return sum((d or {}).values())
    if r0.get("quota_per_minute") or r0.get("clusters", 1) > 1:
        rows.append(("clusters / stand-in quota per minute / operator budget per minute",
                     "%d / %s / %s" % (r0.get("clusters", 1), r0.get("quota_per_minute") or "-",
                                       r0.get("budget") or "off")))
        rows.append(("RESOURCE_EXHAUSTED (429) answers ; most calls in any 60 s",
                     "%s ; %s" % (rng(lambda r: r.get("resource_exhausted"), lambda x: "%d" % x),
                                  rng(lambda r: r.get("peak_calls_per_minute"),
                                      lambda x: "%d" % x))))
    rows.append(("Agent Platform calls, total (create..delete)",
                 rng(lambda r: tot(r["ap_calls_total"]), lambda x: "%d" % x)))
    rows.append(("Agent Platform calls per job over its life",
                 rng(lambda r: tot(r["ap_calls_total"]) / r["N"], lambda x: "%.2f" % x)))
    by = collections.Counter()
    for r in results:
        for kk, v in r["ap_calls_total"].items():
            by[kk] += v / r["N"] / k
    rows.append(("  by call, per job", ", ".join("%s %.2f" % kv for kv in sorted(by.items()))))
    rows.append(("Agent Platform calls/s while all N active (window s)",
                 rng(lambda r: (r["active_window"] or {}).get("calls_per_s"),
                     lambda x: "%.1f" % x) + "  (" + rng(
                     lambda r: (r["active_window"] or {}).get("seconds"),
                     lambda x: "%.0f" % x) + ")"))
    rows.append(("  per active job per second",
                 rng(lambda r: (r["active_window"] or {}).get("calls_per_s", 0) / r["N"]
                     if r.get("active_window") else None, lambda x: "%.3f" % x)))
    rows.append(("Agent Platform calls per tick (per batched list call) while N active",
                 rng(lambda r: (r["active_window"] or {}).get("calls_per_tick"),
                     lambda x: "%.2f" % x) + "  (no list call = no tick: per-job polling)"))
    if r0.get("active_window"):
        rows.append(("  window calls by kind", json.dumps(r0["active_window"]["calls"],
                                                           sort_keys=True)))
    kb = collections.Counter()
    for r in results:
        for kk, v in r["kube_requests"].items():
            kb[kk] += v / r["N"] / k
    rows.append(("Kubernetes requests per job, operator's (by verb resource)",
                 ", ".join("%s %.2f" % kv for kv in sorted(kb.items()) if abs(kv[1]) >= 0.005)))
    writes = sum(v for kk, v in kb.items() if kk.split(" ")[0] in ("patch", "update") and
                 kk.endswith(("slurmjobs.hpc.slurmoperator.dev",
                              "slurmjobs.hpc.slurmoperator.dev/status")))
    rows.append(("  SlurmJob writes per job (patch+update, status included)", "%.2f" % writes))
    rows.append(("operator RSS: idle / all N tracked (active) / peak / end after delete",
                 "%s / %s / %s / %s" % (
                     rng(lambda r: r["rss_idle"], mb),
                     rng(lambda r: (r["active_window"] or {}).get("rss"), mb),
                     rng(lambda r: max(r["rss_peak_first"] or 0, r["rss_peak_second"] or 0), mb),
                     rng(lambda r: r["rss_end"], mb))))
    rows.append(("operator RSS while all N tracked: max / slope (least squares over the window)",
                 "%s / %s over %s" % (
                     rng(lambda r: (r["active_window"] or {}).get("rss_max"), mb),
                     rng(lambda r: (r["active_window"] or {}).get("rss_slope"),
                         lambda x: "%+.2f MB/min" % (x / 1e6)),
                     rng(lambda r: (r["active_window"] or {}).get("seconds"),
                         lambda x: "%.0f s" % x))))
    rows.append(("  largest RSS sample before the restart: MB, s after the first create, phase",
                 "; ".join("%.1f MB at %.0f s, %s" % (x["rss"] / 1e6, x["t"], x["phase"])
                           for x in (r.get("rss_max_sample") for r in results) if x) or "-"))
    rows.append(("bytes per tracked SlurmJob ((active RSS - idle RSS) / N)",
                 rng(lambda r: ((r["active_window"] or {}).get("rss", 0) - r["rss_idle"]) / r["N"]
                     if r.get("active_window") else None, lambda x: "%.0f" % x)))
    rows.append(("operator CPU s per 1,000 job lifecycles (create..delete, both processes)",
                 rng(lambda r: r["cpu_s_per_1000"], lambda x: "%.2f" % x)))
    rows.append(("time to ready: first start / after restart with N SlurmJobs (s)",
                 "%s / %s" % (rng(lambda r: r["ready_first_s"], lambda x: "%.2f" % x),
                              rng(lambda r: r["ready_after_restart_s"], lambda x: "%.2f" % x))))
    rows.append(("  floor of a restart: one list of the N SlurmJobs from the stand-in (s)",
                 rng(lambda r: r.get("list_all_s"), lambda x: "%.2f" % x)))
    if r0.get("ending_probes"):
        e = r0["ending_probes"]
        rows.append(("  while the N jobs end: create -> jobId of SlurmJobs made one by one, "
                     "p50 / p99 / max (ms)", "%.1f / %.1f / %.1f (n=%d)" % (
                         e["p50"] or 0, e["p99"] or 0, e["max"] or 0, e["n"])))
    if r0.get("restart_probes_ms"):
        rows.append(("  restart: create -> jobId of SlurmJobs created one by one once ready (ms)",
                     " ".join("%.1f" % v for v in r0["restart_probes_ms"])))
    rows.append(("  restart: Agent Platform calls / Kubernetes requests in 5 s after",
                 "%s / %s" % (json.dumps(r0["restart_ap_calls_5s"], sort_keys=True),
                              json.dumps(r0["restart_kube_requests_5s"], sort_keys=True))))
    wid = max(len(a) for a, _ in rows)
    for a, b in rows:
        w("  %-*s  %s\n" % (wid, a, b))
    w("-- stand-ins alone (same run, before the operator started) --\n")
    cap = r0["capacity"]
    for kk in cap:
        w("  %-*s  %s\n" % (wid, kk, rng(lambda r: r["capacity"].get(kk),
                                         lambda x: "%.2f" % x)))
    w("-- who limits: CPU use while submitting (cores; a Python stand-in saturates at ~1.0) --\n")
    u = r0.get("burst_cpu_util") or {}
    w("  %s\n" % ", ".join("%s %.2f" % kv for kv in sorted(u.items())))
    verdict = limiter(results)
    w("  => %s\n" % verdict)


def limiter(results):
    """Which side limits, from CPU use while submitting and the capacity measured alone."""
    r = results[0]
    u = r.get("burst_cpu_util") or {}
    cap = r["capacity"]
    tp = statistics.median(x["throughput_submits_per_s"] for x in results)
    notes = []
    for k, name in (("kube", "kube stand-in"), ("ap", "Agent Platform stand-in")):
        if u.get(k, 0) >= 0.85:
            notes.append("%s saturated (%.2f cores)" % (name, u[k]))
    if tp >= 0.7 * cap.get("AP submits/s", 1e9):
        notes.append("throughput %.0f/s is >= 70%% of the AP stand-in's submits/s alone (%.0f)" % (
            tp, cap["AP submits/s"]))
    if tp >= 0.7 * cap.get("kube status writes/s", 1e9) / 2:
        notes.append("throughput x 2 status writes is >= 70%% of the kube stand-in's status "
                     "writes/s alone")
    total = sum(u.values())
    ncpu = os.cpu_count() or 2
    if total >= 0.9 * ncpu:
        notes.append("the machine's %d cores are full (%.2f cores in use by these processes)" %
                     (ncpu, total))
    load = max(r.get("loadavg_start", 0), r.get("loadavg_end", 0))
    if load > ncpu:
        notes.append("CAUTION: load average %.1f on %d cores (other work on the machine): every "
                     "process here got less CPU than it asked for; compare ratios, not absolutes"
                     % (load, ncpu))
    if not any(n.startswith(("kube stand-in", "Agent Platform stand-in", "throughput"))
               for n in notes):
        notes.insert(0, "the operator limits: no stand-in is saturated, and the throughput is "
                        "below 70%% of what each stand-in sustained alone (%s)" %
                     ", ".join("%s %.2f" % kv for kv in sorted(u.items())))
    return "; ".join(notes)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--operator", help="the slurmjob-operator binary")
    p.add_argument("--standins-only", action="store_true",
                   help="only measure the stand-ins alone (floor and capacity) at each size")
    p.add_argument("--sizes", default="100,1000,10000")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--clusters", type=int, default=1,
                   help="spread the N SlurmJobs over this many simulated clusters of one project")
    p.add_argument("--quota-per-minute", type=int, default=0,
                   help="the Agent Platform stand-in enforces this many calls per minute for the "
                        "project and region, from the operator's start (0 = none)")
    p.add_argument("--budget", type=float, default=0,
                   help="operator --agent-platform-requests-per-minute (0 = off)")
    p.add_argument("--cluster-budget", type=int, default=0,
                   help="a ClusterSlurmCluster of the project with spec.callBudget.requestsPerMinute")
    p.add_argument("--workers", type=int, default=4, help="operator --workers")
    p.add_argument("--kube-write-latency-ms", type=float, default=0,
                   help="every write to the stand-in API server waits this long first (a real "
                        "API server's etcd round trip; default 0: none)")
    p.add_argument("--create-threads", type=int, default=8)
    p.add_argument("--run-seconds", type=float, default=0,
                   help="how long each Slurm job runs (default: 20 s + N/60 s, at most 300)")
    p.add_argument("--floor-samples", type=int, default=30)
    p.add_argument("--isolated", type=int, default=20,
                   help="SlurmJobs created one at a time before the N (0: none)")
    p.add_argument("--probes-while-ending", action="store_true",
                   help="while the N SlurmJobs end (their status writes queued), create "
                        "SlurmJobs one at a time (namespace %s) and print their create -> jobId "
                        "(their requests then fall in the N-job run's counts)" % PROBE_NS)
    p.add_argument("--restart-probes", type=int, default=0,
                   help="after the restart with N SlurmJobs, create this many SlurmJobs one at "
                        "a time (namespace %s) and print each one's create -> jobId: does a new "
                        "SlurmJob wait behind the restart's backlog? (their requests then fall "
                        "in the restart's 5 s counts)" % PROBE_NS)
    p.add_argument("--isolated-gap-jitter-ms", type=float, default=0,
                   help="add a wait uniform in [0, this) ms (the same sequence every run) to the "
                        "0.1 s gap between isolated SlurmJobs, so they do not arrive in step with "
                        "the tracker's tick")
    p.add_argument("--isolated-quiet", action="store_true",
                   help="each isolated SlurmJob deleted (and gone) a second before the next")
    p.add_argument("--paired-floor", action="store_true",
                   help="with --isolated: a floor sample right before each isolated SlurmJob, "
                        "with the operator running (it then watches only the bench namespace)")
    p.add_argument("--isolated-only", action="store_true",
                   help="stop after the floor and the isolated SlurmJobs (no N-job run); "
                        "prints one line per run")
    p.add_argument("--capacity-count", type=int, default=1000,
                   help="requests of each kind used to measure the stand-ins alone")
    p.add_argument("--timeout", type=float, default=900,
                   help="the waits for every jobId and every end give up after this many s without "
                        "progress (the end wait: plus the jobs' run); the others this long after "
                        "they began")
    p.add_argument("--operator-arg", action="append", default=[],
                   help="extra operator flag, repeatable (e.g. --operator-arg=--min-poll-seconds=2)")
    p.add_argument("--allocator", choices=("jemalloc", "glibc"), default="jemalloc",
                   help="the operator's malloc: jemalloc as deploy/Dockerfile runs it (default), "
                        "or glibc's")
    p.add_argument("--operator-env", action="append", default=[],
                   help="KEY=VALUE added to the operator's environment, repeatable")
    p.add_argument("--replicas", type=int, default=1,
                   help="R > 1: R operator replicas (--leader-elect, identities r0..) sharing "
                        "--shards S; a replica is killed with SIGKILL while jobs are submitted")
    p.add_argument("--shards", type=int, default=0, help="operator --shards (default: R)")
    p.add_argument("--kill-at", type=float, default=0.5,
                   help="with R > 1: SIGKILL a replica once this fraction of the N have a jobId "
                        "(0: no kill)")
    p.add_argument("--lease-timings", default="",
                   help="with R > 1: lease duration,renew deadline,retry period in s (default: "
                        "the operator's 15,10,2)")
    p.add_argument("--standins-scale", action="store_true",
                   help="only fill the stand-ins with N SlurmJobs and N Slurm jobs over --clusters "
                        "(no operator) and measure what they sustain as they fill")
    p.add_argument("--prelabel", action="store_true",
                   help="with R > 1: create the SlurmJobs with their shard label already set, so "
                        "that the leader's labeller (one patch at a time) is not on the path")
    p.add_argument("--deadline", default="",
                   help="with R > 1: HH:MM (UTC) at which every wait ends and the run reports what "
                        "it has (a run that cannot finish in time)")
    p.add_argument("--skip-delete", action="store_true",
                   help="with R > 1: leave out the delete phase")
    p.add_argument("--standin-gc-freeze", type=float, default=None, metavar="SECONDS",
                   help="--standins-scale: the kube stand-in's --gc-freeze-interval (default: its own)")
    p.add_argument("--max-history", type=int, default=300000,
                   help="cap of the kube stand-in's watch history (20 x N, at least 10,000)")
    p.add_argument("--json-out", help="write every run's raw figures here")
    p.add_argument("--keep", action="store_true", help="keep the work directories (logs)")
    args = p.parse_args()
    if args.paired_floor and (args.probes_while_ending or args.restart_probes):
        # The operator then watches only the bench namespace, not the probes'.
        p.error("--paired-floor cannot be combined with --probes-while-ending or --restart-probes")
    global ISOLATED_GAP_JITTER_S, ISOLATED_QUIET
    ISOLATED_GAP_JITTER_S = max(0.0, args.isolated_gap_jitter_ms) / 1000.0
    ISOLATED_QUIET = args.isolated_quiet
    sizes = [int(s.replace("_", "").replace(",", "")) for s in args.sizes.split(",") if s]
    all_results = []
    t_start = time.time()
    if args.standins_scale:
        for n in sizes:
            out = measure_standins_at_scale(args, n)
            sys.stdout.write(json.dumps(out, indent=1, default=str) + "\n")
            if args.json_out:
                with open(args.json_out, "w") as f:
                    json.dump(out, f, indent=1, default=str)
        return
    if args.standins_only:
        for n in sizes:
            work = tempfile.mkdtemp(prefix="slurmop-standins-%d-" % n)
            env = Env(work, history=max(10000, n * 20), clusters=args.clusters)
            try:
                env.setup_cluster()
                env.token()
                fl = measure_floor(env, args.floor_samples)
                cap = measure_capacity(env, args.capacity_count, args.workers)
            finally:
                env.stop()
            sys.stdout.write("N=%d floor (ms): %s\n" % (n, json.dumps(
                {k: round(v * 1000, 2) for k, v in fl.items()})))
            sys.stdout.write("N=%d capacity: %s\n" % (n, json.dumps(
                {k: round(v, 2) for k, v in cap.items()})))
        return
    if not args.operator:
        p.error("--operator is required")
    if args.replicas > 1:
        args.shards = args.shards or args.replicas
        if args.deadline:
            hh, mm = args.deadline.split(":")
            now = time.time()
            d = now - now % 86400 + int(hh) * 3600 + int(mm) * 60
            args.deadline = d if d > now else d + 86400
        else:
            args.deadline = 0
        for n in sizes:
            t0 = time.time()
            r = run_sharded(args, n)
            r["wall_s"] = time.time() - t0
            report_sharded(r)
            sys.stdout.write("  (N=%d: %.0f s wall)\n" % (n, r["wall_s"]))
            sys.stdout.flush()
            all_results.append([r])
            if args.json_out:
                with open(args.json_out, "w") as f:
                    json.dump(all_results, f, indent=1, default=str)
            if not args.keep:
                import shutil
                shutil.rmtree(r["work"], ignore_errors=True)
        sys.stdout.write("\ntotal %.0f s; load average now %s\n" % (
            time.time() - t_start, open("/proc/loadavg").read().split()[:3]))
        return
    for n in sizes:
        results = []
        for i in range(args.repeat):
            t0 = time.time()
            r = run_once(args, n)
            r["wall_s"] = time.time() - t0
            log("N=%d run %d took %.0f s" % (n, i + 1, r["wall_s"]))
            results.append(r)
            if args.isolated_only:
                report_isolated(r)
            if not args.keep:
                import shutil
                shutil.rmtree(r["work"], ignore_errors=True)
        if not args.isolated_only:
            report(results)
        sys.stdout.write("  (N=%d: %s s wall per run)\n" % (
            n, ", ".join("%.0f" % r["wall_s"] for r in results)))
        sys.stdout.flush()
        all_results.append(results)
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump(all_results, f, indent=1, default=str)
    sys.stdout.write("\ntotal %.0f s; load average now %s\n" % (
        time.time() - t_start, open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
