#!/usr/bin/env bash
# File: tests/monitoring/run_promtool_tests.sh
#
# ctest `monitoring.promtool`: extracts the rules from deploy/monitoring/prometheusrule.yaml,
# checks them with `promtool check rules`, requires a test case for every alert in
# tests/monitoring/rules_test.yaml, and runs the cases with `promtool test rules`.
# Also checks that the Grafana dashboard is valid JSON whose queries name only metrics the
# operator serves (controller/server/metric_names.h).
#
# Usage: run_promtool_tests.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src="$1"
work="$2"
promtool="${PROMTOOL:-promtool}"
if ! command -v "${promtool}" >/dev/null; then
  echo "promtool not found: install Debian's prometheus package (scripts/install-deps.sh)" >&2
  exit 1
fi
rm -rf "${work}"
mkdir -p "${work}"
python3 "${src}/tests/monitoring/extract_rules.py" \
  "${src}/deploy/monitoring/prometheusrule.yaml" "${work}/slurmjob-operator.rules.yaml"
cp "${src}/tests/monitoring/rules_test.yaml" "${work}/rules_test.yaml"
"${promtool}" check rules "${work}/slurmjob-operator.rules.yaml"

python3 - "${work}/slurmjob-operator.rules.yaml" "${work}/rules_test.yaml" <<'PY'
import sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))
tests = yaml.safe_load(open(sys.argv[2]))
alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
firing = {c["alertname"] for t in tests["tests"] for c in t.get("alert_rule_test", [])
          if c.get("exp_alerts")}
quiet = {c["alertname"] for t in tests["tests"] for c in t.get("alert_rule_test", [])
         if not c.get("exp_alerts")}
missing = sorted((alerts - firing) | (alerts - quiet))
if missing:
    sys.exit("rules_test.yaml needs a firing and a non-firing case for: %s" % ", ".join(missing))
print("every alert has a firing and a quiet case: %s" % ", ".join(sorted(alerts)))
PY
"${promtool}" test rules "${work}/rules_test.yaml"

python3 - "${src}/deploy/monitoring/dashboards/slurmjob-operator.json" \
  "${src}/controller/server/metric_names.h" <<'PY'
import json, re, sys
dash = json.load(open(sys.argv[1]))
served = set(re.findall(r'"([a-z_]+)"', open(sys.argv[2]).read()))
exprs = []
def walk(panels):
    for p in panels:
        exprs.extend(t["expr"] for t in p.get("targets", []) if "expr" in t)
        walk(p.get("panels", []))
walk(dash["panels"])
if not exprs:
    sys.exit("the dashboard has no queries")
bad = []
for e in exprs:
    for name in re.findall(r"\b((?:controller_runtime|workqueue|rest_client|leader_election|"
                           r"slurmjob_operator)_[a-z_]+)", e):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name not in served and base not in served:
            bad.append(name)
if bad:
    sys.exit("the dashboard queries metrics the operator does not serve: %s" % sorted(set(bad)))
print("dashboard: %d queries, all on served metrics" % len(exprs))
PY
