#!/usr/bin/python3
# File: tests/gitops/run_gitops_tests.py
"""Checks the GitOps health integrations in deploy/gitops against the same test objects.

1. Argo CD: runs deploy/gitops/argocd/health.lua (SlurmJob), slurmcluster-health.lua
   (SlurmCluster) and slurmcronjob-health.lua (SlurmCronJob) on every case of deploy/gitops/argocd/health_test.yaml (Argo CD's own layout:
   tests: [{healthStatus: {status, message}, inputPath}]) with lua5.4 and
   tests/gitops/run_health_tests.lua, which sets up the environment Argo CD gives health scripts.
   The YAML objects are handed to Lua as table literals written here.
2. argocd-cm-patch.yaml: its inline scripts must equal the .lua files (--write-argocd-cm
   rewrites them from the files).
3. Flux: evaluates the healthCheckExprs of deploy/gitops/flux/healthcheckexprs*.yaml on the same
   objects with a small evaluator of the CEL subset they use, following Flux's order
   (observedGeneration check, then inProgress, failed, current; none true = InProgress; an
   evaluation error = Error), and a model of kstatus' generic rules for plain `wait: true` /
   `healthChecks`. Expectations: tests/gitops/flux_expected.yaml.

--self-test instead checks that the checks above catch wrong answers: it runs them against
deliberately broken scripts and expressions and fails unless every one is reported.

Needs only Debian's lua5.4 and python3-yaml. Exit status 0 when everything matches.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ARGOCD_DIR = ROOT / "deploy" / "gitops" / "argocd"
FLUX_DIR = ROOT / "deploy" / "gitops" / "flux"
GROUP = "hpc.slurmoperator.dev"
# Kind -> health script, as installed by argocd-cm-patch.yaml.
SCRIPTS = {"SlurmJob": "health.lua", "SlurmCluster": "slurmcluster-health.lua",
           "SlurmCronJob": "slurmcronjob-health.lua"}
CM_KEY = "resource.customizations.health." + GROUP + "_{kind}"
# Flux expectation column -> Kustomization file whose healthCheckExprs it checks.
CEL_FILES = {"cel": "healthcheckexprs.yaml", "celSubmitted": "healthcheckexprs-submitted.yaml"}


class CheckFailed(Exception):
    pass


# --- YAML as Kubernetes sees it ------------------------------------------------------------


class _KubeYamlLoader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings, as Kubernetes' JSON objects have them."""


_KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=_KubeYamlLoader)


def load_yaml_documents(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.load_all(f, Loader=_KubeYamlLoader) if d is not None]


# --- Lua table literals --------------------------------------------------------------------


def lua_string(s):
    out = ['"']
    for b in s.encode("utf-8"):
        c = chr(b)
        if 0x20 <= b < 0x7F and c not in '"\\':
            out.append(c)
        else:
            out.append("\\%03d" % b)
    out.append('"')
    return "".join(out)


def to_lua(value):
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return lua_string(value)
    if isinstance(value, list):
        return "{" + ", ".join(to_lua(v) for v in value) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join("[%s] = %s" % (lua_string(str(k)), to_lua(v))
                               for k, v in value.items()) + "}"
    raise TypeError("cannot express %r in Lua" % (value,))


# --- Argo CD ---------------------------------------------------------------------------------


def argocd_cases():
    """[(inputPath, object, expected status, expected message)] from health_test.yaml."""
    spec = load_yaml(ARGOCD_DIR / "health_test.yaml")
    cases = []
    for t in spec["tests"]:
        obj = load_yaml(ARGOCD_DIR / t["inputPath"])
        hs = t["healthStatus"]
        cases.append((t["inputPath"], obj, hs["status"], hs.get("message", "")))
    return cases


def script_for(obj, scripts):
    group = obj.get("apiVersion", "").split("/")[0]
    kind = obj.get("kind")
    if group != GROUP or kind not in scripts:
        raise CheckFailed("no health script for %s %s" % (obj.get("apiVersion"), kind))
    return scripts[kind]


