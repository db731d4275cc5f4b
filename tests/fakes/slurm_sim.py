#!/usr/bin/python3
"""A simulated Slurm controller (slurmctld) + accounting (slurmdbd) behind slurmrestd's REST API.

Used by tests/fakes/agent_platform.py (the stand-in for Agent Platform's `callSlurmRestApi`) and
usable on its own as a slurmrestd stand-in (`python3 slurm_sim.py --port 6820`).

What it models (spec: /work/shared/reference/slurm-rest-versions.md and slurm-local-cluster.md):
  * one in-memory job table per simulated cluster, and a clock: real time (default), real time
    scaled by a factor (`time_scale`, 60 = one real second is one simulated minute), or manual
    (`ManualClock.advance`).  Every duration below is in *simulated* seconds and every timestamp in
    a response is simulated epoch seconds (the scaled clock starts at the real time).
  * job life: PENDING (pending_seconds, default 0.5) -> RUNNING -> COMPLETED / FAILED / TIMEOUT /
    CANCELLED / DEADLINE (the job's `deadline`, a unix time, as slurmctld 22.05 keeps it: a
    job whose time limit would end after it ends DEADLINE unstarted, one that starts has its
    limit cut to the whole minutes left, a held job ends DEADLINE at it), then a
    COMPLETING flag for completing_seconds (default 0.2), then the job stays in the live queue
    for min_job_age seconds (default 5) and disappears from /slurm/...; accounting (/slurmdb/...) shows the job as it was accounting_delay seconds ago (default 0.5) and keeps it.
  * the script decides what the job does (see parse_script()).
  * the JSON shapes, HTTP statuses and errors of each REST version v0.0.38 .. v0.0.44, each
    served with the handler behaviour of the Slurm release in which it is the newest version
    (v0.0.38: 22.05, v0.0.39: 23.02, v0.0.40: 23.11, v0.0.41: 24.05, v0.0.42: 24.11,
    v0.0.43: 25.05, v0.0.44: 25.11).

Only the Python standard library is used.
"""

import argparse
import copy
import heapq
import json
import math
import os
import re
import shlex
import sys
import threading
import time
import urllib.parse

VERSIONS = ["v0.0.38", "v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42", "v0.0.43", "v0.0.44"]

# Release (major, minor, micro) that serves each version with its own handler behaviour.
RELEASES = {
    38: ("22", "05", "8"),
    39: ("23", "02", "7"),
    40: ("23", "11", "11"),
    41: ("24", "05", "8"),
    42: ("24", "11", "7"),
    43: ("25", "05", "8"),
    44: ("25", "11", "7"),
}

NOT_FOUND_TEXT = "Unable find requested URL. Please view /openapi/v3 for API reference."

# slurm_strerror() texts (SchedMD/slurm src/common/slurm_errno.c).
STRERROR = {
    2081: "Invalid job array specification",
    -1: "Unspecified error",
    0: "No error",
    1001: "Communication connection failure",
    1004: "Communication shutdown failure",
    1007: "Protocol authentication error",
    1802: "Unable to contact slurm controller (receive failure)",
    2016: "Requested nodes are busy",
    5004: "Socket timed out on send/recv operation",
    2000: "Invalid partition name specified",
    2002: "Access/permission denied",
    2009: "Job script not specified",
    2017: "Invalid job id specified",
    2021: "Job/step already completing or completed",
    2054: "Invalid time specified",
    2063: "Job cannot be submitted without the current working directory specified.",
    2127: "Environment is missing in job",
    9000: "Query empty or not RFC7320 compliant",
    9001: "Failure during parsing",
    9002: "Jobs description entry not found, empty or not dictionary or list",
    9003: "Nothing found with query",
    9202: "Unable to convert Data type",
}

# signal number -> (short name as in v0.0.40+ "KILL", strsignal() text as in dbv0.0.38 "Killed")
SIGNALS = {
    1: ("HUP", "Hangup"), 2: ("INT", "Interrupt"), 3: ("QUIT", "Quit"),
    4: ("ILL", "Illegal instruction"), 6: ("ABRT", "Aborted"), 7: ("BUS", "Bus error"),
    8: ("FPE", "Floating point exception"), 9: ("KILL", "Killed"),
    10: ("USR1", "User defined signal 1"), 11: ("SEGV", "Segmentation fault"),
    12: ("USR2", "User defined signal 2"), 13: ("PIPE", "Broken pipe"),
    14: ("ALRM", "Alarm clock"), 15: ("TERM", "Terminated"), 18: ("CONT", "Continued"),
    19: ("STOP", "Stopped (signal)"), 20: ("TSTP", "Stopped"),
}
SIGNAL_BY_NAME = {v[0]: k for k, v in SIGNALS.items()}
# Signals that end a job when sent through DELETE; any other signal is delivered and ignored.
FATAL_CANCEL_SIGNALS = {1, 2, 3, 6, 9, 15}

UNLIMITED = "UNLIMITED"  # time limit marker
YEAR = 365 * 24 * 3600

TERMINAL_STATES = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY",
                   "DEADLINE"}

# ---------------------------------------------------------------------------------------------
# Accepted job description keys per version.
# v0.0.38: the openapi v0.0.38_job_properties (Debian slurmrestd 22.05.8 /openapi/v3) plus the
# sbatch aliases documented in slurm-rest-versions.md; keys are lower-cased first, unknown -> 400.
KEYS_38 = {
    "account", "account_gather_frequency", "argv", "array", "batch_features", "begin_time",
    "burst_buffer", "cluster_constraint", "comment", "constraints", "container",
    "core_specification", "cores_per_socket", "cpu_binding", "cpu_binding_hint", "cpu_frequency",
    "cpus_per_gpu", "cpus_per_task", "current_working_directory", "deadline", "delay_boot",
    "dependency", "distribution", "environment", "exclusive", "get_user_environment",
    "gpu_binding", "gpu_frequency", "gpus", "gpus_per_node", "gpus_per_socket", "gpus_per_task",
    "gres", "gres_flags", "hold", "kill_on_invalid_dependency", "licenses", "mail_type",
    "mail_user", "mcs_label", "memory_binding", "memory_per_cpu", "memory_per_gpu",
    "memory_per_node", "minimum_cpus_per_node", "minimum_nodes", "name", "nice", "no_kill",
    "nodes", "open_mode", "oversubscribe", "partition", "prefer", "priority", "qos", "requeue",
    "reservation", "signal", "sockets_per_node", "spread_job", "standard_error",
    "standard_input", "standard_output", "tasks", "tasks_per_core", "tasks_per_node",
    "tasks_per_socket", "thread_specification", "threads_per_core", "time_limit",
    "time_minimum", "wait_all_nodes", "wckey",
}
ALIASES_38 = {"job_name": "name", "cwd": "current_working_directory", "ntasks": "tasks"}

# v0.0.39 job_desc_msg (data_parser v0.0.39, Slurm 23.02).
KEYS_39 = {
    "account", "account_gather_frequency", "admin_comment", "allocation_node_list",
    "allocation_node_port", "argv", "array", "batch_features", "begin_time", "flags",
    "burst_buffer", "clusters", "cluster_constraint", "comment", "contiguous", "container",
    "container_id", "core_specification", "thread_specification", "cpu_binding",
    "cpu_binding_flags", "cpu_frequency", "cpus_per_tres", "crontab", "deadline", "delay_boot",
    "dependency", "end_time", "environment", "excluded_nodes", "extra", "constraints",
    "group_id", "hetjob_group", "immediate", "job_id", "kill_on_node_fail", "licenses",
    "mail_type", "mail_user", "mcs_label", "memory_binding", "memory_binding_type",
    "memory_per_tres", "name", "network", "nice", "tasks", "open_mode", "reserve_ports",
    "overcommit", "partition", "distribution_plane_size", "power_flags", "prefer", "hold",
    "priority", "profile", "qos", "reboot", "required_nodes", "requeue", "reservation",
    "script", "shared", "exclusive", "oversubscribe", "site_factor", "spank_environment",
    "distribution", "time_limit", "time_minimum", "tres_bind", "tres_freq", "tres_per_job",
    "tres_per_node", "tres_per_socket", "tres_per_task", "user_id", "wait_all_nodes",
    "kill_warning_flags", "kill_warning_signal", "kill_warning_delay",
    "current_working_directory", "cpus_per_task", "minimum_cpus", "maximum_cpus", "nodes",
    "minimum_nodes", "maximum_nodes", "minimum_boards_per_node", "minimum_sockets_per_board",
    "sockets_per_node", "threads_per_core", "tasks_per_node", "tasks_per_socket",
    "tasks_per_core", "tasks_per_board", "ntasks_per_tres", "minimum_cpus_per_node",
    "memory_per_cpu", "memory_per_node", "temporary_disk_per_node", "selinux_context",
    "required_switches", "standard_error", "standard_input", "standard_output",
    "wait_for_switch", "wckey", "x11", "x11_magic_cookie", "x11_target_host", "x11_target_port",
}
KEYS_40 = KEYS_39 | {"cores_per_socket", "rlimits"}
KEYS_41 = KEYS_40 | {"resv_mpi_ports", "segment_size"}
KEYS_42 = KEYS_41 - {"exclusive", "oversubscribe"}  # removed deprecated fields in v0.0.42
KEYS_43 = KEYS_42 | {"oom_kill_step"}
KEYS_44 = KEYS_43 | {"step_id"}
JOB_KEYS = {38: KEYS_38, 39: KEYS_39, 40: KEYS_40, 41: KEYS_41, 42: KEYS_42, 43: KEYS_43,
            44: KEYS_44}

# Field kinds used for type checks (v0.0.39+).  Keys not listed accept any JSON value.
STRING_FIELDS = {
    "account", "admin_comment", "array", "batch_features", "burst_buffer", "clusters",
    "cluster_constraint", "comment", "container", "container_id", "constraints",
    "current_working_directory", "dependency", "extra", "licenses", "mail_user", "mcs_label",
    "name", "network", "partition", "prefer", "qos", "reservation", "script", "standard_error",
    "standard_input", "standard_output", "wckey", "nodes", "user_id", "group_id",
    "selinux_context", "cpus_per_tres", "memory_per_tres", "tres_per_job", "tres_per_node",
    "tres_per_socket", "tres_per_task", "distribution",
}
INT_FIELDS = {
    "minimum_nodes", "maximum_nodes", "tasks", "tasks_per_node", "tasks_per_socket",
    "tasks_per_core", "tasks_per_board", "cpus_per_task", "minimum_cpus", "maximum_cpus",
    "minimum_cpus_per_node", "nice", "sockets_per_node", "threads_per_core", "cores_per_socket",
    "temporary_disk_per_node", "ntasks_per_tres", "core_specification", "thread_specification",
    "site_factor", "deadline", "delay_boot", "end_time", "job_id",
}
NO_VAL_FIELDS = {
    "time_limit", "time_minimum", "memory_per_node", "memory_per_cpu", "priority",
    "required_switches", "kill_warning_delay", "begin_time", "distribution_plane_size",
    "segment_size",
}
BOOL_FIELDS = {
    "hold", "requeue", "contiguous", "overcommit", "reboot", "immediate", "kill_on_node_fail",
    "wait_all_nodes", "oversubscribe",
}


class SimError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Clocks


class RealClock:
    """Simulated epoch seconds: the real time at start, then `scale` simulated seconds per real
    second."""

    def __init__(self, scale=1.0):
        if scale <= 0:
            raise ValueError("time scale must be > 0")
        self.scale = float(scale)
        self._epoch0 = time.time()
        self._mono0 = time.monotonic()

    @property
    def mode(self):
        return "real" if self.scale == 1.0 else "scaled"

    def now(self):
        return self._epoch0 + (time.monotonic() - self._mono0) * self.scale

    def advance(self, seconds):
        raise SimError("the clock is not manual (start with --manual-clock)")

    def describe(self):
        return {"mode": self.mode, "scale": self.scale, "now": self.now()}


class ManualClock:
    """A clock that only moves when told to (unit tests)."""

    def __init__(self, start=1_700_000_000.0):
        self._now = float(start)
        self._lock = threading.Lock()
        self.scale = None
        self.mode = "manual"

    def now(self):
        with self._lock:
            return self._now

    def advance(self, seconds):
        seconds = float(seconds)
        if seconds < 0 or math.isnan(seconds):
            raise SimError("advance must be >= 0")
        with self._lock:
            self._now += seconds
            return self._now

    def describe(self):
        return {"mode": "manual", "scale": None, "now": self.now()}


# ---------------------------------------------------------------------------------------------
# Scripts

