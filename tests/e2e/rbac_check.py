#!/usr/bin/python3
"""Checks RBAC manifests against the requests a client really made (issue 11: RBAC that matches
the code, proven).

    rbac_check.py --access-log LOG --user-agent slurmjob-operator --service-account NS/NAME \
        RBAC.yaml [RBAC.yaml ...]

LOG is the stand-in API server's --access-log (one JSON line per request: verb, group, resource,
subresource, namespaced, namespace, userAgent). Only lines whose User-Agent starts with
--user-agent count. The manifests' Roles, ClusterRoles and their bindings to the service account
give the grants: a ClusterRoleBinding grants its ClusterRole's rules everywhere; a RoleBinding
grants its Role's (or ClusterRole's) rules in its own namespace only.

Fails (exit 1), listing each problem, when
  * a request is not allowed by any grant (a missing rule, or one granted in the wrong scope), or
  * a grant's (group, resource, verb) was never used by any request (a rule broader than the code).
Wildcards are refused: they cannot be checked. --allow-unused reports only missing grants (for a
run that exercises one mode, such as --shards, against all the manifests).
"""

import argparse
import json
import sys

import yaml


def load_manifests(paths):
    docs = []
    for path in paths:
        with open(path) as f:
            docs.extend(d for d in yaml.safe_load_all(f) if d)
    return docs


def grants_of(docs, sa_ns, sa_name):
    """[(scope, group, resource, verb, names)] with scope '*' (cluster-wide) or a namespace, and
    names the rule's resourceNames (a frozenset; None: any object)."""
    roles = {}
    for d in docs:
        if d.get("kind") in ("Role", "ClusterRole"):
            md = d.get("metadata") or {}
            key = (d["kind"], md.get("namespace", "") if d["kind"] == "Role" else "", md["name"])
            roles[key] = d.get("rules") or []
    out = []
    for d in docs:
        kind = d.get("kind")
        if kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa_name and
                   s.get("namespace") == sa_ns for s in d.get("subjects") or []):
            continue
        md = d.get("metadata") or {}
        ref = d["roleRef"]
        scope = "*" if kind == "ClusterRoleBinding" else md["namespace"]
        rkey = (ref["kind"], md.get("namespace", "") if ref["kind"] == "Role" else "", ref["name"])
        if rkey not in roles:
            raise SystemExit("%s %s binds %s %s, which no manifest defines" % (
                kind, md.get("name"), ref["kind"], ref["name"]))
        for rule in roles[rkey]:
            for field in ("apiGroups", "resources", "verbs"):
                if "*" in rule.get(field, []):
                    raise SystemExit("wildcard in %s of %s: cannot be checked" % (field, ref["name"]))
            names = frozenset(rule["resourceNames"]) if rule.get("resourceNames") else None
            for g in rule.get("apiGroups", []):
                for r in rule.get("resources", []):
                    for v in rule.get("verbs", []):
                        out.append((scope, g, r, v, names))
    return out


def requests_of(path, user_agent):
    out = []
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if not (e.get("userAgent") or "").startswith(user_agent):
                continue
            res = e["resource"] + ("/" + e["subresource"] if e.get("subresource") else "")
            # A namespaced request is allowed by grants in its namespace; a request without one
            # (a cluster-scoped resource, or a list/watch across namespaces) needs a cluster grant.
            scope = e["namespace"] if e.get("namespaced") else "*"
            out.append((scope, e["group"], res, e["verb"], e.get("name") or ""))
    return out


def check(grants, requests):
    problems = []
    for scope, g, r, v, name in sorted(set(requests)):
        if not any(gs in ("*", scope) and (gg, gr, gv) == (g, r, v) and (names is None or name in names)
                   for gs, gg, gr, gv, names in grants):
            where = "cluster-wide" if scope == "*" else "in namespace %s" % scope
            what = ": %s" % name if name else ""
            problems.append("missing grant: %s %s/%s %s (used%s, not granted)" % (v, g or "core", r, where, what))
    used = {(g, r, v) for _, g, r, v, _ in requests}
    for scope, g, r, v, _ in sorted(set(grants), key=lambda x: x[:4]):
        if (g, r, v) not in used:
            problems.append("unused grant: %s %s/%s (granted %s, never used)" % (
                v, g or "core", r, "cluster-wide" if scope == "*" else "in " + scope))
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--access-log", required=True)
    p.add_argument("--user-agent", required=True)
    p.add_argument("--service-account", required=True, help="NAMESPACE/NAME")
    p.add_argument("--allow-unused", action="store_true",
                   help="only missing grants fail (a run that exercises one mode, e.g. --shards)")
    p.add_argument("manifests", nargs="+")
    a = p.parse_args()
    sa_ns, sa_name = a.service_account.split("/", 1)
    grants = grants_of(load_manifests(a.manifests), sa_ns, sa_name)
    requests = requests_of(a.access_log, a.user_agent)
    if not requests:
        print("no requests from User-Agent %r in %s" % (a.user_agent, a.access_log))
        return 1
    problems = check(grants, requests)
    if a.allow_unused:
        problems = [pr for pr in problems if not pr.startswith("unused grant:")]
    for line in sorted({(g, r, v) for _, g, r, v, _ in requests}):
        print("used: %s %s/%s" % (line[2], line[0] or "core", line[1]))
    for pr in problems:
        print(pr)
    print("RBAC matches the requests" if not problems else "%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