def check_argocd(cases, scripts, lua, quiet=False):
    """Runs the Lua runner; returns the number of failed cases (0 = all pass)."""
    entries = []
    for name, obj, status, message in cases:
        entries.append("{name = %s, script = %s, obj = %s, expected = {status = %s, message = %s}}"
                       % (lua_string(name), lua_string(str(script_for(obj, scripts))),
                          to_lua(obj), lua_string(status), lua_string(message)))
    with tempfile.TemporaryDirectory(prefix="gitops-health-") as tmp:
        cases_file = Path(tmp) / "cases.lua"
        cases_file.write_text("return {\n" + ",\n".join(entries) + "\n}\n", encoding="utf-8")
        run = subprocess.run([lua, str(HERE / "run_health_tests.lua"), str(cases_file)],
                             capture_output=True, text=True)
    if not quiet:
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
    if run.returncode not in (0, 1):
        raise CheckFailed("%s exited with %d: %s" % (lua, run.returncode, run.stderr.strip()))
    return len(re.findall(r"^FAIL ", run.stdout, flags=re.M)) or run.returncode


def check_testdata_listed():
    listed = {t["inputPath"] for t in load_yaml(ARGOCD_DIR / "health_test.yaml")["tests"]}
    present = {"testdata/" + p.name for p in (ARGOCD_DIR / "testdata").glob("*.yaml")}
    problems = []
    for p in sorted(present - listed):
        problems.append("%s is not used by health_test.yaml" % p)
    for p in sorted(listed - present):
        problems.append("health_test.yaml names %s, which does not exist" % p)
    return problems


def argocd_cm_text():
    """argocd-cm-patch.yaml with its data section rewritten from the .lua files (everything
    before the `data:` line is kept)."""
    current = (ARGOCD_DIR / "argocd-cm-patch.yaml").read_text(encoding="utf-8")
    head = current[:current.index("\ndata:\n") + 1] if "\ndata:\n" in current else current
    lines = [head.rstrip("\n"), "data:"]
    for kind, script in SCRIPTS.items():
        lines.append("  %s: |" % CM_KEY.format(kind=kind))
        for line in (ARGOCD_DIR / script).read_text(encoding="utf-8").rstrip("\n").split("\n"):
            lines.append(("    " + line) if line else "")
    return "\n".join(lines) + "\n"


def check_argocd_cm():
    doc = load_yaml(ARGOCD_DIR / "argocd-cm-patch.yaml")
    problems = []
    if doc.get("kind") != "ConfigMap" or doc.get("metadata", {}).get("name") != "argocd-cm":
        problems.append("argocd-cm-patch.yaml is not a patch of ConfigMap argocd-cm")
    data = doc.get("data") or {}
    for kind, script in SCRIPTS.items():
        key = CM_KEY.format(kind=kind)
        want = (ARGOCD_DIR / script).read_text(encoding="utf-8")
        if data.get(key) != want:
            problems.append("argocd-cm-patch.yaml key %s differs from %s; run "
                            "tests/gitops/run_gitops_tests.py --write-argocd-cm" % (key, script))
    return problems


# --- A CEL subset ----------------------------------------------------------------------------
# Enough for the healthCheckExprs here: field selection, has(), ! && || == != < <= > >= in,
# string/int/bool/null/list literals, and the list macros exists, all, filter plus size().
# Semantics follow cel-spec: a missing field or variable is an error; && and || absorb an
# error when the other side decides the result; exists/all do the same across elements.


class CelError(Exception):
    pass


_TOKEN = re.compile(r"""\s*(?:
    (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<int>\d+)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[!<>().,\[\]])
)""", re.X)


def _tokenize(text):
    tokens, pos, text = [], 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise CelError("cannot parse %r at %d" % (text, pos))
        pos = m.end()
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "str":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        elif kind == "int":
            value = int(value)
        tokens.append((kind, value))
    tokens.append(("end", None))
    return tokens