_DURATION_RE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")
# Base states a script can be made to end in (#SIM end=STATE), with slurmctld's state reason.
FORCED_END_REASONS = {"NODE_FAIL": "NodeDown", "BOOT_FAIL": "NodeDown", "PREEMPTED": "None",
                      "OUT_OF_MEMORY": "OutOfMemory", "DEADLINE": "DeadLine"}

_SIM_DIRECTIVE_RE = re.compile(r"^#\s*SIM\s+(.*)$", re.IGNORECASE)


class ScriptPlan:
    def __init__(self):
        self.run_seconds = 0.0
        self.exit_status = 0
        self.signal = None  # script ends killed by this signal (#SIM signal=N)
        self.pending_seconds = None  # per-job override (#SIM pending=N)
        self.has_shebang = False
        # #SIM end=NODE_FAIL [fail_first=N]: the job ends in that state after its sleeps (only
        # the first N jobs submitted with the same script text, when fail_first is given).
        self.end_state = None
        self.fail_first = None
        # #SIM array_fail=2,5 [array_fail_first=N]: those array tasks exit 1 (only in the first
        # N array jobs submitted with the same script text, when array_fail_first is given).
        self.array_fail = set()
        self.array_fail_first = None

    def as_dict(self):
        return {"run_seconds": self.run_seconds, "exit_status": self.exit_status,
                "signal": self.signal, "pending_seconds": self.pending_seconds,
                "has_shebang": self.has_shebang}


def parse_script(text):
    """How the simulator "runs" a batch script.

    * The first line must start with `#!`, else the job fails like real Slurm does: FAILED,
      exit code 8 (ENOEXEC, raw wait status 2048), after starting.
    * Each `sleep N` command (N in seconds, optional s/m/h/d suffix, several arguments are summed
      like coreutils sleep) adds N simulated seconds of run time; all of them are summed, wherever
      they are.  Commands may be separated by newlines, `;`, `&&` or `||`.
    * The job's exit status is the N of the last `exit N` command in the text (`exit` alone is 0;
      a non-numeric argument such as `exit $rc` counts as 1); without any `exit` it is 0.
      The text is not executed: conditionals and loops are not evaluated.
    * Directives in comments: `#SIM pending=SECONDS` (time spent PENDING for this job),
      `#SIM signal=N|NAME` (the script dies by that signal after its sleeps: FAILED, raw wait
      status N).
    Anything else is ignored.
    """
    plan = ScriptPlan()
    lines = text.splitlines()
    plan.has_shebang = bool(lines) and lines[0].startswith("#!")
    for line in lines:
        stripped = line.strip()
        m = _SIM_DIRECTIVE_RE.match(stripped)
        if m:
            for item in m.group(1).split():
                key, _, value = item.partition("=")
                key = key.lower()
                try:
                    if key == "pending":
                        plan.pending_seconds = max(0.0, float(value))
                    elif key == "signal":
                        plan.signal = _parse_signal(value)
                    elif key == "end" and value.upper() in FORCED_END_REASONS:
                        plan.end_state = value.upper()
                    elif key == "fail_first":
                        plan.fail_first = max(0, int(value))
                    elif key == "array_fail":
                        plan.array_fail = {int(x) for x in value.split(",") if x}
                    elif key == "array_fail_first":
                        plan.array_fail_first = max(0, int(value))
                except (ValueError, SimError):
                    pass
            continue
        if stripped.startswith("#") or not stripped:
            continue
        for command in re.split(r";|&&|\|\||\n", stripped):
            try:
                words = shlex.split(command, comments=True)
            except ValueError:
                words = command.split()
            if not words:
                continue
            if words[0] == "sleep":
                for arg in words[1:]:
                    d = _DURATION_RE.match(arg)
                    if d:
                        plan.run_seconds += float(d.group(1)) * {
                            "": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[d.group(2)]
            elif words[0] == "exit":
                if len(words) < 2:
                    plan.exit_status = 0
                else:
                    try:
                        plan.exit_status = int(words[1]) & 0xFF
                    except ValueError:
                        plan.exit_status = 1
    return plan


def parse_slurm_time(value, now, allow_epoch=False):
    """The subset of Slurm's parse_time() (src/common/parse_time.c) the operator and tests use:
    "uts<epoch>" (UTC), "now", "now[+-]N[seconds|minutes|hours|days|weeks]", and, when
    allow_epoch (data_parser v0.0.42+ detects numbers first), a bare epoch. None: unparsable."""
    if not isinstance(value, str):
        return None
    if allow_epoch and re.match(r"^\d+$", value):
        return float(value)
    m = re.match(r"^uts(\d+)$", value, re.I)
    if m:
        uts = int(m.group(1))
        return float(uts) if uts >= 1000000 else None
    m = re.match(r"^now(?:([+-])(\d+)(seconds|minutes|hours|days|weeks)?)?$", value, re.I)
    if m:
        if not m.group(1):
            return now
        unit = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400,
                "weeks": 604800}[(m.group(3) or "seconds").lower()]
        delta = int(m.group(2)) * unit
        return now + delta if m.group(1) == "+" else now - delta
    return None


def _parse_signal(value):
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 < value < 65:
            return value
        raise SimError("bad signal")
    s = str(value).strip().upper()
    if s.isdigit():
        n = int(s)
        if 0 < n < 65:
            return n
        raise SimError("bad signal")
    if s.startswith("SIG"):
        s = s[3:]
    if s in SIGNAL_BY_NAME:
        return SIGNAL_BY_NAME[s]
    raise SimError("bad signal")


