"""Tests for the Agent Platform stand-in (agent_platform.py) and the Slurm simulator (slurm_sim.py).

    /usr/bin/python3 -m unittest tests/fakes/test_agent_platform.py      (from the repo root)

Standard library only.  The servers run as subprocesses on loopback ports; the simulator's clock
runs 60x faster than real time so that a one-minute time limit takes one real second.
"""

import base64
import hashlib
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import slurm_sim  # noqa: E402

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
AGENT_PLATFORM = os.path.join(HERE, "agent_platform.py")
SLURM_SIM = os.path.join(HERE, "slurm_sim.py")
CLOUD = "https://www.googleapis.com/auth/cloud-platform"
PROJECT, REGION, CLUSTER = "demo-project", "us-central1", "demo-cluster"
SCALE = 60.0  # simulated seconds per real second in the server tests
NEW_VERSIONS = ["v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42", "v0.0.43", "v0.0.44"]


# ---------------------------------------------------------------------------------------------
# helpers


def start_process(script, args, tmpdir, name):
    port_file = os.path.join(tmpdir, name + ".port")
    log = open(os.path.join(tmpdir, name + ".log"), "w")
    proc = subprocess.Popen([PYTHON, script, "--port", "0", "--port-file", port_file] + args,
                            stdout=log, stderr=log)
    deadline = time.time() + 10
    while time.time() < deadline:
        if os.path.exists(port_file):
            with open(port_file) as f:
                text = f.read().strip()
            if text:
                return proc, int(text), log
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    log.close()
    with open(os.path.join(tmpdir, name + ".log")) as f:
        raise RuntimeError("%s did not start:\n%s" % (name, f.read()))


def stop_process(proc, log):
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
    log.close()


