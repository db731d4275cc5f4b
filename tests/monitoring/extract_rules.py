#!/usr/bin/env python3
"""Writes the `spec` of deploy/monitoring/prometheusrule.yaml (a PrometheusRule) as a plain
Prometheus rules file, so that promtool and a real Prometheus load the one source.

Usage: extract_rules.py PROMETHEUSRULE OUT [--for-override DURATION]
  --for-override  replace every alert's `for:` (the e2e test fires alerts in seconds, not minutes)
"""
import argparse
import sys

import yaml


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("prometheusrule")
    p.add_argument("out")
    p.add_argument("--for-override")
    args = p.parse_args(argv)
    with open(args.prometheusrule) as f:
        doc = yaml.safe_load(f)
    if doc.get("kind") != "PrometheusRule" or "groups" not in doc.get("spec", {}):
        sys.exit("%s is not a PrometheusRule with spec.groups" % args.prometheusrule)
    spec = doc["spec"]
    if args.for_override:
        for group in spec["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    rule["for"] = args.for_override
    with open(args.out, "w") as f:
        yaml.safe_dump(spec, f, sort_keys=False)


if __name__ == "__main__":
    main(sys.argv[1:])