def parse_time_spec(value):
    """sbatch --time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S -> minutes (rounded up)."""
    s = str(value).strip()
    if s.upper() in ("INFINITE", "UNLIMITED", "-1"):
        return UNLIMITED
    m = re.match(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$", s)
    if not m:
        raise SimError("Invalid time specification")
    days, a, b, c = m.groups()
    if days is not None:
        hours, minutes, seconds = int(a), int(b or 0), int(c or 0)
        total = int(days) * 86400 + hours * 3600 + minutes * 60 + seconds
    elif c is not None:
        total = int(a) * 3600 + int(b) * 60 + int(c)
    elif b is not None:
        total = int(a) * 60 + int(b)
    else:
        total = int(a) * 60
    minutes = int(math.ceil(total / 60.0))
    return UNLIMITED if minutes == 0 else minutes


# ---------------------------------------------------------------------------------------------
# Jobs


# ---------------------------------------------------------------------------------------------
# Array jobs

MAX_ARRAY_SIZE = 1001  # slurm.conf MaxArraySize default: indexes 0..1000


def parse_array_spec(text):
    """(sorted indexes, throttle or 0) of an `array` (sbatch --array) value, as slurmctld's
    _valid_array_inx/_parse_array_tok (job_mgr.c) and the `%` throttle read it; None when
    slurmctld refuses it (ESLURM_INVALID_ARRAY)."""
    if not isinstance(text, str) or not text:
        return None
    spec, _, throttle = text.partition("%")
    max_tasks = 0
    if _:
        if not throttle.isdigit():
            return None
        max_tasks = int(throttle)
    out = set()
    for tok in spec.split(","):
        m = re.match(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$", tok)
        if not m:
            return None
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) is not None else first
        step = int(m.group(3)) if m.group(3) is not None else 1
        if last < first or step < 1 or last >= MAX_ARRAY_SIZE:
            return None
        out.update(range(first, last + 1, step))
    return sorted(out), max_tasks


def format_array_tasks(indexes, max_tasks):
    """array_task_string of a pending remainder record as the client library renders it
    (xlate_array_task_str, slurm_protocol_defs.c): "N-M:S" for a long even step, else
    bit_fmt's "0-3,5" cut at SLURM_BITSTR_LEN (64) with "...", then "%T" for a throttle."""
    idx = sorted(indexes)
    out = None
    if idx and idx[-1] - idx[0] > 10 and len(idx) > 5 and (idx[0] + 1) not in idx:
        steps = {b - a for a, b in zip(idx, idx[1:])}
        if len(steps) == 1:
            out = "%d-%d:%d" % (idx[0], idx[-1], steps.pop())
    if out is None:
        parts, i = [], 0
        while i < len(idx):
            j = i
            while j + 1 < len(idx) and idx[j + 1] == idx[j] + 1:
                j += 1
            parts.append(str(idx[i]) if i == j else "%d-%d" % (idx[i], idx[j]))
            i = j + 1
        out = ",".join(parts)
        if len(out) > 61:
            out = out[:60] + "..."
    if max_tasks:
        out += "%%%d" % max_tasks
    return out


def schedule_array(count, base_start, run_seconds, max_tasks):
    """Start times of `count` tasks (in index order) that each run `run_seconds`, at most
    `max_tasks` at once (0: no limit), all eligible at base_start."""
    import heapq as _hq
    starts, running = [], []
    for _ in range(count):
        if max_tasks and len(running) >= max_tasks:
            t = max(base_start, _hq.heappop(running))
        else:
            t = base_start
        starts.append(t)
        _hq.heappush(running, t + run_seconds)
    return starts


class SimJob:
    def __init__(self, job_id, api_version, user, principal, desc, script, plan, submit_time,
                 pending_seconds):
        self.job_id = job_id
        self.api_version = api_version
        self.user_name = user
        self.principal = principal
        self.raw_job = desc["raw"]
        self.name = desc["name"]
        self.partition = desc["partition"]
        self.comment = desc["comment"]
        self.cwd = desc["cwd"]
        self.environment = desc["environment"]
        self.account = desc["account"]
        self.qos = desc["qos"]
        self.time_limit = desc["time_limit"]  # minutes or UNLIMITED
        # --deadline (unix time): Slurm ends the job there, state DEADLINE, pending or running.
        raw_deadline = desc.get("deadline", (desc.get("raw") or {}).get("deadline"))
        self.deadline = (raw_deadline if isinstance(raw_deadline, int) and
                         not isinstance(raw_deadline, bool) and raw_deadline > 0 else None)
        self.stdout = desc["stdout"]
        self.stderr = desc["stderr"]
        self.stdin = desc["stdin"]
        self.nodes_requested = desc["nodes"]
        self.tasks = desc["tasks"]
        self.hold = desc["hold"]
        # Slurm's --dependency, e.g. "afterok:12:13,afterany:14": [(condition, job id), ...]
        self.dependency_text = desc.get("dependency") or ""
        self.dependencies = []
        for part in filter(None, self.dependency_text.split(",")):
            cond, _, ids = part.partition(":")
            for jid in filter(None, ids.split(":")):
                self.dependencies.append((cond, int(jid)))
        self.jobs_ref = {}          # the simulator's jobs, to resolve dependencies
        self.forced_end = plan.end_state  # cleared by the simulator past fail_first
        self.release_time = None    # when a hold was released
        self.launch_failure = desc.get("launch_failure")  # (reason, raw exit status)
        self.script = script
        self.plan = plan
        self.submit_time = submit_time
        pend = plan.pending_seconds if plan.pending_seconds is not None else pending_seconds
        self.base_start = submit_time + pend
        self.cancel_time = None
        self.cancel_signal = None
        self.cancel_requests = 0
        self.signals_sent = []
        self.kill_request_user = None
        # Array tasks: the array's id, this task's index, the throttle, every task of the array
        # (shared list), and whether this task holds the array's own id (the last to start:
        # slurmctld's meta record, which shows the pending remainder while tasks are pending).
        self.array_job_id = 0
        self.array_task_id = None
        self.array_max_tasks = 0
        self.array_tasks = None

    @property
    def start_time(self):
        """When the job starts (or started): its planned start, after a hold's release and after
        the jobs it depends on ended; inf while a dependency is unresolved or can never be met."""
        t = self.base_start
        if self.release_time is not None:
            t = max(t, self.release_time)
        for cond, jid in self.dependencies:
            dep = self.jobs_ref.get(jid)
            if dep is None:
                continue  # unknown (purged) jobs satisfy the dependency
            out = dep.outcome()
            if out is None:
                return float("inf")
            ok = out[1] == "COMPLETED"
            if (cond == "afterok" and not ok) or (cond == "afternotok" and ok):
                return float("inf")
            t = max(t, out[0])
        return t

    def dependency_reason(self, t):
        """At time t: 'Dependency' while waiting, 'DependencyNeverSatisfied' when it cannot be
        met, None once every dependency is met."""
        waiting = False
        for cond, jid in self.dependencies:
            dep = self.jobs_ref.get(jid)
            if dep is None:
                continue
            out = dep.outcome()
            if out is None or t < out[0]:
                waiting = True
                continue
            ok = out[1] == "COMPLETED"
            if (cond == "afterok" and not ok) or (cond == "afternotok" and ok):
                return "DependencyNeverSatisfied"
        return "Dependency" if waiting else None

    # -- timeline -------------------------------------------------------------------------
    def _finite_limit(self):
        return self.time_limit if self.time_limit not in (None, UNLIMITED) else None

    def run_limit(self):
        """The time limit (minutes, or None) the job runs with. With a deadline, slurmctld's
        scheduler cuts it to the whole minutes left before the deadline when it starts the job
        (job_scheduler.c at 22.05.8, deadline_time_limit); under a minute left leaves it as it
        was."""
        limit = self._finite_limit()
        if self.deadline is None or self.deadline <= self.start_time:
            return limit
        left = int((self.deadline - self.start_time) // 60)
        if limit is not None:
            left = min(limit, left)
        return left if left > 0 else limit

    def outcome(self):
        """(end_time, base_state, reason, raw_exit_status, ran) of the job's end, or None while the
        job cannot end (held)."""
        if self.cancel_time is not None and (self.hold or self.cancel_time <= self.start_time):
            return (self.cancel_time, "CANCELLED", "None", 0, False)
        if self.deadline is not None and (self.hold or self.deadline <= self.start_time):
            return (self.deadline, "DEADLINE", "DeadLine", 0, False)
        limit = self._finite_limit()
        if self.deadline is not None and limit is not None and \
                self.deadline < self.start_time + limit * 60:
            # deadline_ok(): its time limit would end after the deadline: never started,
            # DEADLINE when the scheduler looks at it, exit_code 1.
            return (self.start_time, "DEADLINE", "DeadLine", 1, False)
        if self.hold:
            return None
        if not self.plan.has_shebang:
            return (self.start_time, "FAILED", "NonZeroExitCode", 8 << 8, True)
        if self.launch_failure:
            reason, raw = self.launch_failure
            return (self.start_time, "FAILED", reason, raw, True)
        candidates = []
        natural = self.start_time + self.plan.run_seconds
        if self.forced_end:
            candidates.append((natural, 0, self.forced_end, FORCED_END_REASONS[self.forced_end],
                               0))
        elif self.plan.signal:
            sig = self.plan.signal
            candidates.append((natural, 0, "FAILED",
                               "RaisedSignal:%d(%s)" % (sig, SIGNALS.get(sig, ("", "Unknown"))[1]
                                                        .replace(" ", "_")), sig))
        elif self.plan.exit_status == 0:
            candidates.append((natural, 0, "COMPLETED", "None", 0))
        else:
            candidates.append((natural, 0, "FAILED", "NonZeroExitCode",
                               self.plan.exit_status << 8))
        limit = self.run_limit()
        if limit is not None:
            candidates.append((self.start_time + limit * 60.0, 1, "TIMEOUT", "TimeLimit", 15))
        if self.cancel_time is not None:
            candidates.append((self.cancel_time, 2, "CANCELLED", "None", self.cancel_signal))
        # A running job is not ended at its deadline: its (cut) time limit ends it before.
        end, _, state, reason, raw = min(candidates)
        return (end, state, reason, raw, True)

    def view(self, t, completing_seconds):
        """The job as slurmctld shows it at simulated time t."""
        out = self.outcome()
        v = {"flags": [], "transitions": [self.submit_time]}
        if self.cancel_time is not None and self.cancel_time <= t:
            v["transitions"].append(self.cancel_time)
        if out is None or t < out[0]:
            if t < self.start_time or self.hold:
                reason = "JobHeldUser" if self.hold else (
                    (self.dependency_reason(t) or "Priority") if self.dependencies else "Priority")
                v.update(state="PENDING", reason=reason,
                         start=0, end=0, raw=0, started=False, finished=False)
            else:
                v["transitions"].append(self.start_time)
                limit = self.run_limit()
                projected = (self.start_time + YEAR if limit is None
                             else self.start_time + limit * 60)
                v.update(state="RUNNING", reason="None", start=self.start_time, end=projected,
                         raw=0, started=True, finished=False)
            return v
        end, state, reason, raw, ran = out
        if ran:
            v["transitions"].append(self.start_time)
        v["transitions"].append(end)
        v.update(state=state, reason=reason, start=self.start_time if ran else end, end=end,
                 raw=raw, started=ran, finished=True)
        if ran and t < end + completing_seconds:
            v["flags"] = ["COMPLETING"]
        elif ran:
            v["transitions"].append(end + completing_seconds)
        return v

    def purge_time(self, completing_seconds, min_job_age):
        out = self.outcome()
        if out is None:
            return None
        end, _, _, _, ran = out
        return end + (completing_seconds if ran else 0) + min_job_age


# slurmdbd's TRES ids (src/common/slurmdb_defs.h TRES_CPU .. TRES_BILLING; gres from 1001).
_TRES_IDS = {"cpu": 1, "mem": 2, "energy": 3, "node": 4, "billing": 5}


def _allocated_tres(job, n):
    """tres.allocated of a slurmdb job record as slurmdbd keeps it (AccountingStorageTRES=gres/gpu):
    cpu (one per task), mem in MB (memory_per_node x nodes), energy, node, billing (= cpu) and
    gres/gpu (gpus per node x nodes). Elements are {type, name, id, count}; unnamed TRES carry a
    null name in dbv0.0.38 (22.05 parse.c _dump_to_string) and "" in data_parser v0.0.39+
    (DUMP_FUNC(STRING)); an energy count never gathered (NO_VAL64) is null in dbv0.0.38
    (_dump_to_int64, as recorded from 22.05) and the raw value read as int64, -2, in v0.0.39+
    (DUMP_FUNC(INT64) data_set_int(*src))."""
    raw = job.raw_job if isinstance(job.raw_job, dict) else {}
    nodes = job.nodes_requested if isinstance(job.nodes_requested, int) else 1
    nodes = max(1, nodes)
    cpus = max(1, job.tasks if isinstance(job.tasks, int) else 1)
    gpu_text = raw.get("gpus_per_node") if n == 38 else raw.get("tres_per_node")
    gpus = 0
    if isinstance(gpu_text, str):
        m = re.search(r"(\d+)$", gpu_text)
        gpus = int(m.group(1)) * nodes if m else 0
    mem = raw.get("memory_per_node")
    if isinstance(mem, dict):
        mem = mem.get("number") if mem.get("set", True) else None
    mem = mem * nodes if isinstance(mem, int) and not isinstance(mem, bool) and mem > 0 else 0
    unnamed = None if n == 38 else ""
    out = [{"type": "cpu", "name": unnamed, "id": 1, "count": cpus}]
    if mem:
        out.append({"type": "mem", "name": unnamed, "id": 2, "count": mem})
    out += [{"type": "energy", "name": unnamed, "id": 3, "count": None if n == 38 else -2},
            {"type": "node", "name": unnamed, "id": 4, "count": nodes},
            {"type": "billing", "name": unnamed, "id": 5, "count": cpus}]
    if gpus:
        out.append({"type": "gres", "name": "gpu", "id": 1001, "count": gpus})
    return out


NO_VAL32 = 0xfffffffe  # Slurm's NO_VAL: what %a shows outside an array


def _fname_format(fname, job):
    """slurm_get_job_stdout()'s _fname_format() (src/api/job_info.c, 23.02-24.11): what
    v0.0.39-v0.0.42 records show as standard_output / standard_error. Fills %A %a %j %u %x and
    %% only (%N %n %t %s %J stay as written) and puts the working directory in front of a
    relative path, always with a '/'. The sim's jobs are not array tasks."""
    out, p, q, n = [], 0, 0, len(fname)
    while p < n:
        if fname[p] != "%":
            p += 1
            continue
        offset, wid = 1, 0
        if p + 1 < n and fname[p + 1] == "%":
            p += 1
            out.append(fname[q:p])
            p += 1
            q = p
            continue
        if p + 1 < n and fname[p + 1].isdigit():
            digits = re.match(r"\d+", fname[p + 1:]).group()
            width = int(digits)
            wid, offset = (10, 3) if width > 9 else (width, 2)
            p += 1 + len(digits)
            if p >= n:
                break
        else:
            p += 1
        c = fname[p] if p < n else ""
        value = {"A": "%0*d" % (wid, job.array_job_id or job.job_id),
                 "a": "%0*d" % (wid, NO_VAL32 if job.array_task_id is None
                                else job.array_task_id),
                 "j": "%0*d" % (wid, job.job_id), "u": job.user_name, "x": job.name}.get(c)
        if c and value is not None:
            out.append(fname[q:p - offset])
            out.append(value)
            q = p + 1
        # as in C, the scan goes on from the letter
    if p != q:
        out.append(fname[q:p])
    path = "".join(out)
    return path if path.startswith("/") else "%s/%s" % (job.cwd, path)


def _expand_stdio_fields(path, job, batch_host):
    """expand_stdio_fields() (src/common/print_fields.c, 25.05): v0.0.43+ stdout_expanded /
    stderr_expanded of a path that was asked for. A node not chosen yet prints as C's
    printf("%s", NULL) does: "(null)"."""
    out = ""
    if not path.startswith("/"):
        out = job.cwd if job.cwd.endswith("/") else job.cwd + "/"
    if "\\" in path:
        return out + path.replace("\\", "")
    task = NO_VAL32 if job.array_task_id is None else job.array_task_id
    values = {"A": lambda w: "%0*d" % (w, job.array_job_id or job.job_id),
              "a": lambda w: "%0*d" % (w, task), "b": lambda w: "%0*d" % (w, task % 10), "j": lambda w: "%0*d" % (w, job.job_id),
              "J": lambda w: "%0*d" % (w, job.job_id), "N": lambda w: batch_host or "(null)",
              "n": lambda w: "0", "t": lambda w: "0", "s": lambda w: "batch",
              "u": lambda w: job.user_name, "x": lambda w: job.name}
    i, n = 0, len(path)
    while i < n:
        c = path[i]
        if c != "%" or i + 1 >= n:
            out += c
            i += 1
            continue
        i += 1
        if path[i] == "%":
            out += "%"
            i += 1
            continue
        padding = 0
        if path[i].isdigit():
            digits = re.match(r"\d+", path[i:]).group()
            if int(digits) > 9:
                padding, j = 10, i + len(digits)
            else:
                padding, j = int(digits), i + 1
            if j >= n or path[j] not in values:
                out += digits[-1]  # Slurm keeps only the last digit before a non-letter
                i += len(digits)
                continue
            i = j
        if path[i] in values:
            out += values[path[i]](padding)
        else:
            out += "%" + path[i]
        i += 1
    return out


def _nv(value):
    """{set, infinite, number} of a *_NO_VAL field; None = unset, UNLIMITED = infinite."""
    if value is None:
        return {"set": False, "infinite": False, "number": 0}
    if value == UNLIMITED:
        return {"set": False, "infinite": True, "number": 0}
    return {"set": True, "infinite": False, "number": value}


def _exit_verbose(raw):
    """v0.0.40+ PROCESS_EXIT_CODE_VERBOSE."""
    if raw is None:
        return {"status": ["PENDING"], "return_code": _nv(None),
                "signal": {"id": _nv(None), "name": ""}}
    if raw & 0x7F == 0:
        rc = (raw >> 8) & 0xFF
        return {"status": ["SUCCESS" if rc == 0 else "ERROR"], "return_code": _nv(rc),
                "signal": {"id": _nv(None), "name": ""}}
    sig = raw & 0x7F
    return {"status": ["CORE_DUMPED" if raw & 0x80 else "SIGNALED"], "return_code": _nv(None),
            "signal": {"id": _nv(sig), "name": SIGNALS.get(sig, ("SIG%d" % sig, ""))[0]}}


def _exit_db_old(raw, finished, pending):
    """dbv0.0.38 / v0.0.39 `_dump_job_exit_code` including its bug: every normal exit is dumped
    as SUCCESS/0 (slurm-rest-versions.md §7.1, confirmed in slurm-local-cluster.md §4)."""
    if pending:
        return {"status": "PENDING", "return_code": None}
    if raw & 0x7F == 0:
        return {"status": "SUCCESS", "return_code": 0}
    sig = raw & 0x7F
    return {"status": "SIGNALED", "return_code": None,
            "signal": {"signal_id": sig, "name": SIGNALS.get(sig, ("", "Unknown signal"))[1]}}


def _vn(version):
    return int(version.rsplit(".", 1)[1])


def _err(n, description, source, number=None):
    """A v0.0.39+ style error element."""
    num = n if number is None else number
    return {"description": description, "error_number": num,
            "error": STRERROR.get(num, "Unspecified error"), "source": source}


def _warn(description, source):
    return {"description": description, "source": source}


class SlurmResponse:
    """What slurmrestd answered: HTTP status plus a JSON object, a text body, or nothing."""

    def __init__(self, status, body=None, text=None):
        self.status = status
        self.body = body  # dict or None
        self.text = text  # str or None (non-JSON answer)

    @property
    def content_type(self):
        if self.body is not None:
            return "application/json"
        if self.text is not None:
            return "text/plain"
        return None

    def raw_bytes(self):
        if self.body is not None:
            return json.dumps(self.body).encode()
        if self.text is not None:
            return self.text.encode()
        return b""


class SlurmSimulator:
    """One simulated cluster: slurmctld job table + slurmdbd records, and the REST front end."""

    def __init__(self, cluster_name="cluster", clock=None, versions=None, partitions=None,
                 pending_seconds=0.5, completing_seconds=0.2, min_job_age=5.0,
                 accounting_delay=0.5, job_id_start=1000, node_names=("node-0",)):
        self.cluster_name = cluster_name
        self.clock = clock or RealClock()
        self.versions = list(versions or VERSIONS)
        for v in self.versions:
            if v not in VERSIONS:
                raise ValueError("unknown Slurm REST version %s" % v)
        self.partitions = list(partitions or ["debug", "gpu"])
        self.pending_seconds = float(pending_seconds)
        self.completing_seconds = float(completing_seconds)
        self.min_job_age = float(min_job_age)
        self.accounting_delay = float(accounting_delay)
        self.node_names = list(node_names)
        self.lock = threading.RLock()
        self._tls = threading.local()
        self.jobs = {}  # job_id -> SimJob (kept forever: accounting)
        self.next_job_id = int(job_id_start)
        self.submits = []  # every submit attempt
        self._start_time = self.clock.now()
        self._last_admin_change = self._start_time
        # render_job() results by job id: (what the row depends on, the rendered dict)
        self._render_cache = {}
        self._script_counts = {}  # script text -> jobs submitted with it (#SIM fail_first)
        # The 23.02 release serving v0.0.39 (its job update handling changed in 23.02.2).
        self.v0039_release = "23.02.7"
        self._marks_reset()

    # -- configuration -----------------------------------------------------------------------
    def set_params(self, **kw):
        with self.lock:
            for key in ("pending_seconds", "completing_seconds", "min_job_age",
                        "accounting_delay"):
                if key in kw and kw[key] is not None:
                    value = float(kw[key])
                    if value < 0 or math.isnan(value):
                        raise SimError("%s must be >= 0" % key)
                    setattr(self, key, value)
            if kw.get("next_job_id") is not None:
                # A cluster recreated (or its slurmctld state lost) numbers jobs from the
                # start again: ids an older job had are handed out again.
                value = int(kw["next_job_id"])
                if value < 1:
                    raise SimError("next_job_id must be >= 1")
                self.next_job_id = value
            self._marks_reset()  # completing_seconds/min_job_age move every job's marks
            self._render_cache.clear()
            if kw.get("v0039_release") is not None:
                if not re.match(r"^23\.02\.\d+$", str(kw["v0039_release"])):
                    raise SimError("v0039_release must be a 23.02.x release")
                self.v0039_release = str(kw["v0039_release"])
            if kw.get("partitions") is not None:
                parts = kw["partitions"]
                if not isinstance(parts, list) or not parts or not all(
                        isinstance(p, str) and p for p in parts):
                    raise SimError("partitions must be a non-empty list of names")
                self.partitions = list(parts)
            return self.params()

    def params(self):
        return {"pending_seconds": self.pending_seconds,
                "completing_seconds": self.completing_seconds,
                "min_job_age": self.min_job_age, "accounting_delay": self.accounting_delay,
                "partitions": list(self.partitions), "versions": list(self.versions),
                "v0039_release": self.v0039_release, "next_job_id": self.next_job_id,
                "clock": self.clock.describe()}

    def reset(self):
        with self.lock:
            self.jobs.clear()
            self.submits.clear()
            self._script_counts.clear()
            self._last_admin_change = self.clock.now()
            self._render_cache.clear()
            self._marks_reset()

    # -- state helpers --------------------------------------------------------------------------
    def _live(self, job, t):
        purge = job.purge_time(self.completing_seconds, self.min_job_age)
        return purge is None or t < purge

    def _live_jobs(self, t):
        return [j for j in sorted(self.jobs.values(), key=lambda j: j.job_id)
                if self._live(j, t) and not self._array_hidden(j, t)]

    # The last job change (slurmctld's last_job_update), kept incrementally: every job's marks
    # (the instants its row changes: submit, cancel, start, end, end of COMPLETING, purge) sit in
    # a heap until the clock passes them. A GET of one job used to recompute it over every job
    # ever submitted (O(jobs) per call, 30 ms at 10,000 jobs).
    def _marks_reset(self):
        self._marks_heap = []  # (time, job_id, generation)
        self._marks_gen = {}  # job_id -> generation of its current marks
        self._marks_t = None  # the latest t folded in
        self._marks_last = None  # the latest mark <= _marks_t
        for job in self.jobs.values():
            self._marks_add(job)

    def _job_marks(self, job):
        v = job.view(math.inf, self.completing_seconds)  # the whole timeline as known now
        marks = list(v["transitions"])
        purge = job.purge_time(self.completing_seconds, self.min_job_age)
        if purge is not None:
            marks.append(purge)
        return marks

    def _marks_add(self, job):
        """(Re)schedules the marks of a new or changed (cancelled) job. Marks already passed
        cannot move: a cancel only changes the future."""
        gen = self._marks_gen.get(job.job_id, 0) + 1
        self._marks_gen[job.job_id] = gen
        for m in self._job_marks(job):
            if self._marks_t is not None and m <= self._marks_t:
                self._marks_last = m if self._marks_last is None else max(self._marks_last, m)
            else:
                heapq.heappush(self._marks_heap, (m, job.job_id, gen))

    def _last_update(self, t):
        if self._marks_t is not None and t < self._marks_t:
            return self._last_update_scan(t)  # a clock that went back: the slow, exact way
        heap, gens = self._marks_heap, self._marks_gen
        last = self._marks_last
        while heap and heap[0][0] <= t:
            m, job_id, gen = heapq.heappop(heap)
            if gens.get(job_id) == gen:
                last = m if last is None else max(last, m)
        self._marks_last, self._marks_t = last, t
        return self._last_admin_change if last is None else max(self._last_admin_change, last)

    def _last_update_scan(self, t):
        last = self._last_admin_change
        for job in self.jobs.values():
            v = job.view(t, self.completing_seconds)
            last = max([last] + [x for x in v["transitions"] if x <= t])
            purge = job.purge_time(self.completing_seconds, self.min_job_age)
            if purge is not None and purge <= t:
                last = max(last, purge)
        return last

    def _node_for(self, job):
        return self.node_names[job.job_id % len(self.node_names)]

    # -- REST entry point -----------------------------------------------------------------
    def handle(self, method, path, query=None, body=None, user="nobody", principal=None):
        """method: GET|POST|DELETE; path: /slurm/vX/... or /slurmdb/vX/... (no query string);
        query: dict of str -> str; body: parsed JSON (POST) or None."""
        query = query or {}
        parts = [p for p in path.split("/") if p]
        if len(parts) < 2 or parts[0] not in ("slurm", "slurmdb") or parts[1] not in self.versions:
            return SlurmResponse(404, text=NOT_FOUND_TEXT)
        api, version, rest = parts[0], parts[1], parts[2:]
        n = _vn(version)
        if method != "POST" and body is not None:
            return SlurmResponse(400, text="Unexpected http body provided for non-POST method")
        with self.lock:
            self._tls.user = user
            if api == "slurm":
                if rest == ["job", "submit"]:
                    if method != "POST":
                        return self._method_not_allowed()
                    return self._submit(n, version, body, user, principal)
                if len(rest) == 2 and rest[0] == "job":
                    if method == "GET":
                        return self._get_job(n, rest[1])
                    if method == "DELETE":
                        return self._delete_job(n, rest[1], query, user)
                    if method == "POST":
                        return self._update_job(n, rest[1], body)
                    return self._method_not_allowed()
                if rest == ["jobs"]:
                    if method != "GET":
                        return self._method_not_allowed()
                    return self._list_jobs(n, query)
                if rest == ["ping"]:
                    if method != "GET":
                        return self._method_not_allowed()
                    return self._ping(n, user)
            else:
                if len(rest) == 2 and rest[0] == "job":
                    if method != "GET":
                        return self._method_not_allowed()
                    return self._db_get_job(n, rest[1], user)
                if rest == ["jobs"]:
                    if method != "GET":
                        return self._method_not_allowed()
                    return self._db_list_jobs(n, query, user)
        return SlurmResponse(404, text=NOT_FOUND_TEXT)

    def _method_not_allowed(self):
        return SlurmResponse(405, text="Unsupported HTTP method requested")

    # -- meta ----------------------------------------------------------------------------------
    def meta(self, n, db=False, user="nobody"):
        major, minor, micro = RELEASES[n] if n != 39 else tuple(self.v0039_release.split("."))
        if n <= 39:
            kind = "dbv" if db else "v"
            return {"plugin": {"type": "openapi/%s0.0.%d" % (kind, n),
                               "name": "Slurm OpenAPI %sv0.0.%d" % ("DB " if db else "", n)},
                    "Slurm": {"version": {"major": int(major), "micro": int(micro),
                                          "minor": int(minor)},
                              "release": "%s.%s.%s" % (major, minor, micro)}}
        plugin = "slurmdbd" if db else "slurmctld"
        return {"plugin": {"type": "openapi/" + plugin, "name": "Slurm OpenAPI " + plugin,
                           "data_parser": "data_parser/v0.0.%d" % n,
                           "accounting_storage": "accounting_storage/slurmdbd"},
                "client": {"source": "[agent-platform-fake]", "user": user, "group": user},
                "command": [],
                "slurm": {"version": {"major": major, "micro": micro, "minor": minor},
                          "release": "%s.%s.%s" % (major, minor, micro),
                          "cluster": self.cluster_name}}

    def _envelope(self, n, payload, errors=None, warnings=None, db=False, user=None):
        if user is None:
            user = getattr(self._tls, "user", None) or "nobody"
        out = {"meta": self.meta(n, db, user), "errors": list(errors or [])}
        if n >= 39:
            out["warnings"] = list(warnings or [])
        out.update(payload)
        return out

    # -- submit --------------------------------------------------------------------------------
    def _record_submit(self, version, body, status, job_id, errors, user, principal):
        job = body.get("job") if isinstance(body, dict) else None
        job = job if isinstance(job, dict) else {}
        self.submits.append({
            "seq": len(self.submits) + 1, "time": self.clock.now(), "api_version": version,
            "user": user, "principal": principal,
            "name": job.get("name", job.get("job_name")) if isinstance(job, dict) else None,
            "comment": job.get("comment"), "http_status": status, "job_id": job_id,
            "accepted": job_id is not None, "errors": errors})

    def _submit(self, n, version, body, user, principal):
        if n == 38:
            status, payload, errors, warnings, desc = self._parse_submit_38(body)
        else:
            status, payload, errors, warnings, desc = self._parse_submit_new(n, body)
        if status != 200:
            self._record_submit(version, body, status, None, errors, user, principal)
            return SlurmResponse(status, self._envelope(n, payload, errors, warnings, user=user))
        now = self.clock.now()
        while self.next_job_id in self.jobs:  # as slurmctld: an id in use is skipped
            self.next_job_id += 1
        job_id = self.next_job_id
        self.next_job_id += 1
        script = desc.pop("script")
        plan = parse_script(script)
        if desc.get("array"):
            parsed = parse_array_spec(desc["array"])
            if parsed is None:
                self.next_job_id -= 1
                if n == 38:
                    errors = [{"error_code": 2081, "error": STRERROR[2081]}]
                else:
                    errors = [_err(n, "Batch job submission failed", "slurm_submit_batch_job()",
                                   2081)]
                self._record_submit(version, body, 500, None, errors, user, principal)
                return SlurmResponse(500, self._envelope(n, {}, errors, warnings, user=user))
            self._submit_array(job_id, version, user, principal, desc, script, plan, now,
                               *parsed)
            job = None
        else:
            job = SimJob(job_id, version, user, principal, desc, script, plan, now,
                         self.pending_seconds)
        if job is not None:
            job.jobs_ref = self.jobs
            if plan.end_state and plan.fail_first is not None:
                seen = self._script_counts.get(script, 0)
                self._script_counts[script] = seen + 1
                if seen >= plan.fail_first:
                    job.forced_end = None
            self.jobs[job_id] = job
            self._marks_add(job)
        self._record_submit(version, body, 200, job_id, errors, user, principal)
        if n == 38:
            payload = {"job_id": job_id, "step_id": "BATCH", "job_submit_user_msg": ""}
        else:
            payload = {"job_id": job_id, "step_id": "batch", "job_submit_user_msg": ""}
            if n <= 41:
                payload["result"] = {"job_id": job_id, "step_id": "batch", "error_code": 0,
                                     "error": "No error", "job_submit_user_msg": ""}
        return SlurmResponse(200, self._envelope(n, payload, errors, warnings, user=user))

    def _submit_array(self, array_id, version, user, principal, desc, script, plan, now,
                      indexes, max_tasks):
        """One SimJob per task of an array job. Tasks start in index order, at most max_tasks at
        once; the last to start keeps the array's own id (slurmctld's meta record, which shows
        the pending remainder while any task is pending); the others get the next ids in the
        order they start (slurmctld numbers a task when it splits it off to start it)."""
        pend = plan.pending_seconds if plan.pending_seconds is not None else self.pending_seconds
        starts = schedule_array(len(indexes), now + pend, plan.run_seconds, max_tasks)
        fails = set()
        if plan.array_fail:
            seen = self._script_counts.get(script, 0)
            self._script_counts[script] = seen + 1
            if plan.array_fail_first is None or seen < plan.array_fail_first:
                fails = plan.array_fail
        order = sorted(range(len(indexes)), key=lambda k: (starts[k], k))
        ids = {}
        for k in order[:-1]:
            while self.next_job_id in self.jobs or self.next_job_id == array_id:
                self.next_job_id += 1
            ids[k] = self.next_job_id
            self.next_job_id += 1
        ids[order[-1]] = array_id
        tasks = []
        for k, index in enumerate(indexes):
            task_plan = copy.copy(plan)
            if index in fails:
                task_plan.exit_status = 1
            task = SimJob(ids[k], version, user, principal, desc, script, task_plan, now,
                          self.pending_seconds)
            task.base_start = starts[k]
            task.array_job_id = array_id
            task.array_task_id = index
            task.array_max_tasks = max_tasks
            task.array_tasks = tasks
            task.jobs_ref = self.jobs
            tasks.append(task)
            self.jobs[task.job_id] = task
        for task in tasks:
            self._marks_add(task)

    def _array_remainder(self, job, t):
        """The indexes of job's array not started at t (slurmctld keeps them in the meta
        record), or None when job is not an array task."""
        if not job.array_tasks:
            return None
        return [k.array_task_id for k in job.array_tasks
                if not k.view(t, self.completing_seconds)["started"]]

    def _array_hidden(self, job, t):
        """A pending task other than the meta record's: slurmctld shows it only inside the
        meta record's remainder."""
        return (bool(job.array_tasks) and job.job_id != job.array_job_id and
                not job.view(t, self.completing_seconds)["started"])

    def _array_records(self, job, t):
        """The live records GET /job/<array id> answers with: every visible task."""
        if not job.array_tasks or job.job_id != job.array_job_id:
            return [job]
        return [k for k in sorted(job.array_tasks, key=lambda k: k.job_id)
                if self._live(k, t) and not self._array_hidden(k, t)]

    def _base_desc(self, raw):
        return {"raw": raw, "name": "", "partition": None, "comment": "", "cwd": None,
                "environment": None, "account": "", "qos": "normal", "time_limit": UNLIMITED,
                "stdout": "", "stderr": "", "stdin": "", "nodes": 1, "tasks": 1, "hold": False}

    def _parse_submit_38(self, body):
        """v0.0.38 (22.05): sbatch option parser; unknown keys -> 400; environment object."""
        fail_parse = {"error_code": 9001, "error": STRERROR[9001]}

        def key_error(key, message, code=-1):
            return (400, {}, [{"error": message, "error_code": code},
                              {"description": 'Unable to process key "%s"' % key,
                               "error_number": -1, "error": STRERROR[-1],
                               "source": "slurm_process_option_data"}, fail_parse], [], None)

        job = body.get("job") if isinstance(body, dict) else None
        if isinstance(body, dict) and body.get("jobs") is not None and job is None:
            return (500, {}, [{"error_code": -1, "error": "HetJob submission (\"jobs\") is not "
                               "supported by the simulator"}], [], None)
        if not isinstance(job, dict) or not job:
            return (400, {}, [{"error_code": 9002, "error": STRERROR[9002]}], [], None)
        desc = self._base_desc(job)
        env_seen = False
        for key, value in job.items():
            lk = key.lower()
            canon = ALIASES_38.get(lk, lk)
            if canon not in KEYS_38:
                return (400, {}, [{"description": 'Unknown key "%s"' % key, "source": "hsearch_r"},
                                  fail_parse], [], None)
            if canon == "environment":
                if not isinstance(value, dict):
                    return key_error(key, "environment must be a dictionary")
                if not value:
                    return (400, {}, [{"error": "environment must be set", "error_code": 2127},
                                      fail_parse], [], None)
                desc["environment"] = value
                env_seen = True
            elif canon == "time_limit":
                try:
                    if isinstance(value, bool) or not isinstance(value, (int, str)):
                        raise SimError("bad")
                    if isinstance(value, int):
                        if value < 0:
                            raise SimError("bad")
                        desc["time_limit"] = UNLIMITED if value == 0 else value
                    else:
                        desc["time_limit"] = parse_time_spec(value)
                except SimError:
                    return key_error(key, "Invalid time specification")
            elif canon == "nodes":
                if isinstance(value, list):
                    if len(value) != 2 or not all(isinstance(x, int) for x in value):
                        return key_error(key, "Invalid node count list size")
                    desc["nodes"] = value[0]
                elif isinstance(value, bool) or not isinstance(value, (int, str)):
                    return key_error(key, "Invalid node count specification")
                else:
                    m = re.match(r"^(\d+)(?:-(\d+))?$", str(value))
                    if not m:
                        return key_error(key, "Invalid node count specification")
                    desc["nodes"] = int(m.group(1))
            elif canon == "begin_time" and not isinstance(value, str):
                return key_error(key, "Unable to parse time", 2054)
            elif canon == "deadline":
                # arg_set_data_deadline: the value as a string through parse_time(), which takes
                # a unix time only as "uts<seconds>"; a bare number (JSON or text) is refused,
                # as the real 22.05.8 refused the operator's integer deadline.
                if isinstance(value, bool) or not isinstance(value, (int, str)):
                    return key_error(key, "Unable to read string")
                when = parse_slurm_time(str(value), self.clock.now())
                if when is None:
                    return key_error(key, "Invalid deadline time")
                desc["deadline"] = int(when)
            elif isinstance(value, (dict, list)) and canon not in ("argv", "mail_type"):
                return key_error(key, "Unable to read value as string")
            else:
                self._store_field(desc, canon, value)
        if not env_seen:
            return (400, {}, [{"error": "environment must be set", "error_code": 2127},
                              fail_parse], [], None)
        script = body.get("script")
        if not isinstance(script, str) or not script:
            return (500, {}, [{"error_code": 2009, "error": STRERROR[2009]}], [], None)
        if desc["partition"] is None:
            desc["partition"] = self.partitions[0]
        elif desc["partition"] not in self.partitions:
            return (500, {}, [{"error_code": 2000, "error": STRERROR[2000]}], [], None)
        if not desc["cwd"]:
            # 22.05 defaults the working directory to slurmrestd's own cwd: accepted, and the job
            # then fails to launch (recorded: FAILED / JobLaunchFailure / exit_code 4021).
            desc["launch_failure"] = ("JobLaunchFailure", 4021)
            desc["cwd"] = "/"
        desc["script"] = script
        return (200, {}, [], [], desc)

    def _store_field(self, desc, key, value):
        s = value if isinstance(value, str) else json.dumps(value)
        if key == "name":
            desc["name"] = s
        elif key == "partition":
            desc["partition"] = s
        elif key == "comment":
            desc["comment"] = s
        elif key == "dependency":
            desc["dependency"] = s
        elif key == "current_working_directory":
            desc["cwd"] = s
        elif key == "account":
            desc["account"] = s
        elif key == "qos":
            desc["qos"] = s
        elif key == "standard_output":
            desc["stdout"] = s
        elif key == "standard_error":
            desc["stderr"] = s
        elif key == "standard_input":
            desc["stdin"] = s
        elif key == "tasks" and isinstance(value, int):
            desc["tasks"] = value
        elif key == "hold":
            desc["hold"] = bool(value)
        elif key == "array":
            desc["array"] = s

    def _type_error(self, n, key, expected, value):
        kind = type(value).__name__.replace("str", "string").replace("dict", "dictionary")
        return _err(n, 'Expected %s for field "%s" but got %s' % (expected, key, kind),
                    "#/job/%s" % key, 9202)

    def _check_field(self, n, key, value):
        """Returns an error element or None; v0.0.39+ data_parser style type checks."""
        if value is None:
            return None
        if key in STRING_FIELDS:
            if isinstance(value, (dict, list)):
                return self._type_error(n, key, "string", value)
        elif key in INT_FIELDS:
            if isinstance(value, bool) or not (
                    isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit())):
                if not (isinstance(value, float) and value.is_integer()):
                    return self._type_error(n, key, "integer", value)
        elif key in NO_VAL_FIELDS:
            if isinstance(value, dict):
                extra = set(value) - {"set", "infinite", "number"}
                if extra or ("number" in value and (isinstance(value["number"], bool) or
                                                    not isinstance(value["number"], (int, float)))):
                    return self._type_error(n, key, "{set,infinite,number}", value)
            elif isinstance(value, bool) or not (
                    isinstance(value, (int, float)) or
                    (isinstance(value, str) and re.match(r"^-?\d+$", value.strip()))):
                return self._type_error(n, key, "integer", value)
        elif key in BOOL_FIELDS:
            if not isinstance(value, bool):
                return self._type_error(n, key, "boolean", value)
        return None

    @staticmethod
    def _no_val_value(value):
        """Value of a *_NO_VAL input: None = unset, UNLIMITED = infinite, else an int."""
        if value is None:
            return None
        if isinstance(value, dict):
            if value.get("infinite"):
                return UNLIMITED
            if not value.get("set", "number" in value):
                return None
            return int(value.get("number", 0))
        return int(float(value))

    def _parse_submit_new(self, n, body):
        """v0.0.39+ (data_parser): unknown fields warned, environment list or object."""
        warnings, errors = [], []
        if not isinstance(body, dict):
            return (400, {}, [_err(n, "Request body must be a dictionary", "_job_post", 9001)],
                    [], None)
        for key in body:
            if key not in ("script", "job", "jobs"):
                warnings.append(_warn('Ignoring unknown field "%s" of type %s in #/' % (
                    key, _json_type(body[key])), "_job_post"))
        job, jobs = body.get("job"), body.get("jobs")
        if job is not None and jobs is not None:
            return (422, {}, [_err(n, 'Specify only one "job" or "jobs" fields but never both',
                                   "_job_post", 9000)], warnings, None)
        if job is None and jobs is None:
            return (422, {}, [_err(n, 'Specifying either "job" or "jobs" fields are required to '
                                      'submit job', "_job_post", 9000)], warnings, None)
        if jobs is not None:
            return (500, {}, [_err(n, 'HetJob submission ("jobs") is not supported by the '
                                      'simulator', "_job_post", -1)], warnings, None)
        if not isinstance(job, dict):
            return (500, {}, [_err(n, "Expected dictionary for \"job\" but got %s" %
                                   _json_type(job), "#/job", 9202)], warnings, None)
        desc = self._base_desc(job)
        for key, value in job.items():
            if key not in JOB_KEYS[n]:
                warnings.append(_warn('Ignoring unknown field "%s" of type %s in #/job/' % (
                    key, _json_type(value)), "_job_post"))
                continue
            problem = self._check_field(n, key, value)
            if problem:
                errors.append(problem)
                continue
            if value is None:
                continue
            if key == "environment":
                if isinstance(value, list):
                    if not all(isinstance(x, str) for x in value):
                        errors.append(self._type_error(n, key, "list of strings", value))
                        continue
                elif not isinstance(value, dict):
                    errors.append(self._type_error(n, key, "list", value))
                    continue
                desc["environment"] = value
            elif key == "time_limit":
                v = self._no_val_value(value)
                if v is not None and v != UNLIMITED and v < 0:
                    errors.append(_err(n, "Invalid time limit", "#/job/time_limit", 2054))
                    continue
                desc["time_limit"] = UNLIMITED if v in (None, 0) else v
            elif key in ("minimum_nodes",) and value is not None:
                desc["nodes"] = int(float(value))
            elif key == "tasks":
                desc["tasks"] = int(float(value))
            elif key == "script":
                continue
            else:
                self._store_field(desc, key, value)
        if errors:
            return (500, {}, errors, warnings, None)
        script = body.get("script")
        if not (isinstance(script, str) and script):
            script = job.get("script")
        if not (isinstance(script, str) and script):
            return (422, {}, [_err(n, 'Populated "script" field is required for job submission',
                                   "_job_post", 9000)], warnings, None)
        fail = "slurm_submit_batch_job()"
        if n >= 40 and not desc["cwd"]:
            return (500, {}, [_err(n, "Batch job submission failed", fail, 2063)], warnings, None)
        if not desc["environment"]:
            return (500, {}, [_err(n, "Batch job submission failed", fail, 2127)], warnings, None)
        if desc["partition"] is None:
            desc["partition"] = self.partitions[0]
        elif desc["partition"] not in self.partitions:
            return (500, {}, [_err(n, "Batch job submission failed", fail, 2000)], warnings, None)
        if not desc["cwd"]:
            desc["launch_failure"] = ("JobLaunchFailure", 4021)
            desc["cwd"] = "/"
        desc["script"] = script
        return (200, {}, [], warnings, desc)

    # -- GET job / jobs ------------------------------------------------------------------------
    def _parse_job_id(self, text):
        m = re.match(r"^(\d+)$", text)
        return int(m.group(1)) if m else None

    def _get_job(self, n, id_text):
        now = self.clock.now()
        job_id = self._parse_job_id(id_text)
        if job_id is None:
            m = re.match(r"^(\d+)_(\d+)$", id_text)  # array task syntax: no arrays here
            if not m:
                err = {"description": "Unable to find JobId=%s" % id_text, "error_number": 9002,
                       "error": STRERROR[9002], "source": "_handle_job_get"}
                return SlurmResponse(400, self._envelope(n, self._jobs_payload(n, [], now), [err]))
        job = self.jobs.get(job_id) if job_id is not None else None
        if job is None or not self._live(job, now):
            if n == 38:
                err = {"description": "Unable to find JobId=%s" % id_text, "error_number": 2017,
                       "error": STRERROR[2017], "source": "slurm_load_job"}
                return SlurmResponse(500, self._envelope(n, {"jobs": []}, [err]))
            err = _err(n, "Unable to query JobId=%s" % id_text, "_handle_job_get", 2017)
            return SlurmResponse(404, self._envelope(n, self._jobs_payload(n, [], now), [err]))
        return SlurmResponse(200, self._envelope(n, self._jobs_payload(
            n, self._array_records(job, now), now)))

    def _jobs_payload(self, n, jobs, now):
        payload = {"jobs": [self.render_job(n, j, now) for j in jobs]}
        if n >= 40:
            last = int(self._last_update(now))
            payload["last_backfill"] = _nv(int(max(self._start_time, now - (now % 30))))
            payload["last_update"] = _nv(last)
        return payload

    def _list_jobs(self, n, query):
        now = self.clock.now()
        update_time = query.get("update_time")
        if update_time is not None:
            try:
                update_time = int(float(update_time))
            except ValueError:
                if n == 38:
                    err = {"description": "Unable to parse update_time", "error_number": 9000,
                           "error": STRERROR[9000], "source": "_op_handler_jobs"}
                    return SlurmResponse(400, self._envelope(n, {"jobs": []}, [err]))
                err = _err(n, "Unable to parse update_time", "op_handler_jobs", 9000)
                return SlurmResponse(422, self._envelope(n, self._jobs_payload(n, [], now), [err]))
            # slurmctld: no change when (update_time - 1) >= last_job_update
            if update_time - 1 >= int(self._last_update(now)):
                if n == 38:
                    return SlurmResponse(304)  # SLURM_NO_CHANGE_IN_DATA: empty body
                warn = _warn("No job changes since update_time", "op_handler_jobs")
                return SlurmResponse(200, self._envelope(
                    n, self._jobs_payload(n, [], now), [], [warn]))
        return SlurmResponse(200, self._envelope(n, self._jobs_payload(n, self._live_jobs(now),
                                                                       now)))

    def render_job(self, n, job, now):
        """The job's record as /slurm/vX/job(s) shows it at `now`. A row only changes when its
        view does, so the rendered dict is cached per job and shared: callers must not change
        it (the REST layer only serializes it)."""
        v = job.view(now, self.completing_seconds)
        rest = self._array_remainder(job, now) if job.job_id == job.array_job_id else None
        key = (n, v["state"], tuple(v["flags"]), v["reason"], v["start"], v["end"], v["raw"],
               v["started"], tuple(rest or ()))
        hit = self._render_cache.get(job.job_id)
        if hit is not None and hit[0] == key:
            return hit[1]
        out = self._render_job(n, job, v)
        if job.array_tasks:
            u = (lambda x: x) if n == 38 else _nv
            out["array_job_id"] = u(job.array_job_id)
            out["array_max_tasks"] = u(job.array_max_tasks)
            if rest:
                out["array_task_id"] = u(None)
                out["array_task_string"] = format_array_tasks(rest, job.array_max_tasks)
            else:
                out["array_task_id"] = u(job.array_task_id)
                out["array_task_string"] = ""
        self._render_cache[job.job_id] = (key, out)
        return out

    def _render_job(self, n, job, v):
        started = v["started"]
        node = self._node_for(job) if started else ""
        uid = _uid(job.user_name)

        def t(x):
            return int(x) if n <= 39 else _nv(int(x))

        def u(x):  # *_NO_VAL integers
            if n == 38:
                return None if x is None else (None if x == UNLIMITED else x)
            return _nv(x)

        if n <= 39:
            state = v["flags"][0] if v["flags"] else v["state"]
        else:
            state = [v["state"]] + v["flags"]
        raw = v["raw"]
        if n == 38:
            exit_code, derived = raw, 0
        elif n == 39:
            exit_code, derived = _nv(raw), _nv(0)
        else:
            exit_code, derived = _exit_verbose(raw), _exit_verbose(0)
        # What each version shows of the output paths (slurm-rest-versions.md 3.2): v0.0.38 and
        # v0.0.43+ the paths as asked for ("" for none), v0.0.39-v0.0.42 slurm_get_job_stdout()'s
        # partly expanded path with Slurm's default filled in.
        stdout, stderr = job.stdout or "", job.stderr or ""
        if 39 <= n <= 42:
            default = "%s/slurm-%d.out" % (job.cwd, job.job_id)
            stdout = _fname_format(job.stdout, job) if job.stdout else default
            stderr = _fname_format(job.stderr or job.stdout, job) if (
                job.stderr or job.stdout) else default
        flags = ["JOB_WAS_RUNNING"] if started else []
        out = {
            "account": job.account, "accrue_time": t(job.submit_time), "admin_comment": "",
            "array_job_id": u(0), "array_task_id": u(None), "array_max_tasks": u(0),
            "array_task_string": "", "association_id": 0, "batch_features": "",
            "batch_flag": True, "batch_host": node, "flags": flags, "burst_buffer": "",
            "burst_buffer_state": "", "cluster": self.cluster_name, "cluster_features": "",
            "command": "", "comment": job.comment, "container": "", "contiguous": False,
            "cpus": u(max(1, job.tasks)), "cpus_per_task": u(1),
            "current_working_directory": job.cwd, "deadline": t(job.deadline or 0),
            "dependency": job.dependency_text,
            "derived_exit_code": derived, "eligible_time": t(job.submit_time),
            "end_time": t(v["end"]), "excluded_nodes": "", "exit_code": exit_code,
            "features": "", "group_id": uid, "group_name": job.user_name, "job_id": job.job_id,
            "job_state": state, "last_sched_evaluation": t(job.submit_time), "licenses": "",
            "max_cpus": u(0), "max_nodes": u(0), "name": job.name, "nice": 0,
            "node_count": u(job.nodes_requested or 1), "nodes": node,
            "partition": job.partition, "priority": u(0 if job.hold else 4294901759),
            "qos": job.qos, "requeue": False, "restart_cnt": 0, "resv_name": "",
            "standard_error": stderr, "standard_input": job.stdin or "/dev/null",
            "standard_output": stdout, "start_time": t(v["start"]),
            "state_description": "", "state_reason": v["reason"],
            "submit_time": t(job.submit_time), "suspend_time": t(0), "system_comment": "",
            "tasks": u(job.tasks), "tasks_per_node": u(None if n >= 39 else 0),
            "time_limit": u(job.time_limit if job.time_limit != UNLIMITED else UNLIMITED)
            if n >= 39 else (None if job.time_limit == UNLIMITED else job.time_limit),
            "time_minimum": u(0), "tres_req_str": "cpu=%d,node=1,billing=1" % max(1, job.tasks),
            "tres_alloc_str": ("cpu=%d,node=1,billing=1" % max(1, job.tasks)) if started else "",
            "user_id": uid, "user_name": job.user_name, "wckey": "",
        }
        if n == 38:
            out["standard_input"] = job.stdin
        if n >= 43:
            out.update({"stdout_expanded": _expand_stdio_fields(stdout, job, node)
                        if stdout else "",
                        "stderr_expanded": _expand_stdio_fields(stderr, job, node)
                        if stderr else "",
                        "stdin_expanded": out["standard_input"], "segment_size": 0,
                        "licenses_allocated": ""})
        if n >= 44:
            out["submit_line"] = ""
        return out

    # -- DELETE ----------------------------------------------------------------------------
    UPDATE_KEYS = {"comment", "hold", "priority"}

    def _update_job(self, n, id_text, body):
        """POST /slurm/vX/job/{id}: the subset of job updates the operator sends: comment, hold
        (true = hold; v0.0.39+ false = release) and priority (v0.0.38: 4294967295 = release)."""
        now = self.clock.now()
        job = self.jobs.get(self._parse_job_id(id_text)) if id_text.isdigit() else None
        if job is None or not self._live(job, now):
            err = _err(n, "Job id %s not found" % id_text, "_update_job", 2017)
            return SlurmResponse(500, self._envelope(n, {}, [err]))
        if not isinstance(body, dict) or not body:
            err = _err(n, "Job update request is not a dictionary", "_update_job", 9000)
            return SlurmResponse(400, self._envelope(n, {}, [err]))
        fields = self._update_fields(n, body)
        if isinstance(fields, SlurmResponse):
            return fields
        fields, warnings = fields
        body = fields
        view = job.view(now, self.completing_seconds)
        if view["finished"]:
            err = _err(n, "job update failed", "_parse_job_list", 2084)
            err["error"] = "Job has already finished"
            return SlurmResponse(200, self._envelope(n, {}, [err]))
        if "priority" in body:
            # 22.05.8 refuses INFINITE (what scontrol release sends) through REST.
            if body["priority"] == 4294967295:
                err = {"error": "Priority too large", "error_number": -1,
                       "description": "Unable to process key \"priority\""}
                return SlurmResponse(200, self._envelope(n, {}, [err]))
        if "hold" in body:
            hold = body["hold"]
            if not isinstance(hold, bool):
                err = _err(n, "hold must be a boolean", "_update_job", 9000)
                return SlurmResponse(400, self._envelope(n, {}, [err]))
            # As on 22.05.8: a running job accepts the update (no effect here).
            if view["state"] == "PENDING":
                if hold:
                    job.hold = True
                elif job.hold:
                    job.hold = False
                    job.release_time = now
        if "comment" in body:
            if not isinstance(body["comment"], str):
                err = _err(n, "comment must be a string", "_update_job", 9000)
                return SlurmResponse(400, self._envelope(n, {}, [err]))
            job.comment = body["comment"]
        self._last_admin_change = now
        self._render_cache.pop(job.job_id, None)
        self._marks_reset()  # a release (or a dependency's change) moves future marks
        return SlurmResponse(200, self._envelope(n, {}, [], warnings))

    def _update_fields(self, n, body):
        """The job fields a POST /slurm/vX/job/{id} body sets, as each release reads it, and the
        warnings; or the SlurmResponse refusing it.
          v0.0.38 (22.05 _parse_job_list(query, ..., update_only)): the bare body; an unknown key
            is "Unknown key" (400), like a submit.
          v0.0.39 served by 23.02.0/23.02.1 (_job_post): only {"job": {...}} is read; without
            "job" -> 422 "Specifing either \"job\" or \"jobs\" fields are required";
            23.02.2+ (e5316891ef): the bare body, unknown keys (also "job") ignored silently.
          v0.0.40+ (openapi/slurmctld _job_post_update): the bare body; unknown keys become
            warnings "Ignoring unknown field"."""
        known = {38: KEYS_38 | set(ALIASES_38), 39: KEYS_39, 40: KEYS_40, 41: KEYS_41,
                 42: KEYS_42, 43: KEYS_43, 44: KEYS_44}[n]
        if n == 38:
            unknown = sorted(set(body) - known)
            if unknown:
                errs = [{"description": "Unknown key \"%s\"" % unknown[0], "source": "hsearch_r"},
                        {"error_code": 9001, "error": STRERROR[9001]}]
                return SlurmResponse(400, self._envelope(n, {}, errs))
        if n == 39 and self.v0039_release in ("23.02.0", "23.02.1"):
            job = body.get("job")
            if not isinstance(job, dict):
                err = _err(n, "Specifing either \"job\" or \"jobs\" fields are required to job "
                           " update", "_job_post", 9000)
                return SlurmResponse(422, self._envelope(n, {}, [err]))
            body = job
        # A real job field this simulator does not model is refused, so that no test passes on
        # an update that does nothing here.
        unmodelled = sorted(k for k in body if k in known and k not in self.UPDATE_KEYS)
        if unmodelled:
            err = _err(n, "Unexpected field(s) %s (not simulated)" % ",".join(unmodelled),
                       "_update_job", 9000)
            return SlurmResponse(400, self._envelope(n, {}, [err]))
        fields = {k: v for k, v in body.items() if k in self.UPDATE_KEYS}
        if n <= 39:
            return fields, []
        warnings = [_warn("Ignoring unknown field \"%s\" of type %s in JOB_DESC_MSG" % (
            k, _json_type(v)), "_job_post_update") for k, v in sorted(body.items())
            if k not in known]
        return fields, warnings

    def _delete_job(self, n, id_text, query, user):
        now = self.clock.now()
        sig_text = query.get("signal")
        try:
            sig = 9 if sig_text in (None, "") else _parse_signal(sig_text)
        except SimError:
            err = {"description": "Unable to parse signal: %s" % sig_text, "error_number": 9001,
                   "error": STRERROR[9001], "source": "_handle_job_delete"}
            return SlurmResponse(400, self._envelope(n, {"status": []} if n >= 42 else {},
                                                     [err]))
        job_id = self._parse_job_id(id_text)
        job = self.jobs.get(job_id) if job_id is not None else None
        live = job is not None and self._live(job, now)
        signame = SIGNALS.get(sig, ("SIG%d" % sig, "Signal %d" % sig))

        if job is not None and live and job.user_name != user and user != "root":
            code = 2002
        elif not live:
            code = 2017
        elif job.view(now, self.completing_seconds)["finished"]:
            code = 2021
        else:
            code = 0
            # The array's own id signals every task of the array (slurm_kill_job on an array
            # job id); a task's own id that task alone.
            targets = [job]
            if job.array_tasks and job.job_id == job.array_job_id:
                targets = [k for k in job.array_tasks
                           if not k.view(now, self.completing_seconds)["finished"]]
            for target in targets:
                target.cancel_requests += 1
                target.signals_sent.append(sig)
                if sig in FATAL_CANCEL_SIGNALS:
                    target.cancel_time = now
                    target.cancel_signal = sig
                    target.kill_request_user = user
            if sig in FATAL_CANCEL_SIGNALS:
                if any(dep == t.job_id for j in self.jobs.values()
                       for _, dep in getattr(j, "dependencies", ()) for t in targets):
                    self._marks_reset()  # the jobs that depend on it start at other times now
                else:
                    for target in targets:
                        self._marks_add(target)
                self._render_cache.pop(job.job_id, None)

        if n >= 42:  # 24.11+: slurm_kill_jobs(), per-job status[] inside a 200
            status = []
            if code:
                status.append({"error": {"string": STRERROR[code], "code": code,
                                         "message": STRERROR[code]},
                               "step_id": id_text,
                               "job_id": _nv(job_id) if code != 2017 else _nv(None),
                               "federation": {"sibling": ""}})
            return SlurmResponse(200, self._envelope(n, {"status": status}, user=user))
        if code == 0:
            return SlurmResponse(200, self._envelope(n, {}, user=user))
        if code == 2021:
            if n == 38:  # ESLURM_ALREADY_DONE swallowed
                return SlurmResponse(200, self._envelope(n, {}, user=user))
            warn = _warn("Job was already sent signal %s" % signame[1], "slurm_kill_job()")
            return SlurmResponse(200, self._envelope(n, {}, [], [warn], user=user))
        description = "unable to kill JobId=%s with signal %d: %s" % (id_text, sig,
                                                                      STRERROR[code])
        err = {"description": description, "error_number": code, "error": STRERROR[code],
               "source": "slurm_kill_job" if n == 38 else "slurm_kill_job()"}
        if code == 2017:
            return SlurmResponse(500 if n == 38 else 404, self._envelope(n, {}, [err], user=user))
        return SlurmResponse(500, self._envelope(n, {}, [err], user=user))

    # -- ping --------------------------------------------------------------------------------
    def _ping(self, n, user):
        if n == 38:
            pings = [{"hostname": "slurmctld", "ping": "UP", "status": 0, "mode": "primary"}]
        else:
            ping = {"hostname": "slurmctld", "pinged": "UP", "latency": 120, "mode": "primary"}
            if n >= 41:
                ping.update({"responding": True, "primary": True})
            pings = [ping]
        return SlurmResponse(200, self._envelope(n, {"pings": pings}, user=user))

    # -- accounting ---------------------------------------------------------------------------
    def _acct_visible(self, job, now):
        return now - self.accounting_delay >= job.submit_time

    def _db_id_records(self, job_id, now):
        """The records a job_cond step_list entry <job_id> selects (GET /slurmdb/.../job/<id>
        is a step_list of that one id): none before accounting has the job; an array's id
        gives every task's record (sacct -j <array id>)."""
        job = self.jobs.get(job_id)
        if job is None or not self._acct_visible(job, now):
            return []
        if job.array_tasks and job.job_id == job.array_job_id:
            return [k for k in sorted(job.array_tasks, key=lambda k: k.job_id)
                    if not self._array_hidden(k, now)]
        return [job]

    def _db_get_job(self, n, id_text, user):
        now = self.clock.now()
        job_id = self._parse_job_id(id_text)
        records = self._db_id_records(job_id, now) if job_id is not None else []
        if not records:
            return self._db_nothing(n, user)
        return SlurmResponse(200, self._envelope(
            n, {"jobs": [self.render_db_job(n, k, now) for k in records]}, db=True, user=user))

    def _db_step_ids(self, n, value, user):
        """The job ids of a /slurmdb/.../jobs `step` filter: a CSV of ids (dbv0.0.38/39
        slurm_addto_step_list(); v0.0.40+ JOB_CONDITION "step", SELECTED_STEP_LIST "CSV step
        id list"); a list (repeated key) is each element's ids. Only plain job ids are taken
        (no id.step / id_task). Returns a SlurmResponse when an id does not parse or none is
        given: dbv0.0.38/39 "Unable to parse job/step format" (ESLURM_REST_INVALID_QUERY),
        v0.0.40+ the data_parser's "Rejecting request" of _op_handler_jobs.
        v0.0.40-v0.0.44 do not split a value on commas (data_parser _parse_list: "Assume List
        is just a single entry"; unfmt_job_id_string("5,7") fails), so there only repeated keys
        (step=5&step=7, a list: parse_rest_query) give several ids, and a CSV is rejected.
        slurmrestd's url-encoded parser rejects a raw ',' in any query (parse_rest_query); a
        CSV for dbv0.0.38/39 has to be sent as %2C."""
        ids = []
        bad = False
        for text in (value if isinstance(value, list) else [value]):
            if n >= 40 and "," in (text or ""):
                bad = True  # one SELECTED_STEP per value: unfmt_job_id_string("5,7") fails
                break
            for tok in (text or "").split(","):
                if not tok:
                    continue
                if not re.match(r"^\d+$", tok):
                    bad = True
                    break
                if int(tok) not in ids:
                    ids.append(int(tok))
        if not bad and ids:
            return ids
        if n <= 39:
            err = {"description": "Unable to parse job/step format", "error_number": 9000,
                   "error": STRERROR[9000], "source": "step"}
        else:
            err = _err(n, "Rejecting request. Failure parsing query parameters",
                       "_op_handler_jobs", 9000)
        return SlurmResponse(500, self._envelope(n, {"jobs": []}, [err], db=True, user=user))

    def _db_nothing(self, n, user):
        if n <= 39:
            # source/description swapped as in dbv0.0.38 db_query_list_funcname
            err = {"description": "Nothing found", "error_number": 9003, "error": STRERROR[9003],
                   "source": "slurmdb_jobs_get"}
            return SlurmResponse(200, self._envelope(n, {"jobs": []}, [err], db=True, user=user))
        warn = _warn("slurmdb_jobs_get(0x7f3c5c0b2a00) found nothing", "slurmdb_jobs_get")
        return SlurmResponse(200, self._envelope(n, {"jobs": []}, [], [warn], db=True, user=user))

    def _db_list_jobs(self, n, query, user):
        now = self.clock.now()
        if n == 38:
            if not query:  # recorded 22.05 behaviour: no filter -> "Nothing found"
                return self._db_nothing(n, user)
            for key, value in query.items():
                if key not in ("job_name", "partition", "account", "state", "start_time",
                               "end_time", "step"):
                    err = {"description": "Unknown Query field", "error_number": 9000,
                           "error": STRERROR[9000], "source": key}
                    return SlurmResponse(500, self._envelope(n, {"jobs": []}, [err], db=True,
                                                             user=user))
        window = self._db_window(n, query, now)
        if isinstance(window, SlurmResponse):
            return window
        if "step" in query:
            # step_list: exactly the records job/<id> finds for each id, once each.
            ids = self._db_step_ids(n, query["step"], user)
            if isinstance(ids, SlurmResponse):
                return ids
            by_id = {k.job_id: k for i in ids for k in self._db_id_records(i, now)}
            candidates = [by_id[k] for k in sorted(by_id)]
        else:
            candidates = [j for j in sorted(self.jobs.values(), key=lambda j: j.job_id)
                          if self._acct_visible(j, now) and not self._array_hidden(j, now)]
        names = _csv(query.get("job_name"))
        users = _csv(query.get("users"))
        parts = _csv(query.get("partition"))
        found = []
        for job in candidates:
            if not self._in_db_window(job, now, window):
                continue
            if names and job.name not in names:
                continue
            if users and job.user_name not in users:
                continue
            if parts and job.partition not in parts:
                continue
            found.append(job)
        if not found:
            return self._db_nothing(n, user)
        return SlurmResponse(200, self._envelope(
            n, {"jobs": [self.render_db_job(n, j, now) for j in found]}, db=True, user=user))

    def _db_window(self, n, query, now):
        """(usage_start, usage_end) of a /slurmdb/.../jobs query, as slurmdbd computes it: given
        times are parsed with parse_time() (dbv0.0.38/39: strings only; v0.0.40+ TIMESTAMP:
        strings via parse_time(), since 24.11 also a bare epoch); without a `step` (job id)
        list or states slurmdb_job_cond_def_start_end() starts at MIDNIGHT today (local time);
        with a step list it starts at epoch 0 (None here); either way it ends now.
        Returns a SlurmResponse for an unparsable time."""
        def bad(key, value):
            if n <= 39:
                err = {"description": "Unable to parse time format", "error_number": 9000,
                       "error": STRERROR[9000], "source": key}
            else:
                err = _err(n, "Parsing of %s for timestamp failed" % value, "_parse_timestamp",
                           9202)
            return SlurmResponse(500, self._envelope(n, {"jobs": []}, [err], db=True))
        window = []
        for key in ("start_time", "end_time"):
            value = query.get(key)
            if value is None:
                window.append(None)
                continue
            t = parse_slurm_time(value, now, allow_epoch=n >= 42)
            if t is None:
                return bad(key, value)
            window.append(t)
        start, end = window
        if start is None and not query.get("state") and not query.get("step"):
            lt = time.localtime(now)
            start = time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1))
        return (start, now if end is None else end)

    def _in_db_window(self, job, now, window):
        """as_mysql: eligible before usage_end, and not ended before usage_start."""
        start, end = window
        v = job.view(now - self.accounting_delay, self.completing_seconds)
        if job.submit_time > end:
            return False
        return start is None or not v["finished"] or v["end"] >= start

    def _db_array(self, n, job, now):
        """A slurmdb record's `array`: job_id, task_id (NO_VAL on the meta record while tasks
        are pending; null in dbv0.0.38/39, unset in v0.0.40+), the remainder (`task`) and the
        throttle."""
        none_id = None if n <= 39 else _nv(None)
        if not job.array_tasks:
            return {"job_id": 0, "limits": {"max": {"running": {"tasks": 0}}},
                    "task": None if n <= 39 else "", "task_id": none_id}
        rest = self._array_remainder(job, now) if job.job_id == job.array_job_id else None
        task_id = job.array_task_id if n <= 39 else _nv(job.array_task_id)
        return {"job_id": job.array_job_id,
                "limits": {"max": {"running": {"tasks": job.array_max_tasks}}},
                "task": format_array_tasks(rest, job.array_max_tasks) if rest else (
                    None if n <= 39 else ""),
                "task_id": none_id if rest else task_id}

    def render_db_job(self, n, job, now):
        t_acct = now - self.accounting_delay
        v = job.view(t_acct, self.completing_seconds)
        state = v["state"]
        started, finished = v["started"], v["finished"]
        node = self._node_for(job) if started else "None assigned"
        raw = v["raw"]
        elapsed = 0
        if started:
            elapsed = int((v["end"] if finished else t_acct) - v["start"])
        limit = None if job.time_limit == UNLIMITED else job.time_limit
        time_block = {
            "elapsed": elapsed, "eligible": int(job.submit_time),
            "end": int(v["end"]) if finished else 0, "start": int(v["start"]) if started else 0,
            "submission": int(job.submit_time), "suspended": 0,
            "system": {"seconds": 0, "microseconds": 4000 if started else 0},
            "total": {"seconds": 0, "microseconds": 9000 if started else 0},
            "user": {"seconds": 0, "microseconds": 5000 if started else 0},
        }
        if n == 38:
            time_block["limit"] = limit
        else:
            time_block["limit"] = _nv(UNLIMITED if limit is None else limit)
        if n >= 41:
            time_block["planned"] = _nv(int(v["start"] - job.submit_time) if started else None)
        if n <= 39:
            state_out = {"current": state, "reason": "None"}
            exit_code = _exit_db_old(raw, finished, state == "PENDING")
            if finished:
                exit_code = _exit_db_old(0, True, False)  # recorded: job level reads SUCCESS/0
            derived = _exit_db_old(0, finished, state == "PENDING")
            comment = {"administrator": None, "job": job.comment or None, "system": None}
        else:
            state_out = {"current": [state], "reason": "None"}
            exit_code = _exit_verbose(None if state == "PENDING" else raw)
            derived = _exit_verbose(None if state == "PENDING" else 0)
            comment = {"administrator": "", "job": job.comment, "system": ""}
        steps = []
        if started:
            if n <= 39:
                step_exit = _exit_db_old(raw, finished, False)
                step = {"step": {"job_id": job.job_id, "het": {"component": None}, "id": "batch",
                                 "name": "batch"},
                        "state": state if finished else "RUNNING", "exit_code": step_exit,
                        "nodes": {"count": 1, "range": node}}
            else:
                step = {"step": {"id": "%d.batch" % job.job_id, "name": "batch"},
                        "state": [state if finished else "RUNNING"],
                        "exit_code": _exit_verbose(raw if finished else 0),
                        "nodes": {"count": 1, "range": node, "list": [node]}}
            steps.append(step)
        tres_alloc = _allocated_tres(job, n)
        rec = {
            "account": job.account, "allocation_nodes": 1 if started else 0,
            "array": self._db_array(n, job, now),
            "association": {"account": job.account, "cluster": self.cluster_name,
                            "partition": job.partition, "user": job.user_name},
            "cluster": self.cluster_name, "comment": comment, "constraints": "",
            "container": "", "derived_exit_code": derived, "exit_code": exit_code,
            "flags": ["CLEAR_SCHEDULING"],
            "group": job.user_name,
            "het": {"job_id": 0, "job_offset": None if n <= 39 else _nv(None)},
            "job_id": job.job_id, "name": job.name, "mcs": {"label": ""}, "nodes": node,
            "partition": job.partition, "priority": 4294901759 if n <= 39 else _nv(4294901759),
            "qos": job.qos, "required": {"CPUs": 1, "memory": 0} if n <= 39 else {
                "CPUs": 1, "memory_per_cpu": _nv(None), "memory_per_node": _nv(0)},
            "kill_request_user": (job.kill_request_user if job.kill_request_user else
                                  (None if n <= 39 else "")),
            "reservation": {"id": 0, "name": 0 if n <= 39 else ""}, "state": state_out,
            "steps": steps, "time": time_block,
            "tres": {"allocated": tres_alloc if started else [], "requested": tres_alloc},
            "user": job.user_name, "wckey": {"wckey": "", "flags": []},
            "working_directory": job.cwd,
        }
        if n >= 41:
            stdout = job.stdout or "%s/slurm-%d.out" % (job.cwd.rstrip("/"), job.job_id)
            rec.update({"stdout": stdout, "stderr": job.stderr or stdout, "stdin": job.stdin,
                        "stdout_expanded": stdout.replace("%j", str(job.job_id)),
                        "stderr_expanded": (job.stderr or stdout).replace("%j", str(job.job_id)),
                        "stdin_expanded": job.stdin})
        return rec

    # -- admin views ----------------------------------------------------------------------------
    def job_table(self):
        with self.lock:
            now = self.clock.now()
            by_comment, by_name = {}, {}
            for s in self.submits:
                if s["accepted"]:
                    if s["comment"]:
                        by_comment[s["comment"]] = by_comment.get(s["comment"], 0) + 1
                    if s["name"]:
                        by_name[s["name"]] = by_name.get(s["name"], 0) + 1
            jobs = []
            for job in sorted(self.jobs.values(), key=lambda j: j.job_id):
                v = job.view(now, self.completing_seconds)
                jobs.append({
                    "job_id": job.job_id, "cluster": self.cluster_name, "name": job.name,
                    "array_job_id": job.array_job_id, "array_task_id": job.array_task_id,
                    "comment": job.comment, "partition": job.partition,
                    "user_name": job.user_name, "principal": job.principal,
                    "api_version": job.api_version, "state": v["state"], "flags": v["flags"],
                    "dependency": job.dependency_text, "hold": job.hold,
                    "state_reason": v["reason"], "exit_code_raw": v["raw"],
                    "exit_status": (v["raw"] >> 8) & 0xFF if v["raw"] & 0x7F == 0 else None,
                    "signal": v["raw"] & 0x7F or None,
                    "submit_time": job.submit_time, "start_time": v["start"] or None,
                    "end_time": v["end"] if v["finished"] else None,
                    "cancelled": v["state"] == "CANCELLED",
                    "cancel_requests": job.cancel_requests, "signals_sent": job.signals_sent,
                    "in_live_queue": self._live(job, now),
                    "in_accounting": self._acct_visible(job, now),
                    "time_limit_minutes": None if job.time_limit == UNLIMITED else job.time_limit,
                    "current_working_directory": job.cwd, "environment": job.environment,
                    "script": job.script, "script_plan": job.plan.as_dict(), "job": job.raw_job,
                    "submits_with_same_comment": by_comment.get(job.comment, 0)
                    if job.comment else None,
                    "submits_with_same_name": by_name.get(job.name, 0) if job.name else None,
                })
            return {"cluster": self.cluster_name, "now": now, "jobs": jobs,
                    "submits": list(self.submits),
                    "submit_counts": {"total": len(self.submits),
                                      "accepted": sum(1 for s in self.submits if s["accepted"]),
                                      "rejected": sum(1 for s in self.submits
                                                      if not s["accepted"]),
                                      "by_comment": by_comment, "by_name": by_name}}