class Client:
    def __init__(self, port):
        self.port = port
        self.token = None

    def request(self, method, path, body=None, headers=None, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def admin(self, name, body=None, method=None):
        method = method or ("GET" if body is None else "POST")
        status, _, data = self.request(method, "/__admin/" + name, body,
                                       {"Content-Type": "application/json"})
        assert status == 200, (status, data)
        return json.loads(data)

    def metadata_token(self):
        status, headers, data = self.request(
            "GET", "/computeMetadata/v1/instance/service-accounts/default/token",
            headers={"Metadata-Flavor": "Google"})
        assert status == 200, (status, data)
        return json.loads(data)["access_token"]

    def call_raw(self, envelope, token="default", project=PROJECT, region=REGION,
                 cluster=CLUSTER, headers=None, query="", timeout=10):
        h = {"Content-Type": "application/json"}
        if token == "default":
            token = self.token
        if token is not None:
            h["Authorization"] = "Bearer " + token
        h.update(headers or {})
        path = ("/v1beta1/projects/%s/locations/%s/modelDevelopmentClusters/%s:callSlurmRestApi"
                % (project, region, cluster)) + query
        body = envelope if isinstance(envelope, (bytes, str)) else json.dumps(envelope)
        return self.request("POST", path, body, h, timeout=timeout)

    def call(self, method, path, body=None, **kw):
        envelope = {"method": "HTTP_METHOD_" + method, "path": path}
        if body is not None:
            envelope["body"] = body
        status, headers, data = self.call_raw(envelope, **kw)
        return status, json.loads(data) if data else None

    def slurm(self, method, path, body=None, **kw):
        """A call that must pass the Google layer; returns (slurm status, slurm body)."""
        status, out = self.call(method, path, body, **kw)
        assert status == 200, (status, out)
        if "structuredBody" in out:
            return out["status"], out["structuredBody"]
        if "body" in out:
            try:
                return out["status"], json.loads(out["body"])
            except ValueError:
                return out["status"], out["body"]
        return out["status"], None


def submit_body(version, script, comment, name="e2e", time_limit=None, **extra):
    if version == "v0.0.38":
        job = {"name": name, "partition": "debug", "current_working_directory": "/tmp",
               "environment": {"PATH": "/bin:/usr/bin"}, "comment": comment}
        if time_limit:
            job["time_limit"] = time_limit
    else:
        job = {"name": name, "partition": "debug", "current_working_directory": "/tmp",
               "environment": ["PATH=/bin:/usr/bin"], "comment": comment}
        if time_limit:
            job["time_limit"] = {"set": True, "number": time_limit}
    job.update(extra)
    return {"script": script, "job": job}


def state_of(job):
    """(base state, flags) for both the string (v0.0.38/39) and the array (v0.0.40+) form."""
    js = job["job_state"]
    if isinstance(js, str):
        return (None, ["COMPLETING"]) if js == "COMPLETING" else (js, [])
    return js[0], js[1:]


def is_terminal(job):
    base, flags = state_of(job)
    return base in slurm_sim.TERMINAL_STATES and "COMPLETING" not in flags


def exit_of(version, job):
    """(exit status or None, signal or None) from any version's exit_code shape."""
    ec = job["exit_code"]
    if version == "v0.0.38":
        raw = ec
    elif version == "v0.0.39":
        raw = ec["number"]
    else:
        if "SIGNALED" in ec["status"]:
            return None, (ec["signal"]["id"]["number"], ec["signal"]["name"])
        return ec["return_code"]["number"], None
    if raw & 0x7F:
        return None, (raw & 0x7F, slurm_sim.SIGNALS[raw & 0x7F][0])
    return raw >> 8, None


# --- a pure-Python RSA key for RS256 tests -------------------------------------------------

def _probable_prime(n, rng):
    for p in (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47):
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for _ in range(16):
        x = pow(rng.randrange(2, n - 2), d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def make_rsa_key(bits=1024, seed=1234):
    rng = random.Random(seed)
    e = 65537
    while True:
        primes = []
        while len(primes) < 2:
            c = rng.getrandbits(bits // 2) | (1 << (bits // 2 - 1)) | 1
            if _probable_prime(c, rng) and (c - 1) % e:
                primes.append(c)
        p, q = primes
        n = p * q
        if p != q and n.bit_length() == bits:
            return n, e, pow(e, -1, (p - 1) * (q - 1)), p, q


def _der(tag, content):
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(b)]) + b + content


def _der_int(x):
    b = x.to_bytes((x.bit_length() + 8) // 8, "big")
    return _der(0x02, b)


def spki_pem(n, e):
    rsa = _der(0x30, _der_int(n) + _der_int(e))
    algo = _der(0x30, _der(0x06, bytes.fromhex("2a864886f70d010101")) + b"\x05\x00")
    der = _der(0x30, algo + _der(0x03, b"\x00" + rsa))
    b64 = base64.b64encode(der).decode()
    return "-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n" % "\n".join(
        b64[i:i + 64] for i in range(0, len(b64), 64))


def pem(kind, der):
    b64 = base64.b64encode(der).decode()
    return "-----BEGIN %s-----\n%s\n-----END %s-----\n" % (
        kind, "\n".join(b64[i:i + 64] for i in range(0, len(b64), 64)), kind)


def pkcs8_pem(key):
    n, e, d, p, q = key
    rsa = _der(0x30, b"".join(_der_int(x) for x in (
        0, n, e, d, p, q, d % (p - 1), d % (q - 1), pow(q, -1, p))))
    algo = _der(0x30, _der(0x06, bytes.fromhex("2a864886f70d010101")) + b"\x05\x00")
    return pem("PRIVATE KEY", _der(0x30, _der_int(0) + algo + _der(0x04, rsa)))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_jwt(claims, key=None, header=None):
    header = header or {"alg": "RS256", "typ": "JWT", "kid": "test-key"}
    signing_input = (b64url(json.dumps(header).encode()) + "." +
                     b64url(json.dumps(claims).encode())).encode()
    if key is None:
        signature = b"not-a-signature"
    else:
        n, e, d = key[:3]
        k = (n.bit_length() + 7) // 8
        t = bytes.fromhex("3031300d060960864801650304020105000420") + hashlib.sha256(
            signing_input).digest()
        em = b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t
        signature = pow(int.from_bytes(em, "big"), d, n).to_bytes(k, "big")
    return signing_input.decode() + "." + b64url(signature)


# ---------------------------------------------------------------------------------------------
# Simulator unit tests (manual clock, no HTTP)


class SimulatorTest(unittest.TestCase):
    def setUp(self):
        self.clock = slurm_sim.ManualClock()
        self.sim = slurm_sim.SlurmSimulator(cluster_name="c1", clock=self.clock)

    def submit(self, version, script, comment="t", **kw):
        resp = self.sim.handle("POST", "/slurm/%s/job/submit" % version,
                               body=submit_body(version, script, comment, **kw), user="alice")
        self.assertEqual(resp.status, 200, resp.body)
        return resp.body["job_id"]

    def get(self, version, job_id):
        return self.sim.handle("GET", "/slurm/%s/job/%s" % (version, job_id), user="alice")

    def test_parse_script(self):
        plan = slurm_sim.parse_script("#!/bin/bash\necho hi\nsleep 5\nsleep 1m; exit 3\n")
        self.assertEqual((plan.run_seconds, plan.exit_status, plan.has_shebang), (65, 3, True))
        plan = slurm_sim.parse_script("#!/bin/sh\n#SIM pending=7 signal=SEGV\nsleep 2 3\nexit\n")
        self.assertEqual((plan.run_seconds, plan.exit_status, plan.pending_seconds, plan.signal),
                         (5, 0, 7, 11))
        self.assertFalse(slurm_sim.parse_script("echo no shebang").has_shebang)
        self.assertEqual(slurm_sim.parse_script("#!/bin/sh\nexit 1\nexit 4\n").exit_status, 4)

    def test_next_job_id_restarts_numbering_but_skips_ids_in_use(self):
        # A recreated cluster hands out ids again; slurmctld never gives one in use.
        first = self.submit("v0.0.42", "#!/bin/bash\nsleep 10\n")
        self.sim.set_params(next_job_id=first)
        self.assertEqual(self.submit("v0.0.42", "#!/bin/bash\nsleep 10\n"), first + 1)
        self.sim.set_params(next_job_id=7)
        self.assertEqual(self.submit("v0.0.42", "#!/bin/bash\nsleep 10\n"), 7)
        self.assertEqual(self.sim.params()["next_job_id"], 8)
        with self.assertRaises(slurm_sim.SimError):
            self.sim.set_params(next_job_id=0)

    def test_deadline_as_slurmctld_keeps_it(self):
        """--deadline is a unix time ("uts<seconds>" in v0.0.38). slurmctld 22.05's scheduler
        (deadline_ok, deadline_time_limit): a job whose time limit would end after the deadline
        ends DEADLINE unstarted (exit_code 1); one it starts runs with its limit cut to the
        whole minutes left (TIMEOUT there); under a minute left leaves the limit as it was; a
        held job ends DEADLINE at the deadline."""
        for version in ("v0.0.38", "v0.0.42"):
            now = int(self.clock.now())

            def at(t):
                return "uts%d" % t if version == "v0.0.38" else t

            too_long = self.submit(version, "#!/bin/bash\nsleep 100\n", deadline=at(now + 300),
                                   time_limit=10)
            cut = self.submit(version, "#!/bin/bash\nsleep 1000\n", deadline=at(now + 150))
            short = self.submit(version, "#!/bin/bash\nsleep 100\n", deadline=at(now + 30))
            held = self.submit(version, "#!/bin/bash\nsleep 1\n", deadline=at(now + 3), hold=True)
            self.clock.advance(1)
            job = self.get(version, too_long).body["jobs"][0]
            self.assertEqual(state_of(job)[0], "DEADLINE", job)
            t = job["start_time"] if version == "v0.0.38" else job["start_time"]["number"]
            e = job["end_time"] if version == "v0.0.38" else job["end_time"]["number"]
            self.assertEqual(t, e, "never started")
            self.assertEqual(state_of(self.get(version, cut).body["jobs"][0])[0], "RUNNING")
            self.clock.advance(4)
            self.assertEqual(state_of(self.get(version, held).body["jobs"][0])[0], "DEADLINE")
            self.clock.advance(97)  # under a minute was left: it ran past its deadline
            job = self.get(version, short).body["jobs"][0]
            self.assertEqual(state_of(job)[0], "COMPLETED", job)
            self.clock.advance(19)  # 2 whole minutes after the start: the cut limit
            job = self.get(version, cut).body["jobs"][0]
            self.assertEqual(state_of(job)[0], "TIMEOUT", job)
            deadline = self.get(version, cut).body["jobs"][0]["deadline"]
            self.assertEqual(deadline if version == "v0.0.38" else deadline["number"], now + 150)

    def test_output_paths_in_each_versions_shape(self):
        """#14 item 5: v0.0.38 shows the paths as asked ("" for none); v0.0.39-v0.0.42
        slurm_get_job_stdout()'s, with %A %a %j %u %x and %% filled in, the working directory in
        front and Slurm's default for none; v0.0.43+ the paths as asked and stdout_expanded /
        stderr_expanded (expand_stdio_fields(), 25.05: "" for none, "(null)" for a node not
        chosen yet)."""
        nv = str(slurm_sim.NO_VAL32)
        for version in slurm_sim.VERSIONS:
            n = int(version[-2:])
            asked = self.submit(version, "#!/bin/bash\n#SIM pending=1\nsleep 5\n", name="tr",
                                standard_output="o/%x-%5j.%N.log", standard_error="/e/%u_%a-%%")
            default = self.submit(version, "#!/bin/bash\nsleep 5\n")
            pending = self.get(version, asked).body["jobs"][0]
            if n >= 43:
                self.assertEqual(pending["stdout_expanded"], "/tmp/o/tr-%05d.(null).log" % asked)
            self.clock.advance(2)
            job = self.get(version, asked).body["jobs"][0]
            plain = self.get(version, default).body["jobs"][0]
            node = job["batch_host"]
            self.assertTrue(node, job)
            if n == 38 or n >= 43:
                self.assertEqual((job["standard_output"], job["standard_error"]),
                                 ("o/%x-%5j.%N.log", "/e/%u_%a-%%"), version)
                self.assertEqual((plain["standard_output"], plain["standard_error"]), ("", ""))
            else:
                self.assertEqual(job["standard_output"], "/tmp/o/tr-%05d.%%N.log" % asked)
                self.assertEqual(job["standard_error"], "/e/alice_%s-%%" % nv)
                self.assertEqual(plain["standard_output"], "/tmp/slurm-%d.out" % default)
                self.assertEqual(plain["standard_error"], "/tmp/slurm-%d.out" % default)
            if n >= 43:
                self.assertEqual(job["stdout_expanded"], "/tmp/o/tr-%05d.%s.log" % (asked, node))
                self.assertEqual(job["stderr_expanded"], "/e/alice_%s-%%" % nv)
                self.assertEqual((plain["stdout_expanded"], plain["stderr_expanded"]), ("", ""))
            else:
                self.assertNotIn("stdout_expanded", job)

    def test_array_job_records_in_each_versions_shape(self):
        """#14 item 3: an `array` submit is one array job. While tasks are pending slurmctld
        shows them in the meta record (job_id = array_job_id, array_task_id NO_VAL,
        array_task_string "2-3%2" as xlate_array_task_str renders it); each task that starts is
        a record of its own with a new job id; the %2 throttle runs two at once; the last task
        keeps the array's id; GET of the array id answers every task; accounting has a record
        per task with array.job_id / array.task_id."""
        script = "#!/bin/bash\n#SIM array_fail=2\nsleep 10\n"
        for version in slurm_sim.VERSIONS:
            n = int(version[-2:])
            u = (lambda x: x) if n == 38 else (lambda x: x["number"] if x["set"] else None)
            aid = self.submit(version, script, comment="tag-" + version, array="0-3%2")
            body = self.get(version, aid).body
            self.assertEqual(len(body["jobs"]), 1, body)
            meta = body["jobs"][0]
            self.assertEqual((meta["job_id"], u(meta["array_job_id"]), u(meta["array_task_id"]),
                              meta["array_task_string"], u(meta["array_max_tasks"])),
                             (aid, aid, None, "0-3%2", 2), version)
            self.assertEqual(state_of(meta)[0], "PENDING")
            self.clock.advance(1)  # tasks 0 and 1 run, 2-3 pending (throttle)
            jobs = self.get(version, aid).body["jobs"]
            by_task = {u(j["array_task_id"]): j for j in jobs}
            self.assertEqual(sorted(by_task, key=lambda x: -1 if x is None else x),
                             [None, 0, 1], version)
            self.assertEqual(by_task[None]["array_task_string"], "2-3%2")
            self.assertEqual(by_task[None]["job_id"], aid)
            self.assertNotEqual(by_task[0]["job_id"], aid)
            self.assertEqual(state_of(by_task[0])[0], "RUNNING")
            listed = [j for j in self.sim.handle("GET", "/slurm/%s/jobs" % version,
                                                 user="alice").body["jobs"]
                      if j["comment"] == "tag-" + version]
            self.assertEqual(len(listed), 3)
            self.clock.advance(10.5)  # 0, 1 done; 2 (fails) and 3 run, 3 keeps the array id
            jobs = self.get(version, aid).body["jobs"]
            by_task = {u(j["array_task_id"]): j for j in jobs}
            self.assertEqual(sorted(by_task), [0, 1, 2, 3], version)
            self.assertEqual(by_task[3]["job_id"], aid)
            self.clock.advance(11)  # 0 and 1 left the live queue (MinJobAge 5 s) on their own
            jobs = self.get(version, aid).body["jobs"]
            states = {u(j["array_task_id"]): state_of(j)[0] for j in jobs}
            self.assertEqual(states, {2: "FAILED", 3: "COMPLETED"}, version)
            db = self.sim.handle("GET", "/slurmdb/%s/job/%d" % (version, aid), user="alice").body
            tasks = sorted((j["array"]["job_id"],
                            j["array"]["task_id"] if n <= 39 else j["array"]["task_id"]["number"])
                           for j in db["jobs"])
            self.assertEqual(tasks, [(aid, 0), (aid, 1), (aid, 2), (aid, 3)], version)

    def test_array_cancel_and_bad_spec(self):
        """DELETE of the array id cancels every task: running ones end CANCELLED, the pending
        remainder stays one meta record, CANCELLED. A spec slurmctld refuses is
        ESLURM_INVALID_ARRAY (2081); an index >= MaxArraySize (1001) too."""
        for version in ("v0.0.38", "v0.0.42"):
            n = int(version[-2:])
            u = (lambda x: x) if n == 38 else (lambda x: x["number"] if x["set"] else None)
            aid = self.submit(version, "#!/bin/bash\nsleep 100\n", array="0-9:3%1")
            self.clock.advance(1)
            self.sim.handle("DELETE", "/slurm/%s/job/%d" % (version, aid), user="alice")
            self.clock.advance(0.3)  # past the running task's COMPLETING
            jobs = self.get(version, aid).body["jobs"]
            got = {u(j["array_task_id"]): (state_of(j)[0], j["array_task_string"]) for j in jobs}
            self.assertEqual(got, {0: ("CANCELLED", ""), None: ("CANCELLED", "3,6,9%1")}, version)
            for bad in ("3-1", "1,,2", "0-1001", "x"):
                resp = self.sim.handle("POST", "/slurm/%s/job/submit" % version,
                                       body=submit_body(version, "#!/bin/bash\n", "t",
                                                        array=bad), user="alice")
                self.assertEqual(resp.status, 500, bad)
                codes = [e.get("error_number", e.get("error_code")) for e in resp.body["errors"]]
                self.assertIn(2081, codes, resp.body)

    def test_array_remainder_string_as_slurm_renders_it(self):
        f = slurm_sim.format_array_tasks
        self.assertEqual(f([2, 3], 2), "2-3%2")
        self.assertEqual(f([0, 1, 2, 3, 5], 0), "0-3,5")
        self.assertEqual(f(list(range(1, 40, 3)), 0), "1-37:3")
        self.assertEqual(f(list(range(0, 200, 2)), 0), "0-198:2")
        long = f([0, 1] + list(range(3, 300, 2)), 0)
        self.assertEqual((len(long), long[-3:]), (63, "..."))
        self.assertEqual(slurm_sim.parse_array_spec("1,3,5-9:2%4"), ([1, 3, 5, 7, 9], 4))
        self.assertIsNone(slurm_sim.parse_array_spec("1-3:0"))

    def test_lifecycle_and_completing_flag(self):
        jid = self.submit("v0.0.42", "#!/bin/bash\nsleep 10\n")
        self.assertEqual(self.get("v0.0.42", jid).body["jobs"][0]["job_state"], ["PENDING"])
        self.assertEqual(self.get("v0.0.38", jid).body["jobs"][0]["job_state"], "PENDING")
        self.clock.advance(0.5)
        job = self.get("v0.0.42", jid).body["jobs"][0]
        self.assertEqual(job["job_state"], ["RUNNING"])
        self.assertEqual(job["exit_code"]["status"], ["SUCCESS"])
        self.clock.advance(10.05)
        self.assertEqual(self.get("v0.0.42", jid).body["jobs"][0]["job_state"],
                         ["COMPLETED", "COMPLETING"])
        self.assertEqual(self.get("v0.0.39", jid).body["jobs"][0]["job_state"], "COMPLETING")
        self.clock.advance(0.2)
        job = self.get("v0.0.42", jid).body["jobs"][0]
        self.assertEqual(job["job_state"], ["COMPLETED"])
        self.assertEqual(job["end_time"]["number"] - job["start_time"]["number"], 10)
        self.clock.advance(4.9)
        self.assertEqual(self.get("v0.0.42", jid).status, 200)
        self.clock.advance(0.2)  # min_job_age (5 s) after the end of COMPLETING
        self.assertEqual(self.get("v0.0.42", jid).status, 404)
        resp = self.get("v0.0.38", jid)
        self.assertEqual((resp.status, resp.body["errors"][0]["error_number"]), (500, 2017))
        db = self.sim.handle("GET", "/slurmdb/v0.0.42/job/%d" % jid, user="alice")
        self.assertEqual(db.body["jobs"][0]["state"]["current"], ["COMPLETED"])

    def test_accounting_records_the_allocated_tres_in_each_versions_shape(self):
        """#14 item 4: tres.allocated elements {type, name, id, count}; unnamed TRES have a null
        name and a never-gathered count is null in dbv0.0.38, "" and -2 in v0.0.39+."""
        for version, shape in (("v0.0.38", {"gpus_per_node": "2", "nodes": 2}),
                               ("v0.0.42", {"tres_per_node": "gres/gpu:2", "minimum_nodes": 2,
                                            "maximum_nodes": 2})):
            jid = self.submit(version, "#!/bin/bash\nsleep 1\n", tasks=4, **shape)
            self.clock.advance(30)
            rec = self.sim.handle("GET", "/slurmdb/%s/job/%d" % (version, jid)).body["jobs"][0]
            alloc = {(t["type"], t["name"]): t["count"] for t in rec["tres"]["allocated"]}
            unnamed = None if version == "v0.0.38" else ""
            self.assertEqual(alloc[("cpu", unnamed)], 4, version)
            self.assertEqual(alloc[("node", unnamed)], 2, version)
            self.assertEqual(alloc[("gres", "gpu")], 4, version)
            self.assertEqual(alloc[("energy", unnamed)], None if version == "v0.0.38" else -2)
            self.assertGreater(rec["time"]["elapsed"], 0)

    def test_accounting_is_late(self):
        jid = self.submit("v0.0.40", "#!/bin/bash\nsleep 1\n")
        db = self.sim.handle("GET", "/slurmdb/v0.0.40/job/%d" % jid)
        self.assertEqual(db.body["jobs"], [])
        self.assertIn("found nothing", db.body["warnings"][0]["description"])
        db = self.sim.handle("GET", "/slurmdb/v0.0.38/job/%d" % jid)
        self.assertEqual(db.body["errors"][0]["error_number"], 9003)
        self.clock.advance(0.6)  # accounting shows t=0.1: submitted, still pending
        db = self.sim.handle("GET", "/slurmdb/v0.0.40/job/%d" % jid)
        self.assertEqual(db.body["jobs"][0]["state"]["current"], ["PENDING"])
        self.assertEqual(db.body["jobs"][0]["exit_code"]["status"], ["PENDING"])
        self.clock.advance(0.5)  # t=1.1, accounting t=0.6: running (started at 0.5)
        db = self.sim.handle("GET", "/slurmdb/v0.0.40/job/%d" % jid)
        self.assertEqual(db.body["jobs"][0]["state"]["current"], ["RUNNING"])
        self.clock.advance(0.7)  # t=1.8: ended at 1.5; accounting (t=1.3) still says RUNNING
        self.assertEqual(self.get("v0.0.40", jid).body["jobs"][0]["job_state"][0], "COMPLETED")
        db = self.sim.handle("GET", "/slurmdb/v0.0.40/job/%d" % jid)
        self.assertEqual(db.body["jobs"][0]["state"]["current"], ["RUNNING"])
        self.clock.advance(0.3)
        db = self.sim.handle("GET", "/slurmdb/v0.0.40/job/%d" % jid)
        self.assertEqual(db.body["jobs"][0]["state"]["current"], ["COMPLETED"])
        self.assertEqual(db.body["jobs"][0]["time"]["elapsed"], 1)

    def use_utc(self):
        """slurmdbd's local time is UTC for this test (restored after it)."""
        old_tz = os.environ.get("TZ")
        os.environ["TZ"] = "UTC"
        time.tzset()
        self.addCleanup(lambda: (os.environ.pop("TZ") if old_tz is None else
                                 os.environ.__setitem__("TZ", old_tz), time.tzset()))

    def test_accounting_search_starts_at_midnight_without_start_time(self):
        # slurmdb_job_cond_def_start_end(): no job ids, no states, no start_time -> midnight
        # (slurmdbd's local time; UTC here).
        self.use_utc()
        self.submit("v0.0.42", "#!/bin/bash\nsleep 1\n", name="yday")
        self.clock.advance(10)  # ended at t0+1.5 (t0 = 2023-11-14 22:13:20 UTC)

        def names(version, query):
            resp = self.sim.handle("GET", "/slurmdb/%s/jobs" % version, query=query)
            return resp.status, [j["name"] for j in resp.body["jobs"]]
        self.assertEqual(names("v0.0.42", {"job_name": "yday"}), (200, ["yday"]))
        self.clock.advance(2 * 3600)  # past midnight (local time)
        for v in ("v0.0.38", "v0.0.40", "v0.0.42"):
            self.assertEqual(names(v, {"job_name": "yday"}), (200, []), v)
            self.assertEqual(names(v, {"job_name": "yday", "start_time": "uts1699990000"}),
                             (200, ["yday"]), v)
            self.assertEqual(names(v, {"job_name": "yday", "start_time": "now-3hours"}),
                             (200, ["yday"]), v)
            self.assertEqual(names(v, {"job_name": "yday", "start_time": "now-1hours"}),
                             (200, []), v)
        # A bare epoch: parse_time() refuses it; data_parser v0.0.42+ reads it as a number.
        self.assertEqual(names("v0.0.38", {"job_name": "yday", "start_time": "1699990000"})[0],
                         500)
        self.assertEqual(names("v0.0.40", {"job_name": "yday", "start_time": "1699990000"})[0],
                         500)
        self.assertEqual(names("v0.0.42", {"job_name": "yday", "start_time": "1699990000"}),
                         (200, ["yday"]))

    def db_jobs(self, version, query):
        return self.sim.handle("GET", "/slurmdb/%s/jobs" % version, query=query, user="alice")

    def db_job(self, version, job_id):
        return self.sim.handle("GET", "/slurmdb/%s/job/%s" % (version, job_id), user="alice")

    @staticmethod
    def step_query(version, ids):
        """How several ids reach the `step` filter (parse_rest_query): dbv0.0.38/39 a CSV
        (sent as step=a%2Cb), v0.0.40+ a list (sent as step=a&step=b)."""
        ids = [str(i) for i in ids]
        return ",".join(ids) if int(version[-2:]) <= 39 else (ids if len(ids) > 1 else ids[0])

    def test_accounting_step_filter_is_the_union_of_job_lookups(self):
        """jobs?step=a,b fills job_cond->step_list as job/{id} does with one id, so it answers
        exactly the records job/a and job/b answer, in the same accounting-delay view, and
        other filters still narrow it."""
        a = self.submit("v0.0.42", "#!/bin/bash\nsleep 1\n", name="a")
        b = self.submit("v0.0.42", "#!/bin/bash\nsleep 100\n", name="b")
        self.submit("v0.0.42", "#!/bin/bash\nsleep 1\n", name="c")
        self.clock.advance(1.8)  # a ended at 1.5; accounting (t=1.3) still shows it RUNNING
        for version in ("v0.0.38", "v0.0.40", "v0.0.42"):
            resp = self.db_jobs(version, {"step": self.step_query(version, [a, b])})
            self.assertEqual(resp.status, 200, resp.body)
            self.assertEqual(sorted(j["job_id"] for j in resp.body["jobs"]), [a, b], version)
            self.assertEqual(resp.body["errors"], [], version)
            union = self.db_job(version, a).body["jobs"] + self.db_job(version, b).body["jobs"]
            self.assertEqual(sorted(j["job_id"] for j in resp.body["jobs"]),
                             sorted(j["job_id"] for j in union), version)
            self.assertEqual(resp.body["jobs"], sorted(union, key=lambda j: j["job_id"]))
            state = {j["job_id"]: j["state"]["current"] for j in resp.body["jobs"]}
            self.assertIn("RUNNING", state[a], version)
            resp = self.db_jobs(version, {"step": self.step_query(version, [a, b]),
                                          "job_name": "b"})
            self.assertEqual([j["job_id"] for j in resp.body["jobs"]], [b], version)

    def test_accounting_step_filter_array_id_gives_every_task(self):
        aid = self.submit("v0.0.42", "#!/bin/bash\nsleep 1\n", array="0-2")
        self.clock.advance(5)
        for version in ("v0.0.38", "v0.0.40", "v0.0.42"):
            n = int(version[-2:])
            task = (lambda j: j["array"]["task_id"]) if n <= 39 else (
                lambda j: j["array"]["task_id"]["number"])
            jobs = self.db_jobs(version, {"step": str(aid)}).body["jobs"]
            self.assertEqual(sorted((j["array"]["job_id"], task(j)) for j in jobs),
                             [(aid, 0), (aid, 1), (aid, 2)], version)
            self.assertEqual(sorted(j["job_id"] for j in jobs),
                             sorted(j["job_id"] for j in self.db_job(version, aid).body["jobs"]))
            # A task's own id next to the array's: each record once.
            other = next(j["job_id"] for j in jobs if j["job_id"] != aid)
            again = self.db_jobs(version,
                                 {"step": self.step_query(version, [other, aid])}).body["jobs"]
            self.assertEqual(sorted(j["job_id"] for j in again),
                             sorted(j["job_id"] for j in jobs), version)

    def test_accounting_step_filter_searches_from_epoch_without_start_time(self):
        # slurmdb_job_cond_def_start_end(): with a step list and no state, usage_start is 0.
        self.use_utc()
        jid = self.submit("v0.0.42", "#!/bin/bash\nsleep 1\n", name="yday")
        self.clock.advance(10 + 2 * 3600)  # ended before midnight (UTC), now past it
        for v in ("v0.0.38", "v0.0.40", "v0.0.42"):
            ids = [j["job_id"] for j in self.db_jobs(v, {"job_name": "yday"}).body["jobs"]]
            self.assertEqual(ids, [], v)
            ids = [j["job_id"] for j in self.db_jobs(v, {"step": str(jid)}).body["jobs"]]
            self.assertEqual(ids, [jid], v)
            # A given start_time still bounds it.
            ids = [j["job_id"] for j in self.db_jobs(v, {"step": str(jid),
                                                          "start_time": "now-1hours"}).body["jobs"]]
            self.assertEqual(ids, [], v)

    def test_accounting_step_filter_rejects_an_unparsable_id(self):
        jid = self.submit("v0.0.42", "#!/bin/bash\nsleep 1\n")
        self.clock.advance(5)
        for bad in ("abc", "%d,x" % jid, "", ",", "-1", "%d_1" % jid):
            for version in ("v0.0.38", "v0.0.39", "v0.0.40", "v0.0.42"):
                resp = self.db_jobs(version, {"step": bad})
                self.assertEqual(resp.status, 500, (bad, version))
                self.assertEqual(resp.body["jobs"], [])
                err = resp.body["errors"][0]
                self.assertEqual(err["error_number"], 9000, (bad, version))
                if version in ("v0.0.38", "v0.0.39"):
                    self.assertEqual((err["description"], err["source"]),
                                     ("Unable to parse job/step format", "step"))
                else:
                    self.assertEqual((err["description"], err["source"]),
                                     ("Rejecting request. Failure parsing query parameters",
                                      "_op_handler_jobs"))

    def test_accounting_step_filter_csv_only_up_to_v0039(self):
        a = self.submit("v0.0.42", "#!/bin/bash\nsleep 1\n")
        b = self.submit("v0.0.42", "#!/bin/bash\nsleep 1\n")
        self.clock.advance(5)
        csv = "%d,%d" % (a, b)
        self.assertEqual(self.db_jobs("v0.0.39", {"step": csv}).status, 200)
        for version in ("v0.0.40", "v0.0.42"):
            resp = self.db_jobs(version, {"step": csv})
            self.assertEqual(resp.status, 500, version)
            self.assertEqual(resp.body["errors"][0]["source"], "_op_handler_jobs")

    def test_rest_query_parsing_as_slurmrestd(self):
        parse = slurm_sim.parse_rest_query
        # A raw ',' (or any reserved character) fails the whole request.
        for text in ("step=1,2", "job_name=a b", "x=(1)"):
            resp = parse(text, 38)
            self.assertIsInstance(resp, slurm_sim.SlurmResponse, text)
            self.assertEqual((resp.status, resp.text), (400, "Unable to parse query."))
        self.assertEqual(parse("step=1%2C2&start_time=uts5", 38),
                         {"step": "1,2", "start_time": "uts5"})
        self.assertEqual(parse("job_name=a+b%21", 42), {"job_name": "a b!"})
        # A repeated key: 22.05/23.02 keep the last value, 23.11+ a list.
        self.assertEqual(parse("step=1&step=2", 39), {"step": "2"})
        self.assertEqual(parse("step=1&step=2&step=3", 40), {"step": ["1", "2", "3"]})
        self.assertEqual(parse("", 42), {})

    def test_accounting_step_filter_nothing_found(self):
        jid = self.submit("v0.0.42", "#!/bin/bash\nsleep 1\n")
        # Not in accounting yet (accounting_delay), then an id nobody has.
        for step in (str(jid), "%d" % (jid + 1000)):
            for version in ("v0.0.38", "v0.0.40", "v0.0.42"):
                resp = self.db_jobs(version, {"step": step})
                self.assertEqual((resp.status, resp.body["jobs"]), (200, []), (step, version))
                nothing = self.db_job(version, jid + 1000).body
                for key in ("errors", "warnings"):
                    self.assertEqual(resp.body.get(key), nothing.get(key), (key, version))
                if version == "v0.0.38":
                    self.assertEqual(resp.body["errors"][0]["error_number"], 9003)
                else:
                    self.assertIn("found nothing", resp.body["warnings"][0]["description"])
            self.clock.advance(5)

    def test_update_body_shape_per_release(self):
        def comment(version, jid):
            return self.get(version, jid).body["jobs"][0]["comment"]

        def update(version, jid, body):
            return self.sim.handle("POST", "/slurm/%s/job/%d" % (version, jid), body=body,
                                   user="alice")
        bare = {"comment": "bare"}
        wrapped = {"job": {"comment": "wrapped"}}
        both = {"comment": "both", "job": {"comment": "both"}}
        jid = self.submit("v0.0.39", "#!/bin/bash\nsleep 60\n")
        # 23.02.2+: the bare body; "job" is ignored silently (a wrapped-only body does nothing).
        self.assertEqual(update("v0.0.39", jid, bare).status, 200)
        self.assertEqual(comment("v0.0.39", jid), "bare")
        self.assertEqual(update("v0.0.39", jid, wrapped).status, 200)
        self.assertEqual(comment("v0.0.39", jid), "bare")
        self.assertEqual(update("v0.0.39", jid, both).status, 200)
        self.assertEqual(comment("v0.0.39", jid), "both")
        # 23.02.0/1: only {"job": {...}}.
        self.sim.set_params(v0039_release="23.02.1")
        resp = update("v0.0.39", jid, bare)
        self.assertEqual(resp.status, 422)
        self.assertIn("Specifing either", resp.body["errors"][0]["description"])
        self.assertEqual(resp.body["meta"]["Slurm"]["release"], "23.02.1")
        self.assertEqual(update("v0.0.39", jid, wrapped).status, 200)
        self.assertEqual(comment("v0.0.39", jid), "wrapped")
        self.assertEqual(update("v0.0.39", jid, both).status, 200)
        self.assertEqual(comment("v0.0.39", jid), "both")
        # v0.0.38 rejects the unknown key; v0.0.40+ warn about it and apply the bare fields.
        resp = update("v0.0.38", jid, both)
        self.assertEqual(resp.status, 400)
        self.assertEqual(resp.body["errors"][0]["description"], 'Unknown key "job"')
        self.assertEqual(update("v0.0.38", jid, {"comment": "38"}).status, 200)
        resp = update("v0.0.42", jid, {"comment": "42", "job": {"comment": "x"}})
        self.assertEqual(resp.status, 200)
        self.assertIn("Ignoring unknown field", resp.body["warnings"][0]["description"])
        self.assertEqual(comment("v0.0.42", jid), "42")

    def test_dbv0038_exit_code_bug(self):
        jid = self.submit("v0.0.38", "#!/bin/bash\nexit 3\n")
        self.clock.advance(5)
        job = self.get("v0.0.38", jid).body["jobs"][0]
        self.assertEqual((job["job_state"], job["exit_code"], job["state_reason"]),
                         ("FAILED", 768, "NonZeroExitCode"))
        rec = self.sim.handle("GET", "/slurmdb/v0.0.38/job/%d" % jid).body["jobs"][0]
        self.assertEqual(rec["state"]["current"], "FAILED")
        self.assertEqual(rec["exit_code"], {"status": "SUCCESS", "return_code": 0})
        rec = self.sim.handle("GET", "/slurmdb/v0.0.42/job/%d" % jid).body["jobs"][0]
        self.assertEqual(rec["exit_code"]["status"], ["ERROR"])
        self.assertEqual(rec["exit_code"]["return_code"]["number"], 3)

    def state(self, version, job_id):
        job = self.get(version, job_id).body["jobs"][0]
        st = job["job_state"]
        return (st if isinstance(st, str) else st[0]), job.get("state_reason")

    def test_hold_release_and_comment_update(self):
        for version, release in (("v0.0.38", {"hold": False}), ("v0.0.42", {"hold": False})):
            jid = self.submit(version, "#!/bin/bash\n#SIM pending=5\nsleep 10\n")
            resp = self.sim.handle("POST", "/slurm/%s/job/%d" % (version, jid), body={"hold": True})
            self.assertEqual(resp.status, 200, resp.body)
            self.clock.advance(30)
            self.assertEqual(self.state(version, jid), ("PENDING", "JobHeldUser"))
            resp = self.sim.handle("POST", "/slurm/%s/job/%d" % (version, jid), body=release)
            self.assertEqual(resp.status, 200, resp.body)
            self.clock.advance(1)
            self.assertEqual(self.state(version, jid)[0], "RUNNING")
            # Holding a running job is accepted without effect (22.05.8); INFINITE is refused.
            resp = self.sim.handle("POST", "/slurm/%s/job/%d" % (version, jid), body={"hold": True})
            self.assertEqual((resp.status, resp.body["errors"]), (200, []))
            self.assertEqual(self.state(version, jid)[0], "RUNNING")
            resp = self.sim.handle("POST", "/slurm/%s/job/%d" % (version, jid),
                                   body={"priority": 4294967295})
            self.assertEqual(resp.body["errors"][0]["error"], "Priority too large")
            resp = self.sim.handle("POST", "/slurm/%s/job/%d" % (version, jid),
                                   body={"comment": "mine now"})
            self.assertEqual(resp.status, 200, resp.body)
            self.assertEqual(self.get(version, jid).body["jobs"][0]["comment"], "mine now")
            # Unknown fields and unknown jobs are refused.
            resp = self.sim.handle("POST", "/slurm/%s/job/%d" % (version, jid), body={"nice": 5})
            self.assertEqual(resp.status, 400)
            resp = self.sim.handle("POST", "/slurm/%s/job/99999" % version, body={"hold": True})
            self.assertEqual(resp.status, 500)

    def test_dependency_orders_jobs_and_never_satisfied_pends(self):
        first = self.submit("v0.0.42", "#!/bin/bash\nsleep 20\n")
        second = self.submit("v0.0.42", "#!/bin/bash\nsleep 5\n",
                             dependency="afterok:%d" % first)
        bad = self.submit("v0.0.42", "#!/bin/bash\nsleep 5\n",
                          dependency="afternotok:%d" % first)
        self.clock.advance(5)
        self.assertEqual(self.state("v0.0.42", first)[0], "RUNNING")
        self.assertEqual(self.state("v0.0.42", second), ("PENDING", "Dependency"))
        self.clock.advance(20)
        self.assertEqual(self.state("v0.0.42", first)[0], "COMPLETED")
        self.assertEqual(self.state("v0.0.42", second)[0], "RUNNING")
        self.assertEqual(self.state("v0.0.42", bad), ("PENDING", "DependencyNeverSatisfied"))

    def test_forced_end_state_for_the_first_n_submissions(self):
        script = "#!/bin/bash\n#SIM end=NODE_FAIL fail_first=1\nsleep 2\n"
        a = self.submit("v0.0.42", script)
        b = self.submit("v0.0.42", script)
        self.clock.advance(4)
        self.assertEqual(self.state("v0.0.42", a)[0], "NODE_FAIL")
        self.assertEqual(self.state("v0.0.42", b)[0], "COMPLETED")

    def test_update_time(self):
        jid = self.submit("v0.0.42", "#!/bin/bash\nsleep 100\n")
        self.clock.advance(1)
        body = self.sim.handle("GET", "/slurm/v0.0.42/jobs/").body
        last = body["last_update"]["number"]
        self.clock.advance(10)
        for version in ("v0.0.38", "v0.0.42"):
            resp = self.sim.handle("GET", "/slurm/%s/jobs" % version,
                                   {"update_time": str(last + 1)})
            if version == "v0.0.38":
                self.assertEqual((resp.status, resp.body, resp.text), (304, None, None))
            else:
                self.assertEqual(resp.status, 200)
                self.assertEqual(resp.body["jobs"], [])
                self.assertEqual(resp.body["warnings"][0]["description"],
                                 "No job changes since update_time")
            # update_time == last change: all jobs again (slurmctld compares update_time - 1)
            resp = self.sim.handle("GET", "/slurm/%s/jobs" % version, {"update_time": str(last)})
            self.assertEqual([j["job_id"] for j in resp.body["jobs"]], [jid])
        self.sim.handle("DELETE", "/slurm/v0.0.42/job/%d" % jid, user="alice")
        resp = self.sim.handle("GET", "/slurm/v0.0.42/jobs", {"update_time": str(last + 1)})
        self.assertEqual(len(resp.body["jobs"]), 1)

    def test_v0038_validation(self):
        def post(job, script="#!/bin/bash\ntrue\n", **top):
            body = dict(top)
            if job is not None:
                body["job"] = job
            if script is not None:
                body["script"] = script
            return self.sim.handle("POST", "/slurm/v0.0.38/job/submit", body=body)

        good = {"name": "x", "current_working_directory": "/tmp", "environment": {"A": "1"}}
        # 22.05.8 refused the operator's integer deadline: parse_time() wants "uts<seconds>".
        for bad in (1900000000, "1900000000", "soon"):
            r = post(dict(good, deadline=bad))
            self.assertEqual(r.status, 400, bad)
            self.assertEqual(r.body["errors"][0], {"error": "Invalid deadline time",
                                                   "error_code": -1})
            self.assertEqual(r.body["errors"][1]["description"], 'Unable to process key "deadline"')
        self.assertEqual(post(dict(good, deadline="uts1900000000")).status, 200)
        r = post(dict(good, no_such_field=1))
        self.assertEqual(r.status, 400)
        self.assertEqual(r.body["errors"][0], {"description": 'Unknown key "no_such_field"',
                                               "source": "hsearch_r"})
        self.assertEqual(r.body["errors"][1]["error_code"], 9001)
        r = post(dict(good, environment=["PATH=/bin"]))
        self.assertEqual(r.status, 400)
        self.assertEqual(r.body["errors"][0]["error"], "environment must be a dictionary")
        r = post({k: v for k, v in good.items() if k != "environment"})
        self.assertEqual((r.status, r.body["errors"][0]["error_code"]), (400, 2127))
        r = post(dict(good, environment={}))
        self.assertEqual((r.status, r.body["errors"][0]["error_code"]), (400, 2127))
        r = post(dict(good, script="#!/bin/bash\n"), script=None)
        self.assertEqual(r.status, 400)  # script inside job: unknown key
        r = post(good, script=None)
        self.assertEqual((r.status, r.body["errors"][0]), (500, {"error_code": 2009,
                                                                 "error": "Job script not specified"}))
        r = post(dict(good, partition="nosuchpart"))
        self.assertEqual((r.status, r.body["errors"][0]["error_code"]), (500, 2000))
        r = post(dict(good, time_limit="abc"))
        self.assertEqual((r.status, r.body["errors"][0]["error"]),
                         (400, "Invalid time specification"))
        r = post(None)
        self.assertEqual((r.status, r.body["errors"][0]["error_code"]), (400, 9002))
        r = post(dict(good, Name="upper-case key is lower-cased", time_limit="1:30:00"))
        self.assertEqual(r.status, 200)
        self.assertEqual((r.body["step_id"], r.body["job_submit_user_msg"]), ("BATCH", ""))
        self.assertNotIn("warnings", r.body)
        job = self.get("v0.0.38", r.body["job_id"]).body["jobs"][0]
        self.assertEqual(job["time_limit"], 90)
        self.assertEqual(len(self.sim.submits), 14)  # every attempt, refused or not

    def test_new_version_validation(self):
        for version in NEW_VERSIONS:
            with self.subTest(version=version):
                n = int(version[-2:])

                def post(body):
                    return self.sim.handle("POST", "/slurm/%s/job/submit" % version, body=body)

                good = submit_body(version, "#!/bin/bash\ntrue\n", "c")
                r = post(dict(good, job=dict(good["job"], bogus=1)))
                self.assertEqual(r.status, 200)
                self.assertIn('Ignoring unknown field "bogus"',
                              r.body["warnings"][0]["description"])
                self.assertEqual("result" in r.body, n <= 41)
                r = post({"job": dict(good["job"], script="#!/bin/bash\ntrue\n")})
                self.assertEqual(r.status, 200, r.body)  # script inside job
                r = post({"job": dict(good["job"], environment={"PATH": "/bin"}),
                          "script": good["script"]})
                self.assertEqual(r.status, 200)  # environment as an object
                r = post({"job": {k: v for k, v in good["job"].items() if k != "environment"},
                          "script": good["script"]})
                self.assertEqual((r.status, r.body["errors"][0]["error_number"]), (500, 2127))
                self.assertEqual(r.body["errors"][0]["error"], "Environment is missing in job")
                r = post({"job": {k: v for k, v in good["job"].items()
                                  if k != "current_working_directory"},
                          "script": good["script"]})
                if n >= 40:
                    self.assertEqual((r.status, r.body["errors"][0]["error_number"]), (500, 2063))
                else:  # 23.02 accepts it; the job then fails to launch
                    self.assertEqual(r.status, 200)
                    self.clock.advance(1)
                    job = self.get(version, r.body["job_id"]).body["jobs"][0]
                    self.assertEqual((state_of(job)[0], job["state_reason"]),
                                     ("FAILED", "JobLaunchFailure"))
                r = post({"job": good["job"]})
                self.assertEqual(r.status, 422)
                r = post({"job": dict(good["job"], partition="nope"), "script": good["script"]})
                self.assertEqual((r.status, r.body["errors"][0]["error_number"]), (500, 2000))
                self.assertEqual(r.body["errors"][0]["error"], "Invalid partition name specified")
                self.assertNotIn("job_id", r.body)
                r = post({"job": dict(good["job"], tasks_per_node="many"),
                          "script": good["script"]})
                self.assertEqual(r.status, 500)
                r = post({"job": dict(good["job"], exclusive=["user"]), "script": good["script"]})
                self.assertEqual(bool(r.body["warnings"]), n >= 42)  # removed in v0.0.42

    def test_delete_forms(self):
        expected_unknown = {"v0.0.38": 500, "v0.0.39": 404, "v0.0.40": 404, "v0.0.41": 404,
                            "v0.0.42": 200, "v0.0.43": 200, "v0.0.44": 200}
        for version in slurm_sim.VERSIONS:
            with self.subTest(version=version):
                jid = self.submit(version, "#!/bin/bash\nsleep 100\n")
                self.clock.advance(1)
                r = self.sim.handle("DELETE", "/slurm/%s/job/%d" % (version, jid), user="alice")
                self.assertEqual(r.status, 200)
                self.assertEqual(r.body["errors"], [])
                if version >= "v0.0.42":
                    self.assertEqual(r.body["status"], [])
                job = self.get(version, jid).body["jobs"][0]
                self.assertEqual(state_of(job), (None, ["COMPLETING"]) if version <= "v0.0.39"
                                 else ("CANCELLED", ["COMPLETING"]))
                self.clock.advance(0.3)
                job = self.get(version, jid).body["jobs"][0]
                self.assertEqual(state_of(job)[0], "CANCELLED")
                self.assertEqual(exit_of(version, job), (None, (9, "KILL")))
                r = self.sim.handle("DELETE", "/slurm/%s/job/%d" % (version, jid), user="alice")
                self.assertEqual(r.status, 200)  # cancelling a finished job is safe
                if version >= "v0.0.42":
                    self.assertEqual(r.body["status"][0]["error"]["code"], 2021)
                r = self.sim.handle("DELETE", "/slurm/%s/job/999999" % version, user="alice")
                self.assertEqual(r.status, expected_unknown[version])
                if version >= "v0.0.42":
                    self.assertEqual(r.body["status"][0]["error"]["code"], 2017)
                    self.assertFalse(r.body["status"][0]["job_id"]["set"])
                else:
                    self.assertEqual(r.body["errors"][0]["error_number"], 2017)

    def test_cancel_pending_hold_and_other_user(self):
        jid = self.submit("v0.0.42", "#!/bin/bash\nsleep 100\n", hold=True)
        self.clock.advance(50)
        job = self.get("v0.0.42", jid).body["jobs"][0]
        self.assertEqual((job["job_state"], job["state_reason"]), (["PENDING"], "JobHeldUser"))
        r = self.sim.handle("DELETE", "/slurm/v0.0.42/job/%d" % jid, user="mallory")
        self.assertEqual(r.body["status"][0]["error"]["code"], 2002)
        r = self.sim.handle("DELETE", "/slurm/v0.0.38/job/%d" % jid, user="mallory")
        self.assertEqual((r.status, r.body["errors"][0]["error_number"]), (500, 2002))
        self.sim.handle("DELETE", "/slurm/v0.0.42/job/%d" % jid, user="alice")
        job = self.get("v0.0.42", jid).body["jobs"][0]
        self.assertEqual(job["job_state"], ["CANCELLED"])  # never ran: no COMPLETING
        self.assertEqual(job["exit_code"]["status"], ["SUCCESS"])

    def test_unknown_paths_and_non_json(self):
        r = self.sim.handle("GET", "/slurm/v0.0.37/jobs")
        self.assertEqual((r.status, r.text), (404, slurm_sim.NOT_FOUND_TEXT))
        r = self.sim.handle("GET", "/slurm/v0.0.42/nodes")
        self.assertEqual(r.status, 404)
        r = self.sim.handle("GET", "/slurm/v0.0.42/jobs", body={})
        self.assertEqual((r.status, r.text),
                         (400, "Unexpected http body provided for non-POST method"))
        r = self.sim.handle("GET", "/slurm/v0.0.38/job/abc")
        self.assertEqual((r.status, r.body["errors"][0]["error_number"]), (400, 9002))
        r = self.sim.handle("GET", "/slurm/v0.0.38/ping")
        self.assertEqual(r.body["pings"][0]["ping"], "UP")
        self.assertEqual(r.body["meta"]["Slurm"]["release"], "22.05.8")
        r = self.sim.handle("GET", "/slurm/v0.0.44/ping/")
        self.assertEqual(r.body["meta"]["slurm"]["release"], "25.11.7")


# ---------------------------------------------------------------------------------------------
# Server tests


class ServerTest(unittest.TestCase):
    extra_args = []

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fake-ap-")
        cls.proc, cls.port, cls.log = start_process(
            AGENT_PLATFORM, ["--time-scale", str(SCALE), "--min-job-age", "30", "--verbose",
                             "--cluster", "%s/%s/%s" % (PROJECT, REGION, CLUSTER),
                             "--cluster", "other-project/europe-west4/other-cluster"]
            + cls.extra_args, cls.tmp, "agent_platform")
        cls.c = Client(cls.port)
        cls.c.token = cls.c.metadata_token()

    @classmethod
    def tearDownClass(cls):
        stop_process(cls.proc, cls.log)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.c.admin("reset", {})
        self.c.token = self.c.metadata_token()

    def error_of(self, status_data):
        status, _, data = status_data
        return status, json.loads(data)["error"]


class LifecycleTest(ServerTest):
    def test_every_version_lifecycle(self):
        c = self.c
        jobs = {}
        script_ok = "#!/bin/bash\necho hello\nsleep 6\n"
        for version in slurm_sim.VERSIONS:
            tag = "lifecycle-" + version
            ids = {}
            for kind, script, limit in (
                    ("ok", script_ok, None),
                    ("fail", "#!/bin/bash\nsleep 6\nexit 3\n", None),
                    ("timeout", "#!/bin/bash\nsleep 600\n", 1),
                    ("cancel", "#!/bin/bash\nsleep 600\n", None)):
                status, body = c.slurm("POST", "/slurm/%s/job/submit" % version,
                                       submit_body(version, script, tag, name=kind,
                                                   time_limit=limit))
                self.assertEqual(status, 200, body)
                self.assertIsInstance(body["job_id"], int)
                self.assertEqual(body["errors"], [])
                ids[kind] = body["job_id"]
            jobs[version] = ids

        def get(version, job_id):
            return c.slurm("GET", "/slurm/%s/job/%d" % (version, job_id))

        # cancel each "cancel" job once it runs
        deadline = time.time() + 5
        pending = set(jobs)
        while pending and time.time() < deadline:
            for version in list(pending):
                status, body = get(version, jobs[version]["cancel"])
                if state_of(body["jobs"][0])[0] == "RUNNING":
                    status, body = c.slurm("DELETE", "/slurm/%s/job/%d" % (
                        version, jobs[version]["cancel"]))
                    self.assertEqual((status, body["errors"]), (200, []))
                    pending.discard(version)
            time.sleep(0.01)
        self.assertFalse(pending)

        final = {}
        deadline = time.time() + 8
        while len(final) < 4 * len(jobs) and time.time() < deadline:
            for version, ids in jobs.items():
                for kind, job_id in ids.items():
                    if (version, kind) in final:
                        continue
                    status, body = get(version, job_id)
                    self.assertEqual(status, 200, body)
                    if is_terminal(body["jobs"][0]):
                        final[(version, kind)] = body["jobs"][0]
            time.sleep(0.02)
        self.assertEqual(len(final), 4 * len(jobs))

        for version in slurm_sim.VERSIONS:
            with self.subTest(version=version):
                ok, fail = final[(version, "ok")], final[(version, "fail")]
                timeout, cancel = final[(version, "timeout")], final[(version, "cancel")]
                self.assertEqual(state_of(ok)[0], "COMPLETED")
                self.assertEqual(exit_of(version, ok), (0, None))
                self.assertEqual(state_of(fail)[0], "FAILED")
                self.assertEqual(exit_of(version, fail), (3, None))
                self.assertEqual(fail["state_reason"], "NonZeroExitCode")
                self.assertEqual(state_of(timeout)[0], "TIMEOUT")
                self.assertEqual(timeout["state_reason"], "TimeLimit")
                self.assertEqual(state_of(cancel)[0], "CANCELLED")
                self.assertEqual(exit_of(version, cancel), (None, (9, "KILL")))
                self.assertEqual(ok["comment"], "lifecycle-" + version)
                if version == "v0.0.38":
                    self.assertEqual(fail["exit_code"], 768)
                    self.assertIsInstance(ok["start_time"], int)
                    self.assertIsInstance(ok["job_state"], str)
                elif version == "v0.0.39":
                    self.assertEqual(fail["exit_code"], {"set": True, "infinite": False,
                                                         "number": 768})
                    self.assertIsInstance(ok["job_state"], str)
                else:
                    self.assertEqual(fail["exit_code"]["status"], ["ERROR"])
                    self.assertEqual(fail["exit_code"]["return_code"],
                                     {"set": True, "infinite": False, "number": 3})
                    self.assertEqual(set(ok["start_time"]), {"set", "infinite", "number"})
                    self.assertEqual(ok["job_state"], ["COMPLETED"])
                    self.assertEqual(cancel["exit_code"]["signal"]["name"], "KILL")
                # a 1-minute limit ends the job after 60 simulated seconds
                start = timeout["start_time"] if version <= "v0.0.39" else \
                    timeout["start_time"]["number"]
                end = timeout["end_time"] if version <= "v0.0.39" else \
                    timeout["end_time"]["number"]
                self.assertIn(end - start, (59, 60, 61))

        # after min-job-age (30 simulated s = 0.5 s) the live queue forgets; slurmdb remembers
        time.sleep(0.6)
        for version in slurm_sim.VERSIONS:
            with self.subTest(version=version):
                status, body = get(version, jobs[version]["ok"])
                self.assertEqual(status, 500 if version == "v0.0.38" else 404)
                self.assertEqual(body["jobs"], [])
                self.assertEqual(body["errors"][0]["error_number"], 2017)
                status, body = c.slurm("GET", "/slurmdb/%s/job/%d" % (version,
                                                                       jobs[version]["fail"]))
                self.assertEqual(status, 200)
                rec = body["jobs"][0]
                current = rec["state"]["current"]
                self.assertEqual(current, "FAILED" if version <= "v0.0.39" else ["FAILED"])
                if version >= "v0.0.40":
                    self.assertEqual(rec["exit_code"]["return_code"]["number"], 3)
                status, body = c.slurm("GET", "/slurmdb/%s/job/%d" % (version, 424242))
                self.assertEqual((status, body["jobs"]), (200, []))
                if version <= "v0.0.39":
                    self.assertEqual(body["errors"][0]["error_number"], 9003)
                else:
                    self.assertIn("found nothing", body["warnings"][0]["description"])

        table = c.admin("jobs?comment=lifecycle-v0.0.42")
        by_name = {j["name"]: j for j in table["jobs"]}
        self.assertTrue(by_name["cancel"]["cancelled"])
        self.assertEqual(by_name["cancel"]["cancel_requests"], 1)
        self.assertFalse(by_name["ok"]["in_live_queue"])
        self.assertEqual(table["submit_counts"]["by_comment"], {"lifecycle-v0.0.42": 4})
        self.assertEqual(table["submit_counts"]["duplicates_by_comment"],
                         {"lifecycle-v0.0.42": 4})

    def test_jobs_list_and_update_time(self):
        c = self.c
        for version in slurm_sim.VERSIONS:
            with self.subTest(version=version):
                tag = "list-" + version
                status, body = c.slurm("POST", "/slurm/%s/job/submit" % version,
                                       submit_body(version, "#!/bin/bash\nsleep 600\n", tag))
                job_id = body["job_id"]
                status, body = c.slurm("GET", "/slurm/%s/jobs/" % version)
                self.assertEqual(status, 200)
                found = [j for j in body["jobs"] if j["comment"] == tag]
                self.assertEqual([j["job_id"] for j in found], [job_id])
                if version >= "v0.0.40":
                    self.assertTrue(body["last_update"]["set"])
                future = int(time.time() + 10 ** 7)
                status, body = c.slurm("GET", "/slurm/%s/jobs/?update_time=%d" % (
                    version, future))
                if version == "v0.0.38":
                    self.assertEqual((status, body), (304, None))
                else:
                    self.assertEqual((status, body["jobs"]), (200, []))
                    self.assertEqual(body["warnings"][0]["description"],
                                     "No job changes since update_time")
                status, body = c.slurm("GET", "/slurm/%s/jobs?update_time=0" % version)
                self.assertIn(job_id, [j["job_id"] for j in body["jobs"]])
                c.slurm("DELETE", "/slurm/%s/job/%d" % (version, job_id))

    def test_ping_and_other_cluster(self):
        status, body = self.c.slurm("GET", "/slurm/v0.0.42/ping/")
        self.assertEqual(body["pings"][0]["pinged"], "UP")
        status, body = self.c.slurm("POST", "/slurm/v0.0.42/job/submit",
                                    submit_body("v0.0.42", "#!/bin/bash\ntrue\n", "x"),
                                    project="other-project", region="europe-west4",
                                    cluster="other-cluster")
        self.assertGreaterEqual(body["job_id"], 100000)  # separate job table


class EnvelopeTest(ServerTest):
    def expect_google(self, result, code, status, text=None):
        got_code, err = self.error_of(result)
        self.assertEqual((got_code, err["code"], err["status"]), (code, code, status), err)
        if text:
            self.assertIn(text, err["message"])
        types = [d["@type"] for d in err["details"]]
        self.assertIn("type.googleapis.com/google.rpc.ErrorInfo", types)
        return err

    def test_strict_envelope(self):
        c = self.c
        ok = {"method": "HTTP_METHOD_GET", "path": "/slurm/v0.0.42/jobs/"}
        self.assertEqual(c.call_raw(ok)[0], 200)
        self.expect_google(c.call_raw(dict(ok, extra=1)), 400, "INVALID_ARGUMENT",
                           'Unknown name "extra"')
        self.expect_google(c.call_raw(dict(ok, method="HTTP_METHOD_FETCH")), 400,
                           "INVALID_ARGUMENT", "method")
        self.expect_google(c.call_raw(dict(ok, method=1)), 400, "INVALID_ARGUMENT")
        self.expect_google(c.call_raw(dict(ok, method="GET")), 400, "INVALID_ARGUMENT")
        self.expect_google(c.call_raw({"path": ok["path"]}), 400, "INVALID_ARGUMENT")
        self.expect_google(c.call_raw(dict(ok, path="/openapi/v3")), 400, "INVALID_ARGUMENT",
                           "not a valid Slurm REST API path")
        self.expect_google(c.call_raw(dict(ok, path="slurm/v0.0.42/jobs")), 400,
                           "INVALID_ARGUMENT")
        self.expect_google(c.call_raw(dict(ok, path="https://x/slurm/v0.0.42/jobs")), 400,
                           "INVALID_ARGUMENT")
        self.expect_google(c.call_raw(dict(ok, body=[1])), 400, "INVALID_ARGUMENT")
        self.expect_google(c.call_raw({"method": "HTTP_METHOD_POST",
                                       "path": "/slurm/v0.0.42/job/submit"}), 400,
                           "INVALID_ARGUMENT", "body is required")
        self.expect_google(c.call_raw(b"{not json"), 400, "INVALID_ARGUMENT")
        self.expect_google(c.call_raw(b"[]"), 400, "INVALID_ARGUMENT")
        self.expect_google(c.call_raw(ok, headers={"Content-Type": "text/plain"}), 400,
                           "INVALID_ARGUMENT")
        self.expect_google(c.call_raw(ok, query="?foo=bar"), 400, "INVALID_ARGUMENT",
                           "Cannot bind query parameter")
        self.assertEqual(c.call_raw(ok, query="?alt=json")[0], 200)

    def test_slurm_level_answers_inside_envelope(self):
        c = self.c
        # a body on GET is slurmrestd's own 400 (text), inside a successful envelope
        status, out = c.call("GET", "/slurm/v0.0.42/jobs/", body={})
        self.assertEqual((status, out["status"]), (200, 400))
        self.assertEqual(out["body"], "Unexpected http body provided for non-POST method")
        status, out = c.call("DELETE", "/slurm/v0.0.42/job/1", body={"x": 1})
        self.assertEqual(out["status"], 400)
        # a version the cluster does not serve: slurmrestd's 404 text
        status, out = c.call("GET", "/slurm/v0.0.37/jobs/")
        self.assertEqual((status, out["status"]), (200, 404))
        self.assertNotIn("structuredBody", out)
        self.assertIn("Unable find requested URL", out["body"])
        status, out = c.call("GET", "/slurm/v0.0.42/job/999999")
        self.assertEqual((status, out["status"]), (200, 404))
        self.assertEqual(out["structuredBody"]["errors"][0]["error_number"], 2017)

    def test_size_limit(self):
        c = self.c
        big = submit_body("v0.0.42", "#!/bin/bash\n#" + "x" * 1_000_000 + "\n", "big")
        self.expect_google(c.call_raw({"method": "HTTP_METHOD_POST",
                                       "path": "/slurm/v0.0.42/job/submit", "body": big}),
                           400, "INVALID_ARGUMENT", "Request payload size exceeds the limit")
        almost = submit_body("v0.0.42", "#!/bin/bash\n#" + "x" * 990_000 + "\n", "almost")
        status, out = c.call("POST", "/slurm/v0.0.42/job/submit", almost)
        self.assertEqual((status, out["status"]), (200, 200))
        self.assertEqual(c.admin("jobs?comment=big")["submit_counts"]["total"], 0)

    def test_resources(self):
        c = self.c
        ok = {"method": "HTTP_METHOD_GET", "path": "/slurm/v0.0.42/jobs/"}
        self.expect_google(c.call_raw(ok, cluster="nope"), 404, "NOT_FOUND")
        self.expect_google(c.call_raw(ok, project="nope"), 404, "NOT_FOUND")
        self.expect_google(c.call_raw(ok, region="europe-west4"), 404, "NOT_FOUND")
        self.expect_google(c.call_raw(ok, headers={"Host": "europe-west4-aiplatform.googleapis.com"}),
                           400, "INVALID_ARGUMENT")
        self.assertEqual(c.call_raw(ok, headers={"Host": "us-central1-aiplatform.googleapis.com"}
                                    )[0], 200)
        status, _, data = c.request("POST", "/v1/projects/%s/locations/%s/modelDevelopmentClusters"
                                            "/%s:callSlurmRestApi" % (PROJECT, REGION, CLUSTER),
                                    json.dumps(ok), {"Authorization": "Bearer " + c.token})
        self.assertEqual(status, 404)

    def test_authentication_and_permission(self):
        c = self.c
        ok = {"method": "HTTP_METHOD_GET", "path": "/slurm/v0.0.42/jobs/"}
        result = c.call_raw(ok, token=None)
        self.assertEqual(result[1].get("www-authenticate"),
                         'Bearer realm="https://accounts.google.com/"')
        err = self.expect_google(result, 401, "UNAUTHENTICATED")
        self.assertEqual(err["details"][0]["reason"], "CREDENTIALS_MISSING")
        self.expect_google(c.call_raw(ok, token="garbage"), 401, "UNAUTHENTICATED")
        self.expect_google(c.call_raw(ok, headers={"Authorization": "Basic abc"}), 401,
                           "UNAUTHENTICATED")
        # short-lived token
        c.admin("token_lifetime", {"seconds": 0.3})
        token = c.admin("tokens", {"principal": "short@example.com"})["access_token"]
        self.assertEqual(c.call_raw(ok, token=token)[0], 200)
        time.sleep(0.4)
        err = self.expect_google(c.call_raw(ok, token=token), 401, "UNAUTHENTICATED")
        self.assertEqual(err["details"][0]["reason"], "ACCESS_TOKEN_EXPIRED")
        c.admin("token_lifetime", {"seconds": 3600})
        # a principal without access, and a token without the cloud-platform scope
        token = c.admin("tokens", {"principal": "intruder@example.com"})["access_token"]
        self.assertEqual(c.call_raw(ok, token=token)[0], 200)
        c.admin("access", {"principal": "intruder@example.com", "allowed": False})
        err = self.expect_google(c.call_raw(ok, token=token), 403, "PERMISSION_DENIED",
                                 "modelDevelopmentClusters.run")
        self.expect_google(c.call_raw(ok, token=token, cluster="unknown"), 403,
                           "PERMISSION_DENIED")
        c.admin("access", {"principal": "intruder@example.com", "allowed": True})
        self.assertEqual(c.call_raw(ok, token=token)[0], 200)
        c.admin("access", {"principal": "intruder@example.com", "allowed": False,
                           "cluster": "other-project/europe-west4/other-cluster"})
        self.assertEqual(c.call_raw(ok, token=token)[0], 200)
        self.expect_google(c.call_raw(ok, token=token, project="other-project",
                                      region="europe-west4", cluster="other-cluster"),
                           403, "PERMISSION_DENIED")
        token = c.admin("tokens", {"principal": "x@example.com",
                                   "scopes": ["https://www.googleapis.com/auth/devstorage"]}
                        )["access_token"]
        err = self.expect_google(c.call_raw(ok, token=token), 403, "PERMISSION_DENIED")
        self.assertEqual(err["details"][0]["reason"], "ACCESS_TOKEN_SCOPE_INSUFFICIENT")

    def test_expire_all_tokens_then_refresh(self):
        c = self.c
        ok = {"method": "HTTP_METHOD_GET", "path": "/slurm/v0.0.42/jobs/"}
        first = c.metadata_token()
        self.assertEqual(first, c.metadata_token())  # the metadata server caches its token
        self.assertGreaterEqual(c.admin("expire_all_tokens", {})["expired"], 1)
        self.expect_google(c.call_raw(ok, token=first), 401, "UNAUTHENTICATED")
        second = c.metadata_token()
        self.assertNotEqual(first, second)
        self.assertEqual(c.call_raw(ok, token=second)[0], 200)

    def test_short_metadata_tokens(self):
        c = self.c
        ok = {"method": "HTTP_METHOD_GET", "path": "/slurm/v0.0.42/ping/"}
        c.admin("token_lifetime", {"seconds": 0.3})
        try:
            token = c.metadata_token()
            self.assertEqual(c.call_raw(ok, token=token)[0], 200)
            time.sleep(0.4)
            self.expect_google(c.call_raw(ok, token=token), 401, "UNAUTHENTICATED")
            fresh = c.metadata_token()
            self.assertNotEqual(token, fresh)
            self.assertEqual(c.call_raw(ok, token=fresh)[0], 200)
        finally:
            c.admin("token_lifetime", {"seconds": 3600})

    def test_response_forms(self):
        c = self.c
        status, out = c.call("GET", "/slurm/v0.0.42/ping/")
        self.assertIn("structuredBody", out)
        self.assertNotIn("body", out)
        c.admin("response_form", {"form": "body"})
        status, out = c.call("GET", "/slurm/v0.0.42/ping/")
        self.assertNotIn("structuredBody", out)
        self.assertIsInstance(out["body"], str)
        self.assertEqual(json.loads(out["body"])["pings"][0]["pinged"], "UP")
        status, out = c.call("GET", "/slurm/v0.0.38/jobs?update_time=%d" % (time.time() + 1e7))
        self.assertEqual(out, {"status": 304})  # empty Slurm body: no body field at all
        c.admin("response_form", {"form": "structuredBody"})

    def test_keep_alive(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            for _ in range(3):
                conn.request("POST", "/v1beta1/projects/%s/locations/%s/modelDevelopmentClusters"
                                     "/%s:callSlurmRestApi" % (PROJECT, REGION, CLUSTER),
                             json.dumps({"method": "HTTP_METHOD_GET",
                                         "path": "/slurm/v0.0.42/ping/"}),
                             {"Authorization": "Bearer " + self.c.token,
                              "Content-Type": "application/json"})
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200)
                resp.read()
        finally:
            conn.close()


class CredentialsTest(ServerTest):
    def test_metadata_server(self):
        c = self.c
        path = "/computeMetadata/v1/instance/service-accounts/default/token"
        status, headers, data = c.request("GET", path)
        self.assertEqual(status, 403)
        self.assertIn(b"Missing Metadata-Flavor:Google header", data)
        status, _, _ = c.request("GET", path, headers={"Metadata-Flavor": "Google",
                                                       "X-Forwarded-For": "1.2.3.4"})
        self.assertEqual(status, 403)
        status, headers, data = c.request("GET", path + "?scopes=" + urllib.parse.quote(CLOUD),
                                          headers={"Metadata-Flavor": "Google"})
        self.assertEqual(status, 200)
        self.assertEqual(headers["metadata-flavor"], "Google")
        token = json.loads(data)
        self.assertEqual(set(token), {"access_token", "expires_in", "token_type"})
        self.assertEqual(token["token_type"], "Bearer")
        self.assertGreater(token["expires_in"], 3000)
        status, _, data = c.request("GET", "/computeMetadata/v1/instance/service-accounts/"
                                           "default/email", headers={"Metadata-Flavor": "Google"})
        self.assertEqual(data.decode(), "slurm-operator@demo-project.iam.gserviceaccount.com")
        status, _, data = c.request("GET", "/computeMetadata/v1/project/project-id",
                                    headers={"Metadata-Flavor": "Google"})
        self.assertEqual(data.decode(), PROJECT)
        status, _, data = c.request("GET", "/computeMetadata/v1/instance/service-accounts/"
                                           "default/?recursive=true",
                                    headers={"Metadata-Flavor": "Google"})
        self.assertEqual(json.loads(data)["scopes"], [CLOUD])

    def token_request(self, form, content_type="application/x-www-form-urlencoded"):
        status, _, data = self.c.request("POST", "/token", urllib.parse.urlencode(form),
                                         {"Content-Type": content_type})
        return status, json.loads(data)

    def test_refresh_token_grant(self):
        form = {"grant_type": "refresh_token", "client_id": "fake-client-id.apps.googleusercontent"
                ".com", "client_secret": "fake-client-secret", "refresh_token": "fake-refresh-token"}
        status, out = self.token_request(form)
        self.assertEqual(status, 200, out)
        self.assertEqual(out["token_type"], "Bearer")
        status, body = self.c.call("GET", "/slurm/v0.0.42/ping/", token=out["access_token"])
        self.assertEqual(status, 200)
        self.assertEqual(body["structuredBody"]["meta"]["client"]["user"], "dev_user_example_com")
        self.assertEqual(self.token_request(dict(form, client_secret="x"))[1]["error"],
                         "invalid_client")
        status, out = self.token_request(dict(form, refresh_token="x"))
        self.assertEqual((status, out["error"]), (400, "invalid_grant"))
        status, out = self.token_request(dict(form, grant_type="password"))
        self.assertEqual((status, out["error"]), (400, "unsupported_grant_type"))
        status, out = self.token_request(form, content_type="application/json")
        self.assertEqual(status, 400)

    def test_jwt_bearer_claims_without_key(self):
        now = int(time.time())
        claims = {"iss": "sa@demo-project.iam.gserviceaccount.com", "scope": CLOUD,
                  "aud": "http://127.0.0.1:%d/token" % self.port, "iat": now, "exp": now + 3600}

        def grant(c):
            return self.token_request({"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                       "assertion": make_jwt(c)})

        status, out = grant(claims)
        self.assertEqual(status, 200, out)
        status, body = self.c.call("GET", "/slurm/v0.0.42/ping/", token=out["access_token"])
        self.assertEqual(status, 200)
        for bad, error in ((dict(claims, aud="https://oauth2.googleapis.com/token"),
                            "invalid_grant"),
                           (dict(claims, exp=now + 7200), "invalid_grant"),
                           (dict(claims, iat=now - 4000, exp=now - 400), "invalid_grant"),
                           ({k: v for k, v in claims.items() if k != "scope"}, "invalid_scope"),
                           ({k: v for k, v in claims.items() if k != "iss"}, "invalid_grant")):
            status, out = grant(bad)
            self.assertEqual((status, out["error"]), (400, error), bad)
        status, out = self.token_request({"grant_type": "urn:ietf:params:oauth:grant-type:"
                                                        "jwt-bearer", "assertion": "a.b"})
        self.assertEqual(status, 400)


class SignedJwtTest(unittest.TestCase):
    """A second server: RS256 verification, a manual clock, one version, the body form."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fake-ap-jwt-")
        cls.key = make_rsa_key()
        key_file = os.path.join(cls.tmp, "sa.pem")
        with open(key_file, "w") as f:
            f.write(spki_pem(cls.key[0], cls.key[1]))
        cls.key2 = make_rsa_key(seed=99)
        json_file = os.path.join(cls.tmp, "sa.json")
        with open(json_file, "w") as f:
            json.dump({"type": "service_account", "project_id": PROJECT,
                       "private_key_id": "kid-2", "private_key": pkcs8_pem(cls.key2),
                       "client_email": "json@demo-project.iam.gserviceaccount.com",
                       "token_uri": "http://127.0.0.1/token"}, f)
        cls.proc, cls.port, cls.log = start_process(
            AGENT_PLATFORM, ["--sa-public-key", key_file, "--sa-public-key", json_file,
                             "--manual-clock", "--slurm-api-version", "v0.0.42",
                             "--response-form", "body", "--project", PROJECT,
                             "--region", REGION, "--cluster", CLUSTER],
            cls.tmp, "agent_platform_jwt")
        cls.c = Client(cls.port)

    @classmethod
    def tearDownClass(cls):
        stop_process(cls.proc, cls.log)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def grant(self, assertion):
        status, _, data = self.c.request(
            "POST", "/token", urllib.parse.urlencode(
                {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                 "assertion": assertion}),
            {"Content-Type": "application/x-www-form-urlencoded"})
        return status, json.loads(data)

    def test_signature_manual_clock_and_body_form(self):
        now = int(time.time())
        claims = {"iss": "ops@demo-project.iam.gserviceaccount.com", "scope": CLOUD,
                  "aud": "http://127.0.0.1:%d/token" % self.port, "iat": now, "exp": now + 3600}
        status, out = self.grant(make_jwt(claims))
        self.assertEqual((status, out["error_description"]), (400, "Invalid JWT Signature."))
        signed = make_jwt(claims, self.key)
        head, payload, sig = signed.split(".")
        tampered = head + "." + b64url(json.dumps(dict(claims, iss="evil@x")).encode()) + "." + sig
        self.assertEqual(self.grant(tampered)[0], 400)
        status, out = self.grant(signed)
        self.assertEqual(status, 200, out)
        self.c.token = out["access_token"]
        c = self.c
        status, out = c.call("POST", "/slurm/v0.0.42/job/submit",
                             submit_body("v0.0.42", "#!/bin/bash\nsleep 30\n", "manual"))
        self.assertIsInstance(out["body"], str)  # the `body` response form
        job_id = json.loads(out["body"])["job_id"]
        status, out = c.slurm("GET", "/slurm/v0.0.42/job/%d" % job_id)
        self.assertEqual(out["jobs"][0]["job_state"], ["PENDING"])
        c.admin("clock", {"advance": 1})
        self.assertEqual(c.slurm("GET", "/slurm/v0.0.42/job/%d" % job_id)[1]["jobs"][0][
            "job_state"], ["RUNNING"])
        c.admin("clock", {"advance": 30})
        self.assertEqual(c.slurm("GET", "/slurm/v0.0.42/job/%d" % job_id)[1]["jobs"][0][
            "job_state"], ["COMPLETED"])
        status, out = c.call("GET", "/slurm/v0.0.41/jobs/")  # only v0.0.42 is served
        self.assertEqual(out["status"], 404)

    def test_service_account_json_key(self):
        now = int(time.time())
        claims = {"iss": "json@demo-project.iam.gserviceaccount.com", "scope": CLOUD,
                  "aud": "http://127.0.0.1:%d/token" % self.port, "iat": now, "exp": now + 600}
        header = {"alg": "RS256", "typ": "JWT", "kid": "kid-2"}
        status, out = self.grant(make_jwt(claims, self.key2, header))
        self.assertEqual(status, 200, out)
        # the key belongs to json@...: a JWT signed with it for another issuer is rejected
        status, out = self.grant(make_jwt(dict(claims, iss="other@x"), self.key2, header))
        self.assertEqual((status, out["error"]), (400, "invalid_grant"))
        status, out = self.grant(make_jwt(claims, self.key2, dict(header, kid="kid-unknown")))
        self.assertEqual(status, 400)  # the JSON key is only tried for its own kid ...
        status, out = self.grant(make_jwt(claims, self.key, dict(header, kid="kid-unknown")))
        self.assertEqual(status, 200)  # ... while the bare PEM key (no kid, no email) is always


class FaultTest(ServerTest):
    def test_unavailable_then_success(self):
        c = self.c
        c.admin("faults", {"error": "UNAVAILABLE", "count": 2, "method": "GET",
                           "path": r"^/slurm/v0\.0\.42/jobs", "retry_delay": 1.5})
        self.assertEqual(c.call("GET", "/slurm/v0.0.42/ping/")[0], 200)  # not matched
        for _ in range(2):
            status, _, data = c.call_raw({"method": "HTTP_METHOD_GET",
                                          "path": "/slurm/v0.0.42/jobs/"})
            err = json.loads(data)["error"]
            self.assertEqual((status, err["status"]), (503, "UNAVAILABLE"))
            retry = [d for d in err["details"] if d["@type"].endswith("RetryInfo")]
            self.assertEqual(retry[0]["retryDelay"], "1.5s")
        self.assertEqual(c.call("GET", "/slurm/v0.0.42/jobs/")[0], 200)
        calls = c.admin("calls")
        self.assertEqual(calls["by_call_result"]["GET /slurm/v0.0.42/jobs/"],
                         {"fault:UNAVAILABLE": 2, "slurm_200": 1})
        self.assertEqual(c.admin("faults")["faults"], [])

    def test_resource_exhausted_and_other_errors(self):
        c = self.c
        c.admin("faults", {"faults": [
            {"error": "RESOURCE_EXHAUSTED", "retry_delay": 30, "retry_after": 31, "count": 1},
            {"error": "PERMISSION_DENIED", "count": 1},
            {"error": "NOT_FOUND", "count": 1},
            {"error": "INTERNAL", "count": 1},
            {"error": "DEADLINE_EXCEEDED", "count": 1}]})
        expected = [(429, "RESOURCE_EXHAUSTED"), (403, "PERMISSION_DENIED"), (404, "NOT_FOUND"),
                    (500, "INTERNAL"), (504, "DEADLINE_EXCEEDED")]
        for code, name in expected:
            status, headers, data = c.call_raw({"method": "HTTP_METHOD_GET",
                                                "path": "/slurm/v0.0.42/jobs/"})
            err = json.loads(data)["error"]
            self.assertEqual((status, err["code"], err["status"]), (code, code, name))
            if name == "RESOURCE_EXHAUSTED":
                self.assertEqual(headers["retry-after"], "31")
                self.assertIn({"@type": "type.googleapis.com/google.rpc.RetryInfo",
                               "retryDelay": "30s"}, err["details"])
        self.assertEqual(c.call("GET", "/slurm/v0.0.42/jobs/")[0], 200)

    def test_perform_then_lose_the_response(self):
        c = self.c
        c.admin("faults", {"action": "perform_then_drop", "method": "POST",
                           "path": "/job/submit$"})
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionResetError,
                                http.client.BadStatusLine, ConnectionAbortedError)):
            c.call("POST", "/slurm/v0.0.42/job/submit",
                   submit_body("v0.0.42", "#!/bin/bash\nsleep 600\n", "uid-1234"))
        table = c.admin("jobs?comment=uid-1234")
        self.assertEqual(len(table["jobs"]), 1)
        self.assertEqual(table["submit_counts"]["by_comment"], {"uid-1234": 1})
        job_id = table["jobs"][0]["job_id"]
        status, body = c.slurm("GET", "/slurm/v0.0.42/jobs/")
        self.assertEqual([j["job_id"] for j in body["jobs"] if j["comment"] == "uid-1234"],
                         [job_id])
        calls = c.admin("calls")
        self.assertEqual(calls["by_result"].get("dropped(after_perform):slurm_200"), 1)
        # "drop" loses the request before anything is done
        c.admin("faults", {"action": "drop", "path": "/job/submit$"})
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionResetError,
                                http.client.BadStatusLine, ConnectionAbortedError)):
            c.call("POST", "/slurm/v0.0.42/job/submit",
                   submit_body("v0.0.42", "#!/bin/bash\nsleep 600\n", "uid-5678"))
        self.assertEqual(c.admin("jobs?comment=uid-5678")["jobs"], [])

    def test_drop_then_perform_later(self):
        # The caller gets no answer; the job lands `later` seconds afterwards.
        c = self.c
        c.admin("faults", {"action": "drop_then_perform_later", "later": 0.6,
                           "method": "POST", "path": "/job/submit$"})
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionResetError,
                                http.client.BadStatusLine, ConnectionAbortedError)):
            c.call("POST", "/slurm/v0.0.42/job/submit",
                   submit_body("v0.0.42", "#!/bin/bash\nsleep 600\n", "uid-late"))
        self.assertEqual(c.admin("jobs?comment=uid-late")["jobs"], [], "not landed yet")
        deadline = time.monotonic() + 10
        while not c.admin("jobs?comment=uid-late")["jobs"] and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(len(c.admin("jobs?comment=uid-late")["jobs"]), 1)
        self.assertEqual(c.admin("calls")["by_result"].get("dropped(performed_later)"), 1)

    def test_perform_then_error(self):
        c = self.c
        c.admin("faults", {"action": "perform_then_error", "path": "/job/submit$"})
        status, _, data = c.call_raw({"method": "HTTP_METHOD_POST",
                                      "path": "/slurm/v0.0.42/job/submit",
                                      "body": submit_body("v0.0.42", "#!/bin/bash\nsleep 9\n",
                                                          "uid-deadline")})
        self.assertEqual((status, json.loads(data)["error"]["status"]),
                         (504, "DEADLINE_EXCEEDED"))
        self.assertEqual(len(c.admin("jobs?comment=uid-deadline")["jobs"]), 1)

    def test_perform_then_slurm_error(self):
        c = self.c
        for i, (status, errors) in enumerate([(504, [5004]), (500, [1004]), (200, [])]):
            c.admin("faults", {"action": "perform_then_slurm_error", "path": "/job/submit$",
                               "slurm_status": status, "slurm_errors": errors})
            tag = "uid-ambiguous-%d" % i
            got, body = c.slurm("POST", "/slurm/v0.0.42/job/submit",
                                submit_body("v0.0.42", "#!/bin/bash\nsleep 9\n", tag))
            self.assertEqual(got, status)
            self.assertNotIn("job_id", body)
            self.assertEqual([e["error_number"] for e in body["errors"]], errors)
            self.assertEqual(len(c.admin("jobs?comment=" + tag)["jobs"]), 1, "job was queued")

    def test_delay_probability_and_skip(self):
        c = self.c
        c.admin("faults", {"action": "delay", "delay": 0.3, "path": "/ping"})
        t0 = time.monotonic()
        self.assertEqual(c.call("GET", "/slurm/v0.0.42/ping/")[0], 200)
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)
        c.admin("faults", {"error": "INTERNAL", "probability": 0.5, "seed": 7, "path": "/ping"})
        codes = [c.call("GET", "/slurm/v0.0.42/ping/")[0] for _ in range(30)]
        self.assertTrue(0 < codes.count(500) < 30, codes)
        c.admin("faults", {"clear": True})
        c.admin("faults", {"error": "UNAVAILABLE", "skip": 1, "count": 1, "path": "/ping"})
        codes = [c.call("GET", "/slurm/v0.0.42/ping/")[0] for _ in range(3)]
        self.assertEqual(codes, [200, 503, 200])

    def test_slurm_unreachable(self):
        self.c.admin("faults", {"action": "slurm_unreachable", "count": 1})
        status, out = self.c.call("GET", "/slurm/v0.0.42/jobs/")
        self.assertEqual((status, out["status"]), (200, 502))
        self.assertEqual(out["structuredBody"]["errors"][0]["error_number"], 1001)

    def test_token_and_metadata_faults(self):
        c = self.c
        c.admin("faults", {"target": "metadata", "error": "UNAVAILABLE", "count": 1})
        status, _, _ = c.request("GET", "/computeMetadata/v1/instance/service-accounts/default/"
                                        "token", headers={"Metadata-Flavor": "Google"})
        self.assertEqual(status, 503)
        self.assertTrue(c.metadata_token())
        c.admin("faults", {"target": "token", "error": "UNAVAILABLE", "count": 1})
        status, _, data = c.request("POST", "/token", "grant_type=refresh_token",
                                    {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual((status, json.loads(data)["error"]), (503, "temporarily_unavailable"))

    def test_quota_and_bad_admin_input(self):
        c = self.c
        c.admin("quota", {"per_minute": 2, "retry_delay": 12})
        codes = [c.call("GET", "/slurm/v0.0.42/ping/")[0] for _ in range(3)]
        self.assertEqual(codes, [200, 200, 429])
        # A shorter window frees its calls sooner.
        c.admin("quota", {"per_minute": 2, "retry_delay": 1, "window_seconds": 0.5})
        codes = [c.call("GET", "/slurm/v0.0.42/ping/")[0] for _ in range(3)]
        self.assertEqual(codes, [200, 200, 429])
        time.sleep(0.6)
        self.assertEqual(c.call("GET", "/slurm/v0.0.42/ping/")[0], 200)
        c.admin("quota", {"per_minute": 0})
        status, _, data = c.request("POST", "/__admin/faults", {"error": "NOPE"},
                                    {"Content-Type": "application/json"})
        self.assertEqual(status, 400)
        status, _, _ = c.request("POST", "/__admin/clock", {"advance": 1})
        self.assertEqual(status, 400)  # the clock is not manual here
        self.assertEqual(c.request("GET", "/__admin/nope")[0], 404)

    def test_calls_counters(self):
        c = self.c
        c.admin("calls", {})
        _, body = c.slurm("POST", "/slurm/v0.0.42/job/submit",
                          submit_body("v0.0.42", "#!/bin/bash\nsleep 60\n", "count"))
        for _ in range(2):
            c.slurm("GET", "/slurm/v0.0.42/job/%d" % body["job_id"])
        c.call_raw({"method": "HTTP_METHOD_GET", "path": "/slurm/v0.0.42/jobs/"}, token=None)
        calls = c.admin("calls")
        self.assertEqual(calls["by_call"]["POST /slurm/v0.0.42/job/submit"], 1)
        self.assertEqual(calls["by_call"]["GET /slurm/v0.0.42/job/{job_id}"], 2)
        self.assertEqual(calls["by_result"]["UNAUTHENTICATED(missing)"], 1)
        self.assertEqual(calls["total"], 4)

    def test_garbage_does_not_kill_the_server(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.sendall(b"\x00\xffNOT HTTP AT ALL\r\n\r\n")
        s.recv(1000)
        s.close()
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.sendall(b"POST /token HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
        s.close()
        status, _, _ = self.c.request("POST", "/token", b"\xff\xfe",
                                      {"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(status, 400)
        self.assertEqual(self.c.call("GET", "/slurm/v0.0.42/ping/")[0], 200)


class ForwardTest(unittest.TestCase):
    """--forward-to: the stand-in fronts a slurmrestd (here slurm_sim.py's own HTTP server)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="fake-ap-fwd-")
        cls.sim, cls.sim_port, cls.sim_log = start_process(
            SLURM_SIM, ["--token", "s3cret", "--time-scale", "60"], cls.tmp, "slurmrestd")
        token_file = os.path.join(cls.tmp, "token")
        with open(token_file, "w") as f:
            f.write("SLURM_JWT=s3cret\n")
        cls.proc, cls.port, cls.log = start_process(
            AGENT_PLATFORM, ["--forward-to", "http://127.0.0.1:%d" % cls.sim_port,
                             "--slurm-user", "alice", "--slurm-token-file", token_file],
            cls.tmp, "agent_platform_fwd")
        cls.c = Client(cls.port)
        cls.c.token = cls.c.metadata_token()

    @classmethod
    def tearDownClass(cls):
        stop_process(cls.proc, cls.log)
        stop_process(cls.sim, cls.sim_log)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_forward(self):
        c = self.c
        status, body = c.slurm("POST", "/slurm/v0.0.40/job/submit",
                               submit_body("v0.0.40", "#!/bin/bash\nsleep 60\n", "fwd"))
        self.assertEqual(status, 200)
        job_id = body["job_id"]
        status, body = c.slurm("GET", "/slurm/v0.0.40/job/%d" % job_id)
        self.assertEqual(body["jobs"][0]["user_name"], "alice")
        status, body = c.slurm("GET", "/slurm/v0.0.38/jobs?update_time=%d" % (time.time() + 1e7))
        self.assertEqual((status, body), (304, None))
        status, out = c.call("GET", "/slurm/v0.0.37/ping")
        self.assertEqual((out["status"], out["body"]), (404, slurm_sim.NOT_FOUND_TEXT))
        table = c.admin("jobs")
        self.assertEqual(table["submit_counts"]["by_comment"], {"fwd": 1})
        # slurmrestd itself rejects a missing token with 401 text
        status, _, _ = Client(self.sim_port).request("GET", "/slurm/v0.0.40/ping")
        self.assertEqual(status, 401)


if __name__ == "__main__":
    unittest.main()
