"""What a PromQL expression refers to, promtool's verdict on it, and a live colltestd to hold it
against. Shared by grafana_test.py and alerts_test.py; Python's standard library only.

    refs = references('sum by (Hostname) (increase(colltest_hangs_total{gpu="1"}[1h]))')
    refs.selectors   [Selector(name='colltest_hangs_total', matchers=[('gpu', '=', '1')])]
    refs.grouping    {'Hostname'}

The lexer knows the PromQL that dashboards and alerting rules use: selectors with matchers,
functions, aggregations with by/without before or after their argument, binary operators with
on/ignoring/group_left/group_right and bool, ranges, subqueries, offset and @. It is no parser: it
does not judge syntax (promtool does, check_with_promtool), it only finds names.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from colltestd_process import Colltestd, ColltestdError  # noqa: E402,F401

GROUPING_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = GROUPING_KEYWORDS | {"bool", "and", "or", "unless", "offset", "atan2", "inf", "nan"}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
# Labels a series gets from Prometheus (job, instance) or from the operator's relabelling
# (cluster, docs/grafana.md), never from colltestd's /metrics.
TARGET_LABELS = {"cluster", "instance", "job"}

_TOKEN = re.compile(r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<number>(?:\d|\.\d)[\w.]*(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_:]*)
  | (?P<op>=~|!~|!=|==|>=|<=|[{}()\[\],=<>+\-*/%^@:])
""", re.VERBOSE)


class Selector:
    def __init__(self, name, matchers):
        self.name = name          # None for a selector without a name ({__name__=...})
        self.matchers = matchers  # [(label, op, value)]

    def __repr__(self):
        return f"Selector({self.name!r}, {self.matchers!r})"


class Refs:
    def __init__(self):
        self.selectors = []
        self.grouping = set()

    @property
    def names(self):
        return {s.name for s in self.selectors if s.name}


def tokenize(expr):
    tokens, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            raise ValueError(f"cannot read {expr[pos:pos + 20]!r} at {pos}")
        pos = m.end()
        kind = m.lastgroup
        if kind != "space":
            tokens.append((kind, m.group(kind)))
    return tokens


def _unquote(text):
    if text[0] == "`":
        return text[1:-1]
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def references(expr):
    """The selectors and grouping labels of one PromQL expression (see the module's docstring)."""
    toks = tokenize(expr)
    refs = Refs()

    def at(i):
        return toks[i] if i < len(toks) else (None, None)

    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nkind, ntext = at(i + 1)
        if kind == "ident" and text in GROUPING_KEYWORDS and ntext == "(":
            j = i + 2
            while j < len(toks) and toks[j][1] != ")":
                if toks[j][0] == "ident":
                    refs.grouping.add(toks[j][1])
                j += 1
            i = j + 1
            continue
        if kind == "ident" and (text in KEYWORDS or ntext == "("
                                or (text in AGGREGATIONS and ntext in ("by", "without"))):
            i += 1
            continue
        if kind == "ident" or (kind == "op" and text == "{"):
            name = text if kind == "ident" else None
            j = i + 1 if kind == "ident" else i
            matchers = []
            if at(j)[1] == "{":
                j += 1
                while j < len(toks) and toks[j][1] != "}":
                    if toks[j][1] == ",":
                        j += 1
                        continue
                    (lk, label), (_, op), (vk, value) = at(j), at(j + 1), at(j + 2)
                    if lk not in ("ident", "string") or vk != "string":
                        raise ValueError(f"unreadable matcher near {label!r} in {expr!r}")
                    label = _unquote(label) if lk == "string" else label
                    if label == "__name__" and op == "=":
                        name = _unquote(value)
                    else:
                        matchers.append((label, op, _unquote(value)))
                    j += 3
                j += 1
            refs.selectors.append(Selector(name, matchers))
            i = j
            continue
        i += 1
    return refs