def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "dictionary"


def _csv(value):
    if not value:
        return set()
    if isinstance(value, list):
        return set().union(*(_csv(v) for v in value))
    return {x for x in value.split(",") if x}


_URL_UNRESERVED = re.compile(r"[0-9A-Za-z~._-]")


def parse_rest_query(text, n):
    """A request's query string as slurmrestd's serializer/url-encoded reads it
    (SchedMD/slurm src/plugins/serializer/url-encoded/serializer_url_encoded.c): only RFC 3986
    unreserved characters, %XX, '+', '&', ';' and '=' are allowed, anything else (a raw ',',
    say) fails the whole request with 400 "Unable to parse query." (slurmrestd operations.c).
    A repeated key: 22.05 and 23.02 (versions up to v0.0.39 here) keep the last value; 23.11+
    (v0.0.40+) make the values a list (_on_key). Returns a dict, or a SlurmResponse."""
    query = {}
    for pair in (text or "").replace(";", "&").split("&"):
        if not pair:
            continue
        for c in pair:
            if not (_URL_UNRESERVED.match(c) or c in "%+="):
                return SlurmResponse(400, text="Unable to parse query.")
        key, _, value = pair.partition("=")
        key = urllib.parse.unquote_plus(key)
        value = urllib.parse.unquote_plus(value)
        if n >= 40 and key in query:
            prior = query[key]
            query[key] = (prior if isinstance(prior, list) else [prior]) + [value]
        else:
            query[key] = value
    return query