class _Parser:
    def __init__(self, text):
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self, value=None):
        kind, v = self.tokens[self.i]
        return v == value if value is not None else (kind, v)

    def take(self, value=None):
        kind, v = self.tokens[self.i]
        if value is not None and v != value:
            raise CelError("expected %r, found %r" % (value, v))
        self.i += 1
        return kind, v

    def parse(self):
        node = self.or_()
        if self.tokens[self.i][0] != "end":
            raise CelError("unexpected %r" % (self.tokens[self.i][1],))
        return node

    def or_(self):
        node = self.and_()
        while self.peek("||"):
            self.take()
            node = ("or", node, self.and_())
        return node

    def and_(self):
        node = self.relation()
        while self.peek("&&"):
            self.take()
            node = ("and", node, self.relation())
        return node

    def relation(self):
        node = self.unary()
        kind, v = self.peek()
        if v in ("==", "!=", "<", "<=", ">", ">=") or (kind == "id" and v == "in"):
            self.take()
            node = ("rel", v, node, self.unary())
        return node

    def unary(self):
        if self.peek("!"):
            self.take()
            return ("not", self.unary())
        return self.member()

    def member(self):
        node = self.primary()
        while True:
            if self.peek("."):
                self.take()
                _, name = self.take()
                if self.peek("("):
                    self.take()
                    args = self.args(")")
                    node = ("call", name, node, args)
                else:
                    node = ("select", node, name)
            elif self.peek("["):
                self.take()
                index = self.or_()
                self.take("]")
                node = ("index", node, index)
            else:
                return node

    def args(self, close):
        args = []
        if not self.peek(close):
            args.append(self.or_())
            while self.peek(","):
                self.take()
                args.append(self.or_())
        self.take(close)
        return args

    def primary(self):
        kind, v = self.take()
        if kind in ("str", "int"):
            return ("lit", v)
        if kind == "id":
            if v in ("true", "false"):
                return ("lit", v == "true")
            if v == "null":
                return ("lit", None)
            if v == "has" and self.peek("("):
                self.take()
                arg = self.or_()
                self.take(")")
                if arg[0] != "select":
                    raise CelError("has() needs a field selection, e.g. has(a.b)")
                return ("has", arg[1], arg[2])
            return ("ident", v)
        if v == "(":
            node = self.or_()
            self.take(")")
            return node
        if v == "[":
            return ("list", self.args("]"))
        raise CelError("unexpected %r" % (v,))


def cel_parse(text):
    return _Parser(text).parse()


def _bool(v):
    if not isinstance(v, bool):
        raise CelError("no such overload: expected bool, got %s" % type(v).__name__)
    return v


