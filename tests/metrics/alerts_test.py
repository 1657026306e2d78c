#!/usr/bin/python3
"""The alerting rules of deploy/prometheus against their runbook, their unit tests and, with
--colltestd and --colltest, a live colltestd's /metrics.

    alerts_test.py
    alerts_test.py --colltestd build/bin/colltestd --colltest build/bin/colltest

Without the binaries (the `metrics.alert_rules.annotations` test):
  - every alert has a unique name, a severity of critical or warning, and the annotations
    summary, description (templated with $labels or $value) and runbook_url; the one side of
    each group_left / group_right join in its expression is an aggregation (a node scraped by
    two jobs would make a bare selector fail many-to-many);
  - the runbook_url is docs/runbook.md#ANCHOR, ANCHOR is the alert's name in lower case, and
    docs/runbook.md has a heading with that anchor; every `## Colltest...` heading there is an
    alert (no section outlives its alert);
  - colltest-alerts.test.yml has, for every alert, a case where it fires and one where it does
    not.

With the binaries (the `metrics.alert_rules.live` test) also: every metric an alert's expression
names is in the /metrics of a colltestd on the cpu backend after the runs of
promql_refs.live_scrape, with the labels its matchers and groupings use, and every $labels.X of
its annotations is a label of those metrics (or one Prometheus adds).

Reads the YAML with Debian's python3-yaml, as tests/deploy does.
"""

import argparse
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import promql_refs  # noqa: E402  (puts tests/pylib on the path)
from check_failures import Failures  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
RULES = os.path.join(ROOT, "deploy", "prometheus", "colltest-alerts.yml")
RULE_TESTS = os.path.join(ROOT, "deploy", "prometheus", "colltest-alerts.test.yml")
RUNBOOK = os.path.join(ROOT, "docs", "runbook.md")
SEVERITIES = {"critical", "warning"}
RUNBOOK_URL = re.compile(r"docs/runbook\.md#([a-z0-9-]+)")
# Series an alert may use that Prometheus makes, not colltestd: {name: reason}.
FROM_PROMETHEUS = {"up": "Prometheus' own series of every scrape target (ColltestDown)"}


def slug(heading):
    """The anchor GitHub (and most Markdown renderers) give a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def runbook_headings():
    with open(RUNBOOK, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"(?ms)^```.*?^```", "", text)  # a `#` in a code block is no heading
    return [m.group(2) for m in re.finditer(r"(?m)^(#{1,6})\s+(.+?)\s*#*\s*$", text)]


def alerts():
    with open(RULES, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    return [r for g in data["groups"] for r in g["rules"] if "alert" in r]


def check_static(f, rules):
    names = [r["alert"] for r in rules]
    f.check(len(names) == len(set(names)), "rules", f"alert names not unique: {names}")
    headings = runbook_headings()
    anchors = {slug(h) for h in headings}
    for r in rules:
        w = f"alert {r['alert']}"
        f.check((r.get("labels") or {}).get("severity") in SEVERITIES, w,
                f"severity {(r.get('labels') or {}).get('severity')!r} not in {sorted(SEVERITIES)}")
        ann = r.get("annotations") or {}
        for key in ("summary", "description", "runbook_url"):
            f.check(isinstance(ann.get(key), str) and ann[key].strip(), w, f"no {key}")
        f.check(re.search(r"\{\{[^}]*\$(labels|value)", ann.get("description", "")), w,
                "the description uses neither $labels nor $value")
        sides = promql_refs.unaggregated_join_sides(r["expr"])
        f.check(not sides, w, f"the one side of a join is not aggregated ({'; '.join(sides)}): "
                "a node scraped by two jobs makes it fail many-to-many")
        m = RUNBOOK_URL.fullmatch(ann.get("runbook_url", ""))
        if f.check(m, w, f"runbook_url {ann.get('runbook_url')!r} is not docs/runbook.md#ANCHOR"):
            f.check(m.group(1) == r["alert"].lower(), w,
                    f"runbook anchor {m.group(1)!r}, want {r['alert'].lower()!r}")
            f.check(m.group(1) in anchors, w, f"docs/runbook.md has no heading #{m.group(1)}")
    for h in headings:
        if h.startswith("Colltest"):
            f.check(h in names, "docs/runbook.md", f"section {h!r} is no alert of the rules")

    with open(RULE_TESTS, encoding="utf-8") as stream:
        tests = yaml.safe_load(stream)
    firing, quiet = set(), set()
    for group in tests.get("tests", []):
        for case in group.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else quiet).add(case.get("alertname"))
    for name in names:
        f.check(name in firing, "colltest-alerts.test.yml", f"no case where {name} fires")
        f.check(name in quiet, "colltest-alerts.test.yml", f"no case where {name} stays quiet")


def check_live(f, rules, colltestd, colltest):
    scrape, problems = promql_refs.live_scrape(colltestd, colltest)
    for p in problems:
        f.check(False, "live run", p)
    for r in rules:
        w = f"alert {r['alert']}"
        try:
            refs = promql_refs.references(r["expr"])
        except ValueError as e:
            f.check(False, w, str(e))
            continue
        for problem in promql_refs.check_against_scrape(refs, scrape, FROM_PROMETHEUS, w):
            f.check(False, "live /metrics", problem)
        have = set(promql_refs.TARGET_LABELS)
        for name in refs.names:
            have |= set(scrape.labels.get(name, {}))
        templates = " ".join(list((r.get("annotations") or {}).values())
                             + list((r.get("labels") or {}).values()))
        for label in sorted(set(re.findall(r"\$labels\.(\w+)", templates))):
            f.check(label in have, w, f"$labels.{label} is a label of none of its metrics")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--colltestd", help="with --colltest: also check against a live /metrics")
    parser.add_argument("--colltest")
    args = parser.parse_args()
    f = Failures(echo=True)
    rules = alerts()
    check_static(f, rules)
    if args.colltestd and args.colltest:
        check_live(f, rules, args.colltestd, args.colltest)
    if f.items:
        print(f"{len(f.items)} of {f.checks} checks failed", file=sys.stderr)
        return 1
    print(f"alert rules: {len(rules)} alerts, {f.checks} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