def _uid(user):
    if user == "root":
        return 0
    return 10000 + sum(ord(c) * (i + 1) for i, c in enumerate(user)) % 50000


# ---------------------------------------------------------------------------------------------
# Standalone slurmrestd stand-in (used to test agent_platform.py --forward-to)


def _serve(args):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    clock = ManualClock() if args.manual_clock else RealClock(args.time_scale)
    sim = SlurmSimulator(cluster_name=args.cluster_name, clock=clock,
                         versions=args.versions or VERSIONS, partitions=args.partitions,
                         pending_seconds=args.pending_seconds,
                         completing_seconds=args.completing_seconds,
                         min_job_age=args.min_job_age, accounting_delay=args.accounting_delay)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "slurmrestd-sim"
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between headers and body

        def log_message(self, fmt, *a):
            if args.verbose:
                sys.stderr.write("slurm_sim: " + (fmt % a) + "\n")

        def _send(self, resp):
            data = resp.raw_bytes()
            self.send_response(resp.status)
            if resp.content_type:
                self.send_header("Content-Type", resp.content_type)
            self.send_header("Content-Length", str(len(data)))
            if resp.status >= 400:
                self.send_header("Connection", "Close")
                self.close_connection = True
            self.end_headers()
            if data and self.command != "HEAD":
                self.wfile.write(data)

        def _handle(self, method):
            try:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                user = self.headers.get("X-SLURM-USER-NAME")
                token = self.headers.get("X-SLURM-USER-TOKEN")
                if not user or not token or (args.token and token != args.token):
                    self._send(SlurmResponse(401, text="Authentication failure"))
                    return
                url = urllib.parse.urlsplit(self.path)
                if url.path == "/__admin/jobs":
                    self._send(SlurmResponse(200, sim.job_table()))
                    return
                if url.path == "/__admin/clock" and method == "POST":
                    try:
                        clock.advance(json.loads(raw or b"{}").get("advance", 0))
                        self._send(SlurmResponse(200, clock.describe()))
                    except (SimError, ValueError, AttributeError) as e:
                        self._send(SlurmResponse(400, {"error": str(e)}))
                    return
                parts = [p for p in url.path.split("/") if p]
                try:
                    n = int(parts[1].rsplit(".", 1)[1])
                except (IndexError, ValueError):
                    n = 42
                query = parse_rest_query(url.query, n)
                if isinstance(query, SlurmResponse):
                    self._send(query)
                    return
                body = None
                if raw:
                    if method != "POST":
                        self._send(SlurmResponse(
                            400, text="Unexpected http body provided for non-POST method"))
                        return
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        self._send(SlurmResponse(400, text="Unable to parse query."))
                        return
                elif method == "POST":
                    body = {}
                resp = sim.handle(method, urllib.parse.unquote(url.path), query, body, user=user,
                                  principal=user)
                self._send(resp)
            except Exception as e:  # never crash on bad input
                self._send(SlurmResponse(500, text="simulator error: %r" % (e,)))

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

        def do_DELETE(self):
            self._handle("DELETE")

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % server.server_address[1])
        os.replace(tmp, args.port_file)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