def unaggregated_join_sides(expr):
    """The "one" sides of expr's group_left / group_right joins that are not an aggregation, as
    the text that starts them. Such a side must hold one series per match group, and a selector
    holds one per scrape job: a node scraped by two jobs (a ServiceMonitor and the prometheus.io
    annotations, docs/kubernetes.md) makes the join fail with "many-to-many matching not
    allowed". `group by (cluster, instance, Hostname) (colltest_node_info)` is one per node."""
    toks = tokenize(expr)
    found = []
    for i, (kind, text) in enumerate(toks):
        if kind != "ident" or text not in ("group_left", "group_right"):
            continue
        j = i + 1
        if j < len(toks) and toks[j][1] == "(":  # the labels to copy
            while j < len(toks) and toks[j][1] != ")":
                j += 1
            j += 1
        while j < len(toks) and toks[j][1] == "(":
            j += 1
        if j >= len(toks) or not (toks[j][0] == "ident" and toks[j][1] in AGGREGATIONS):
            found.append(" ".join(t for _, t in toks[i:i + 8]))
    return found


# --- promtool ---------------------------------------------------------------------------------

def check_with_promtool(promtool, exprs):
    """{key: problem} for the expressions promtool refuses; exprs is {key: expr}. They go into
    one rule file as recording rules (JSON is YAML) and through `promtool check rules`; when that
    fails, each is checked alone so that every problem is named."""
    def run(items):
        rules = [{"record": f"colltest_check:expr_{n}", "expr": e} for n, (_, e) in enumerate(items)]
        with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
            json.dump({"groups": [{"name": "expressions", "rules": rules}]}, f, indent=1)
            path = f.name
        try:
            out = subprocess.run([promtool, "check", "rules", path], capture_output=True,
                                 text=True, timeout=120)
        finally:
            os.unlink(path)
        return out.returncode, (out.stdout + out.stderr).strip()

    items = list(exprs.items())
    if not items:
        return {}
    rc, said = run(items)
    if rc == 0:
        return {}
    problems = {}
    for key, expr in items:
        rc, said_one = run([(key, expr)])
        if rc != 0:
            problems[key] = " ".join(line.strip() for line in said_one.splitlines()
                                     if "FAILED" not in line and "Checking" not in line)
    if not problems:
        problems["(all)"] = f"promtool failed on the file but on no expression alone: {said}"
    return problems


# --- a scrape ---------------------------------------------------------------------------------

_SERIES = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


class Scrape:
    """A /metrics text as {name: {label: {values}}}."""

    def __init__(self, text):
        self.text = text
        self.labels = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = _SERIES.match(line)
            if m is None:
                raise ValueError(f"unparsable scrape line: {line!r}")
            per_label = self.labels.setdefault(m.group(1), {})
            body, pos = m.group(2) or "", 0
            while pos < len(body):
                lm = _LABEL.match(body, pos)
                if lm is None:
                    raise ValueError(f"unparsable labels in: {line!r}")
                per_label.setdefault(lm.group(1), set()).add(
                    re.sub(r"\\(.)", r"\1", lm.group(2)))
                pos = lm.end()

    def has(self, name):
        return name in self.labels


def _literal_alternatives(value):
    """['a', 'b'] for a matcher value a|b of plain words, else None (a regex, a variable)."""
    if re.fullmatch(r"\w+(\|\w+)*", value):
        return value.split("|")
    return None


def check_against_scrape(refs, scrape, allowed_missing, where):
    """Problems of one expression's references against a live scrape: names not exported,
    matcher labels a metric does not have, literal matcher values no series of it has, grouping
    labels none of the expression's metrics has. allowed_missing: {name: reason} that need not be
    in the scrape (their labels are not checked)."""
    problems = []
    union = set(TARGET_LABELS) | {"le"}
    for sel in refs.selectors:
        if sel.name is None:
            problems.append(f"{where}: a selector without a metric name: {sel.matchers}")
            continue
        if not scrape.has(sel.name):
            if sel.name not in allowed_missing:
                problems.append(f"{where}: {sel.name} is not in colltestd's /metrics")
            continue
        labels = scrape.labels[sel.name]
        union |= set(labels)
        for label, op, value in sel.matchers:
            if label in TARGET_LABELS:
                continue
            if label not in labels:
                problems.append(f"{where}: {sel.name} has no label {label!r} "
                                f"(it has {sorted(labels)})")
                continue
            for alternative in _literal_alternatives(value) or []:
                if alternative not in labels[label]:
                    problems.append(f"{where}: no {sel.name} series has {label}="
                                    f"{alternative!r} (seen: {sorted(labels[label])})")
    known_names = [s.name for s in refs.selectors if s.name in allowed_missing
                   and not scrape.has(s.name)]
    for label in sorted(refs.grouping - union):
        if known_names:
            continue  # the allowed-missing metric may carry it; nothing to hold it against
        problems.append(f"{where}: grouping label {label!r} is on none of its metrics")
    return problems