def _equal(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def cel_eval(node, scope):
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "list":
        return [cel_eval(n, scope) for n in node[1]]
    if op == "ident":
        if node[1] not in scope:
            raise CelError("no such attribute(s): %s" % node[1])
        return scope[node[1]]
    if op == "select":
        target = cel_eval(node[1], scope)
        if not isinstance(target, dict):
            raise CelError("no such key: %s" % node[2])
        if node[2] not in target:
            raise CelError("no such key: %s" % node[2])
        return target[node[2]]
    if op == "has":
        target = cel_eval(node[1], scope)
        if not isinstance(target, dict):
            raise CelError("invalid type for field selection")
        return node[2] in target
    if op == "index":
        target, index = cel_eval(node[1], scope), cel_eval(node[2], scope)
        try:
            return target[index]
        except (KeyError, IndexError, TypeError):
            raise CelError("no such key or index: %r" % (index,))
    if op == "not":
        return not _bool(cel_eval(node[1], scope))
    if op in ("and", "or"):
        decisive = op == "or"  # the value that decides the result on its own
        results, error = [], None
        for side in node[1:]:
            try:
                results.append(_bool(cel_eval(side, scope)))
            except CelError as e:
                error = error or e
        if decisive in results:
            return decisive
        if error:
            raise error
        return not decisive
    if op == "rel":
        rel, a, b = node[1], cel_eval(node[2], scope), cel_eval(node[3], scope)
        if rel == "==":
            return _equal(a, b)
        if rel == "!=":
            return not _equal(a, b)
        if rel == "in":
            if isinstance(b, list):
                return any(_equal(a, x) for x in b)
            if isinstance(b, dict):
                return a in b
            raise CelError("no such overload: in")
        if type(a) is not type(b) or isinstance(a, (bool, list, dict)) or a is None:
            raise CelError("no such overload: %s" % rel)
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[rel]
    if op == "call":
        name, target_node, args = node[1], node[2], node[3]
        target = cel_eval(target_node, scope)
        if name == "size" and not args:
            if isinstance(target, (list, dict, str)):
                return len(target)
            raise CelError("no such overload: size")
        if name in ("exists", "all", "filter"):
            if len(args) != 2 or args[0][0] != "ident":
                raise CelError("%s(var, predicate) expected" % name)
            if not isinstance(target, list):
                raise CelError("%s() needs a list" % name)
            var, predicate = args[0][1], args[1]
            if name == "filter":
                return [x for x in target if _bool(cel_eval(predicate, {**scope, var: x}))]
            decisive = name == "exists"
            error = None
            for x in target:
                try:
                    if _bool(cel_eval(predicate, {**scope, var: x})) == decisive:
                        return decisive
                except CelError as e:
                    error = error or e
            if error:
                raise error
            return not decisive
        raise CelError("unsupported function %s" % name)
    raise CelError("unsupported node %r" % (op,))


def flux_cel_status(obj, exprs):
    """What Flux's CEL status evaluator (fluxcd/pkg runtime/cel) reports for obj."""
    status = obj.get("status")
    observed = status.get("observedGeneration") if isinstance(status, dict) else None
    generation = (obj.get("metadata") or {}).get("generation")
    if observed is not None and generation is not None and observed != generation:
        return "InProgress"
    for key, result in (("inProgress", "InProgress"), ("failed", "Failed"),
                        ("current", "Current")):
        if not exprs.get(key):
            continue
        try:
            value = cel_eval(exprs[key + "_ast"], obj)
        except CelError:
            return "Error"
        if not isinstance(value, bool):
            return "Error"
        if value:
            return result
    return "InProgress"


def kstatus_status(obj, reads_ready):
    """kstatus' generic rules (cli-utils pkg/kstatus) for a custom resource. reads_ready: also
    apply the Ready rule its README describes (True -> Current, False -> InProgress)."""
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return "Terminating"
    status = obj.get("status") or {}
    observed, generation = status.get("observedGeneration"), meta.get("generation")
    if observed is not None and generation is not None and observed != generation:
        return "InProgress"
    conditions = status.get("conditions") or []
    for c in conditions:
        if c.get("type") == "Reconciling" and c.get("status") == "True":
            return "InProgress"
        if c.get("type") == "Stalled" and c.get("status") == "True":
            return "Failed"
    if reads_ready:
        for c in conditions:
            if c.get("type") == "Ready":
                return {"True": "Current", "False": "InProgress"}.get(c.get("status"), "Current")
    return "Current"


def load_cel_expressions(mutate=None):
    """{column: {kind: {inProgress, failed, current, *_ast}}} from the Flux files."""
    out = {}
    for column, file in CEL_FILES.items():
        per_kind = {}
        for doc in load_yaml_documents(FLUX_DIR / file):
            if doc.get("kind") != "Kustomization" or \
                    doc.get("apiVersion") != "kustomize.toolkit.fluxcd.io/v1":
                raise CheckFailed("%s: expected a kustomize.toolkit.fluxcd.io/v1 Kustomization"
                                  % file)
            for entry in doc["spec"].get("healthCheckExprs", []):
                if entry.get("apiVersion") != GROUP + "/v1alpha1" or not entry.get("current"):
                    raise CheckFailed("%s: healthCheckExprs entry %r needs apiVersion %s/v1alpha1"
                                      " and current" % (file, entry.get("kind"), GROUP))
                exprs = {k: entry.get(k) for k in ("inProgress", "failed", "current")}
                if mutate:
                    exprs = mutate(column, entry["kind"], exprs)
                for k in ("inProgress", "failed", "current"):
                    if exprs.get(k):
                        try:
                            exprs[k + "_ast"] = cel_parse(exprs[k])
                        except CelError as e:
                            raise CheckFailed("%s %s.%s: %s" % (file, entry["kind"], k, e))
                per_kind[entry["kind"]] = exprs
        missing = set(SCRIPTS) - set(per_kind)
        if missing:
            raise CheckFailed("%s has no healthCheckExprs for %s" % (file, ", ".join(missing)))
        out[column] = per_kind
    return out


def check_flux(cases, cel, quiet=False):
    """Returns the list of mismatches between evaluated and expected Flux statuses."""
    expected = load_yaml(HERE / "flux_expected.yaml")
    problems, count = [], 0
    for name, obj, _, _ in cases:
        want = expected.get(name)
        if want is None:
            problems.append("%s: no entry in tests/gitops/flux_expected.yaml" % name)
            continue
        got = {}
        for column in CEL_FILES:
            got[column] = flux_cel_status(obj, cel[column][obj["kind"]])
        if "kstatus" in want:
            with_ready, without_ready = kstatus_status(obj, True), kstatus_status(obj, False)
            got["kstatus"] = with_ready if with_ready == without_ready else \
                "%s or %s depending on the kstatus version" % (with_ready, without_ready)
        bad = [k for k in got if k not in want or got[k] != want[k]]
        bad += [k for k in want if k not in got]
        count += 1
        if bad:
            problems.append("%s: %s" % (name, ", ".join(
                "%s got %s, want %s" % (k, got.get(k, "-"), want.get(k, "-")) for k in bad)))
        elif not quiet:
            print("ok   %s: %s" % (name, ", ".join("%s %s" % kv for kv in got.items())))
    for name in sorted(set(expected) - {c[0] for c in cases}):
        problems.append("tests/gitops/flux_expected.yaml names %s, which no Argo CD case uses"
                        % name)
    if not quiet:
        for p in problems:
            print("FAIL " + p)
        print("flux health: %d cases, %d problems" % (count, len(problems)))
    return problems


# --- Main ------------------------------------------------------------------------------------


def run_all(lua):
    cases = argocd_cases()
    failures = check_argocd(cases, {k: ARGOCD_DIR / v for k, v in SCRIPTS.items()}, lua)
    problems = check_testdata_listed() + check_argocd_cm()
    problems += check_flux(cases, load_cel_expressions())
    for p in problems:
        print("FAIL " + p)
    kinds = {}
    for _, obj, _, _ in cases:
        kinds[obj["kind"]] = kinds.get(obj["kind"], 0) + 1
    print("gitops: %s; %d Argo CD failures, %d other problems"
          % (", ".join("%d %s cases" % (n, k) for k, n in sorted(kinds.items())),
             failures, len(problems)))
    return 0 if failures == 0 and not problems else 1


def self_test(lua):
    """Each wrong variant below must be caught; returns 0 when all are."""
    cases = argocd_cases()
    real = {k: ARGOCD_DIR / v for k, v in SCRIPTS.items()}
    source = (ARGOCD_DIR / SCRIPTS["SlurmJob"]).read_text(encoding="utf-8")
    mutants = {
        "always Healthy": 'return {status = "Healthy", message = ""}\n',
        "failed jobs reported Healthy": source.replace('hs.status = "Degraded"',
                                                       'hs.status = "Healthy"'),
        "generation check dropped": source.replace("observed ~= generation", "false"),
        "messages changed": source.replace("return hs", 'hs.message = (hs.message or "") .. "!" '
                                                        "return hs"),
        "uses a string method": source.replace("local meta = obj.metadata or {}",
                                               'local meta = obj.metadata or {}\n'
                                               'local _ = ("x"):upper()'),
        "invalid status": source.replace('"Suspended"', '"Paused"'),
    }
    caught = 0
    with tempfile.TemporaryDirectory(prefix="gitops-selftest-") as tmp:
        for label, text in mutants.items():
            if text == source:
                print("FAIL self-test: mutant %r did not change health.lua" % label)
                continue
            path = Path(tmp) / (re.sub(r"\W+", "-", label) + ".lua")
            path.write_text(text, encoding="utf-8")
            failures = check_argocd(cases, {**real, "SlurmJob": path}, lua, quiet=True)
            status = "caught (%d failing cases)" % failures if failures else "NOT CAUGHT"
            print("%s Argo CD mutant %r: %s" % ("ok  " if failures else "FAIL", label, status))
            caught += bool(failures)

    def swap(column, kind, exprs):
        if column == "cel" and kind == "SlurmJob":
            exprs = dict(exprs, failed=exprs["current"], current=exprs["failed"])
        return exprs

    def drop_failed(column, kind, exprs):
        if column == "celSubmitted" and kind == "SlurmJob":
            exprs = dict(exprs, failed=None)
        return exprs

    cel_mutants = {"failed and current swapped": swap, "failed expression dropped": drop_failed}
    for label, mutate in cel_mutants.items():
        problems = check_flux(cases, load_cel_expressions(mutate), quiet=True)
        print("%s Flux mutant %r: %s" % ("ok  " if problems else "FAIL", label,
                                         "caught (%d problems)" % len(problems) if problems
                                         else "NOT CAUGHT"))
        caught += bool(problems)
    total = len(mutants) + len(cel_mutants)
    print("gitops self-test: %d of %d wrong variants caught" % (caught, total))
    return 0 if caught == total else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lua",
                        default=os.environ.get("LUA") or shutil.which("lua5.4") or "lua5.4",
                        help="Lua 5.4 interpreter (default: lua5.4 on PATH)")
    parser.add_argument("--self-test", action="store_true",
                        help="check that wrong scripts and expressions are caught")
    parser.add_argument("--write-argocd-cm", action="store_true",
                        help="rewrite deploy/gitops/argocd/argocd-cm-patch.yaml from the scripts")
    args = parser.parse_args()
    try:
        if args.write_argocd_cm:
            (ARGOCD_DIR / "argocd-cm-patch.yaml").write_text(argocd_cm_text(), encoding="utf-8")
            problems = check_argocd_cm()
            for p in problems:
                print("FAIL " + p)
            return 1 if problems else 0
        if not shutil.which(args.lua):
            print("FAIL %s not found; install Debian's lua5.4 (scripts/install-deps.sh)" % args.lua)
            return 1
        return self_test(args.lua) if args.self_test else run_all(args.lua)
    except CheckFailed as e:
        print("FAIL " + str(e))
        return 1


if __name__ == "__main__":
    sys.exit(main())