def add_sim_arguments(p):
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="simulated seconds per real second (default 1.0)")
    p.add_argument("--manual-clock", action="store_true",
                   help="the clock only moves through /__admin/clock")
    p.add_argument("--partitions", type=lambda s: [x for x in s.split(",") if x],
                   default=["debug", "gpu"], help="comma separated (default debug,gpu)")
    p.add_argument("--pending-seconds", type=float, default=0.5)
    p.add_argument("--completing-seconds", type=float, default=0.2)
    p.add_argument("--min-job-age", type=float, default=5.0)
    p.add_argument("--accounting-delay", type=float, default=0.5)


def main(argv=None):
    p = argparse.ArgumentParser(description="Slurm simulator with a slurmrestd-like REST API")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=6820)
    p.add_argument("--port-file")
    p.add_argument("--cluster-name", default="cluster")
    p.add_argument("--slurm-api-version", dest="versions", action="append",
                   help="served version (repeatable or comma separated; default all)")
    p.add_argument("--token", help="accepted X-SLURM-USER-TOKEN (default: any non-empty)")
    p.add_argument("--verbose", action="store_true")
    add_sim_arguments(p)
    args = p.parse_args(argv)
    if args.versions:
        args.versions = [v for item in args.versions for v in item.split(",") if v]
    _serve(args)


if __name__ == "__main__":
    main()