# --- a live colltestd -------------------------------------------------------------------------

CPU_RANKS = 2
RUN_TIMEOUT_S = 240


def _colltest(cli, server, *args):
    return subprocess.run([cli, "--server", server, *args], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)


def live_scrape(colltestd, colltest, log=print):
    """Starts colltestd on the cpu backend (2 ranks, fault injection allowed, a tune directory
    whose expected_busbw.json has a figure for the cpu pair), runs what makes every series of
    docs/metrics.md appear, and returns (Scrape, problems). The runs: two identical sweeps and
    their comparison (the compare counters), a hang with a culprit (colltest_hangs_total), and a
    health check at level long: its pairs (link health), its hang-detection self test and its
    bandwidth cases against the expected figure (the link busbw gauges)."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="colltest-promql-") as tmp:
        tune = os.path.join(tmp, "tune")
        os.mkdir(tune)
        # The cpu backend's devices are "cpu rank N" and their links "shm"; the figure is
        # per first device of a pair. Tiny, so that the pair is never below it (no WARN).
        with open(os.path.join(tune, "expected_busbw.json"), "w", encoding="utf-8") as f:
            json.dump({f"cpu rank {r}": {"shm": 1e-6} for r in range(CPU_RANKS)}, f)
        args = ["--backend", "cpu", "--cpu-ranks", str(CPU_RANKS), "--listen", "127.0.0.1:0",
                "--http", "127.0.0.1:0", "--allow-fault-injection", "--tune-dir", tune]
        with Colltestd(colltestd, args, state_dir=tmp, log_path=os.path.join(tmp, "colltestd.log"),
                       start_timeout_s=60) as daemon:
            if daemon.http_address is None:
                raise ColltestdError("colltestd printed no http address")
            server = daemon.address
            sweep = ("run", "--world", "2", "--m", "1,8", "--n", "1024", "--variants",
                     "lamport,one_stage", "--modes", "eager", "--format", "json")
            run_ids = []
            for n in (1, 2):
                started = time.monotonic()
                out = _colltest(colltest, server, *sweep)
                log(f"sweep {n}: exit {out.returncode} in {time.monotonic() - started:.1f} s")
                if out.returncode != 0:
                    problems.append(f"sweep {n}: exit {out.returncode}: {out.stderr.strip()}")
                    continue
                run_ids.append(json.loads(out.stdout)["run_id"])
            if len(run_ids) == 2:
                out = _colltest(colltest, server, "compare", *run_ids)
                log(f"compare: exit {out.returncode}")
                if out.returncode not in (0, 4):  # 4: a regression, which timing noise may give
                    problems.append(f"compare: exit {out.returncode}: {out.stderr.strip()}")
            out = _colltest(colltest, server, "run", "--world", "2", "--m", "1", "--n", "1024",
                            "--variants", "lamport", "--modes", "eager", "--fault",
                            "hang_end_sync:1", "--timeout", "1s")
            log(f"hang: exit {out.returncode}")
            if out.returncode != 2:
                problems.append(f"hang run: exit {out.returncode}, want 2: {out.stderr.strip()}")
            started = time.monotonic()
            out = _colltest(colltest, server, "health", "--level", "long")
            log(f"health --level long: exit {out.returncode} in "
                f"{time.monotonic() - started:.1f} s")
            if out.returncode != 0:
                problems.append(f"health --level long: exit {out.returncode}: "
                                f"{out.stdout[-2000:]}{out.stderr.strip()}")
            with urllib.request.urlopen(f"http://{daemon.http_address}/metrics",
                                        timeout=10) as reply:
                text = reply.read().decode()
    return Scrape(text), problems
