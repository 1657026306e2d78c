#!/usr/bin/python3
"""The Grafana dashboards of deploy/grafana (docs/grafana.md) against Grafana's structure,
promtool's PromQL parser and, with --colltestd and --colltest, a live colltestd's /metrics.

    grafana_test.py --promtool PROMTOOL
    grafana_test.py --promtool PROMTOOL --colltestd build/bin/colltestd --colltest build/bin/colltest

Without the binaries (the `metrics.grafana` test):
  - every *.json of deploy/grafana parses, and has a uid (unique over the files), a title, a
    schemaVersion, the `datasource` variable (type datasource, Prometheus) and panels;
  - panels have unique ids, a type this test knows, a title and a gridPos inside the 24 columns
    that overlaps no other panel; every panel but a row queries `${datasource}`, and each of its
    targets has a unique refId and an expr; a state timeline has value mappings;
  - every $variable an expr, a variable's query or a link uses is a variable of the dashboard
    (a variable's query only those defined before it) or one of Grafana's own, and every
    variable is used;
  - data links lead to a dashboard of deploy/grafana (/d/UID/...) and set only its variables;
  - every expr, and every variable's label_values() selector, with the variables replaced by
    concrete values, passes `promtool check rules` as a recording rule;
  - the "one" side of every group_left / group_right join is an aggregation (one series per
    match group), not a bare selector, which holds a series per scrape job that reaches the node
    (promql_refs.unaggregated_join_sides).

With the binaries (the `metrics.grafana_live` test) also: every metric an expression names is in
the /metrics of a colltestd on the cpu backend after a sweep, a comparison, a hang and a
`health --level long` (promql_refs.live_scrape); the labels its matchers and groupings use are
labels of those metrics; and the literal values its matchers ask for occur.
"""

import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import promql_refs  # noqa: E402  (puts tests/pylib on the path)
from check_failures import Failures  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
DASHBOARDS = os.path.join(ROOT, "deploy", "grafana")
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
PANEL_TYPES = {"row", "stat", "timeseries", "state-timeline", "status-history", "table",
               "bargauge", "gauge", "text", "barchart", "piechart", "heatmap"}
# Grafana's own variables, and a concrete value for each in a query.
BUILTIN_VALUES = {
    "__rate_interval": "1m", "__interval": "1m", "__range": "1h", "__range_s": "3600",
    "__range_ms": "3600000", "__interval_ms": "60000",
}
BUILTIN_LINK_VARIABLES = ("__field", "__data", "__value", "__series", "__url_time_range",
                          "__from", "__to", "__all_variables", "__dashboard", "__org", "__user")
# Metrics an expression may name that colltestd does not export: {name: reason}. A name belongs
# here only when no colltestd can ever serve it (the live check trusts the rest to the scrape).
NOT_FROM_COLLTESTD = {}
# Metrics colltestd exports only after something the live run does not do: {name: reason}.
# Empty: the live run's `health --level long` takes about 20 s on the cpu backend with 2 ranks,
# and its tune directory holds an expected figure, so the link gauges appear too.
APPEAR_LATER = {}

VAR_REF = re.compile(r"\$\{([A-Za-z0-9_.]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)(?::[^\]]*)?\]\]")
LABEL_VALUES = re.compile(r"^\s*label_values\((?:(.*),)?\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", re.S)


def variable_refs(text):
    """Names of the variables text uses ($x, ${x}, ${x:fmt}, [[x]]); dotted ones (${__field.a})
    by their first part."""
    names = []
    for m in VAR_REF.finditer(text):
        names.append((m.group(1) or m.group(2) or m.group(3)).split(".")[0])
    return names


def substitute(expr):
    """expr with every variable replaced by a concrete value: Grafana's own by a duration or a
    number, the dashboard's by `.*` (they sit in matcher strings)."""
    def value(m):
        name = (m.group(1) or m.group(2) or m.group(3)).split(".")[0]
        return BUILTIN_VALUES.get(name, ".*")
    return VAR_REF.sub(value, expr)


def all_panels(dashboard):
    out = []
    for p in dashboard.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))  # a collapsed row holds its panels
    return out


def variable_query(v):
    q = v.get("query")
    if isinstance(q, dict):
        q = q.get("query")
    return q if isinstance(q, str) else ""


def link_urls(dashboard):
    """(where, url) of every data link and dashboard link."""
    out = [(f"dashboard link {l.get('title')!r}", l.get("url", "")) for l in
           dashboard.get("links", []) if l.get("type") == "link"]
    for p in all_panels(dashboard):
        fc = p.get("fieldConfig") or {}
        for link in (fc.get("defaults") or {}).get("links", []):
            out.append((f"panel {p.get('id')} link", link.get("url", "")))
        for o in fc.get("overrides", []):
            for prop in o.get("properties", []):
                if prop.get("id") == "links":
                    for link in prop.get("value", []):
                        out.append((f"panel {p.get('id')} override link", link.get("url", "")))
        for link in p.get("links", []):
            out.append((f"panel {p.get('id')} panel link", link.get("url", "")))
    return out


def overlap(a, b):
    return (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])


def check_structure(f, name, d):
    """The structure Grafana needs; returns {key: expr} of the dashboard's PromQL."""
    exprs = {}
    w = name
    f.check(isinstance(d.get("uid"), str) and re.fullmatch(r"[A-Za-z0-9_-]{1,40}", d.get("uid", "")),
            w, f"uid {d.get('uid')!r}: 1 to 40 letters, digits, - or _")
    f.check(isinstance(d.get("title"), str) and d["title"], w, "no title")
    f.check(isinstance(d.get("schemaVersion"), int) and d["schemaVersion"] >= 36, w,
            f"schemaVersion {d.get('schemaVersion')!r}")
    f.check(d.get("id") is None, w, "an id: an exported dashboard carries none, so that an import "
            "does not overwrite another")
    variables = (d.get("templating") or {}).get("list", [])
    names = [v.get("name") for v in variables]
    f.check(len(names) == len(set(names)), w, f"variables with one name: {names}")
    ds = [v for v in variables if v.get("name") == "datasource"]
    f.check(ds and ds[0].get("type") == "datasource" and ds[0].get("query") == "prometheus", w,
            "no variable `datasource` of type datasource over Prometheus")
    used = set()

    def uses(where, text, allowed):
        for ref in variable_refs(text):
            used.add(ref)
            f.check(ref in allowed or ref in BUILTIN_VALUES or ref in BUILTIN_LINK_VARIABLES,
                    where, f"${ref} is no variable of the dashboard" +
                    (" defined before this one" if allowed is not names else ""))

    for n, v in enumerate(variables):
        vw = f"{w} variable {v.get('name')}"
        if v.get("type") != "query":
            continue
        f.check(v.get("datasource") == DATASOURCE, vw, f"datasource {v.get('datasource')!r}, want "
                f"{DATASOURCE}")
        q = variable_query(v)
        if not f.check(q, vw, "no query"):
            continue
        uses(vw, q, names[:n])
        m = LABEL_VALUES.match(q)
        inner = m.group(1) if m else q
        if m and inner is None:
            continue  # label_values(label): every series
        exprs[f"{vw} query"] = inner.strip()

    panels = all_panels(d)
    f.check(panels, w, "no panels")
    ids = [p.get("id") for p in panels]
    f.check(all(isinstance(i, int) for i in ids) and len(ids) == len(set(ids)), w,
            f"panel ids not unique integers: {ids}")
    boxes = []
    for p in panels:
        pw = f"{w} panel {p.get('id')} {p.get('title')!r}"
        f.check(p.get("type") in PANEL_TYPES, pw, f"type {p.get('type')!r}")
        f.check(isinstance(p.get("title"), str) and p["title"], pw, "no title")
        g = p.get("gridPos") or {}
        if f.check(all(isinstance(g.get(k), int) for k in "hwxy"), pw, f"gridPos {g}"):
            f.check(g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["y"] >= 0
                    and g["x"] + g["w"] <= 24, pw, f"gridPos {g} outside the 24 columns")
            for other_w, other in boxes:
                f.check(not overlap(g, other), pw, f"overlaps {other_w}")
            boxes.append((pw, g))
        if p.get("type") == "row":
            f.check(not p.get("targets"), pw, "a row with targets")
            continue
        if p.get("type") == "text":
            continue
        f.check(p.get("datasource") == DATASOURCE, pw,
                f"datasource {p.get('datasource')!r}, want {DATASOURCE}")
        targets = p.get("targets") or []
        f.check(targets, pw, "no targets")
        refs = [t.get("refId") for t in targets]
        f.check(all(isinstance(r, str) and r for r in refs) and len(refs) == len(set(refs)), pw,
                f"refIds not unique: {refs}")
        for t in targets:
            tw = f"{pw} target {t.get('refId')}"
            f.check(t.get("datasource", DATASOURCE) == DATASOURCE, tw,
                    f"datasource {t.get('datasource')!r}")
            if f.check(isinstance(t.get("expr"), str) and t["expr"].strip(), tw, "no expr"):
                uses(tw, t["expr"], names)
                uses(tw, t.get("legendFormat", ""), names)
                exprs[tw] = t["expr"]
        if p.get("type") in ("state-timeline", "status-history"):
            maps = ((p.get("fieldConfig") or {}).get("defaults") or {}).get("mappings")
            f.check(maps, pw, "a status map without value mappings shows bare codes")
    for lw, url in link_urls(d):
        uses(f"{w} {lw}", url, names)
    for v in variables:
        if v.get("name") != "datasource":
            f.check(v.get("name") in used, f"{w} variable {v.get('name')}", "used by no query")
    return exprs


def check_links(f, dashboards):
    """Links lead to a dashboard of the set and set only its variables."""
    by_uid = {d.get("uid"): d for d in dashboards.values()}
    for name, d in dashboards.items():
        for where, url in link_urls(d):
            lw = f"{name} {where}"
            m = re.match(r"^/d/([A-Za-z0-9_-]+)(?:/[A-Za-z0-9_-]*)?(?:\?(.*))?$", url)
            if not f.check(m, lw, f"{url!r} is not a link to a dashboard (/d/UID/...)"):
                continue
            target = by_uid.get(m.group(1))
            if not f.check(target, lw, f"no dashboard of uid {m.group(1)} in deploy/grafana"):
                continue
            target_vars = {v.get("name") for v in target["templating"]["list"]}
            for part in (m.group(2) or "").split("&"):
                qp = re.fullmatch(r"\$\{([A-Za-z0-9_]+):queryparam\}", part)
                key = qp.group(1) if qp else (part.split("=", 1)[0][4:]
                                              if part.startswith("var-") else None)
                if key is not None:
                    f.check(key in target_vars, lw, f"sets var-{key}, which {target['uid']} lacks")
                elif part:
                    f.check(part == "${__url_time_range}", lw, f"unexpected query part {part!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--promtool", required=True)
    parser.add_argument("--colltestd", help="with --colltest: also check against a live /metrics")
    parser.add_argument("--colltest")
    parser.add_argument("--dashboards", default=DASHBOARDS, help="folder of the *.json")
    args = parser.parse_args()
    if not os.access(args.promtool, os.X_OK):
        print(f"FAIL: promtool not found ({args.promtool}); scripts/setup.sh installs it",
              file=sys.stderr)
        return 1
    f = Failures(echo=True)
    files = sorted(glob.glob(os.path.join(args.dashboards, "*.json")))
    f.check(len(files) >= 2, args.dashboards, "the fleet and node dashboards are missing")
    dashboards, exprs = {}, {}
    for path in files:
        name = os.path.relpath(path, ROOT)
        try:
            with open(path, encoding="utf-8") as stream:
                dashboards[name] = json.load(stream)
        except (OSError, json.JSONDecodeError) as e:
            f.check(False, name, f"does not parse: {e}")
            continue
        if f.check(isinstance(dashboards[name], dict), name, "not an object"):
            exprs.update(check_structure(f, name, dashboards[name]))
    uids = [d.get("uid") for d in dashboards.values()]
    f.check(len(uids) == len(set(uids)), "deploy/grafana", f"uids not unique: {uids}")
    check_links(f, dashboards)

    concrete = {k: substitute(e) for k, e in exprs.items()}
    for key, expr in concrete.items():
        try:
            sides = promql_refs.unaggregated_join_sides(expr)
        except ValueError as e:
            f.check(False, key, str(e))
            continue
        f.check(not sides, key, f"the one side of a join is not aggregated ({'; '.join(sides)}): "
                "a node scraped by two jobs gives it two series per match group, and the query "
                "fails many-to-many; join on e.g. group by (cluster, instance, Hostname) "
                "(colltest_node_info)")
    for key, problem in check_with_promtool(args.promtool, concrete).items():
        f.check(False, key, f"promtool: {problem}")
    print(f"{len(concrete)} expressions through promtool")

    if args.colltestd and args.colltest:
        scrape, problems = promql_refs.live_scrape(args.colltestd, args.colltest)
        for p in problems:
            f.check(False, "live run", p)
        allowed = {**NOT_FROM_COLLTESTD, **APPEAR_LATER}
        names = set()
        for key, expr in concrete.items():
            try:
                refs = promql_refs.references(expr)
            except ValueError as e:
                f.check(False, key, str(e))
                continue
            names |= refs.names
            for problem in promql_refs.check_against_scrape(refs, scrape, allowed, key):
                f.check(False, "live /metrics", problem)
        print(f"{len(names)} metric names held against a live /metrics: {', '.join(sorted(names))}")

    if f.items:
        print(f"{len(f.items)} of {f.checks} checks failed", file=sys.stderr)
        return 1
    print(f"grafana dashboards: {f.checks} checks passed")
    return 0


def check_with_promtool(promtool, exprs):
    return promql_refs.check_with_promtool(promtool, exprs)


if __name__ == "__main__":
    sys.exit(main())
