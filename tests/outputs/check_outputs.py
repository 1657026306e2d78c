#!/usr/bin/python3
"""Validates every JSON and JUnit document the colltest client prints.

Starts a colltestd of its own (cpu backend), runs each command in each machine-readable format,
then checks those documents and every one the integration tests kept (--kept DIR): JSON against
client/schema/colltest-output.schema.json, JUnit against tests/outputs/junit.xsd with xmllint and
through junitparser, a JUnit consumer, whose counts must agree with the suite's attributes.
Exits 1 naming each invalid document.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import jsonschema
import junitparser

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from colltestd_process import Colltestd  # noqa: E402


class Runner:
    """Runs colltest commands, keeping each machine-readable document in `out_dir`."""

    def __init__(self, colltest, server, out_dir):
        self.colltest = colltest
        self.server = server
        self.out_dir = out_dir
        self.documents = []

    def run(self, name, args, server=None, out_file=False):
        """Runs `colltest --server S args`; returns the document's path (stdout or --out)."""
        suffix = ".xml" if "junit" in args else ".json"
        path = self.out_dir / (name + suffix)
        argv = [self.colltest, "--server", server or self.server, *args]
        if out_file:
            argv += ["--out", str(path)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if not out_file:
            path.write_text(done.stdout)
        if not path.exists() or path.stat().st_size == 0:
            print(f"FAIL {name}: no document (exit {done.returncode}): {done.stderr.strip()}")
            self.documents.append(None)
            return None
        self.documents.append(path)
        return path


def run_every_command(runner):
    """Each command x format of the CLI, against one server, plus a fleet and an unreachable one."""
    sweep = ["--world", "2", "--m", "1,8", "--variants", "lamport,one_stage,nccl", "--modes",
             "eager", "--warmup", "1", "--iters", "3"]
    run_ids = []
    for fmt in ("json", "junit"):
        for command in ("run", "sweep"):
            path = runner.run(f"{command}.{fmt}", [command, *sweep, "--format", fmt])
            if fmt == "json" and path is not None:
                run_ids.append(json.loads(path.read_text())["run_id"])
    if len(run_ids) < 2:
        print("FAIL: no two runs to get and compare")
        return
    a, b = run_ids[:2]
    runner.run("baseline_set.json", ["baseline", "set", a, "--format", "json"])
    runner.run("baseline_list.json", ["baseline", "list", "--format", "json"])
    for fmt in ("json", "junit"):
        runner.run(f"get.{fmt}", ["get", a, "--format", fmt])
        runner.run(f"compare.{fmt}", ["compare", a, b, "--format", fmt])
        runner.run(f"compare_baseline.{fmt}", ["compare", b, "--baseline", "--format", fmt])
        runner.run(f"run_compare_baseline.{fmt}",
                   ["run", *sweep, "--compare-baseline", "--format", fmt])
        runner.run(f"health.{fmt}", ["health", "--pairs", "--format", fmt])
        # A fleet of this server and a port nothing listens on: one node OK, one UNREACHABLE.
        runner.run(f"fleet.{fmt}", ["health", "--targets", f"{runner.server},127.0.0.1:1",
                                    "--retries", "0", "--format", fmt])
    runner.run("history.json", ["history", "--format", "json"])
    runner.run("devices.json", ["devices", "--format", "json"])
    runner.run("tune.json", ["tune", "--world", "2", "--m", "1,8", "--warmup", "1", "--iters", "3",
                             "--format", "json"])
    runner.run("unreachable.xml", ["health", "--format", "junit"], server="127.0.0.1:1",
               out_file=True)


class SchemaValidators:
    """Built once for every document: one validator per kind (its definition gives readable
    errors) and one of the whole schema (oneOf on kind, so an unknown kind fails as well)."""

    def __init__(self, schema):
        self.whole = jsonschema.Draft202012Validator(schema)
        self.by_kind = {
            d["properties"]["kind"]["const"]:
                jsonschema.Draft202012Validator({**d, "$defs": schema["$defs"]})
            for d in schema["$defs"].values()
            if "const" in d.get("properties", {}).get("kind", {})}


def json_errors(path, validators):
    try:
        document = json.loads(path.read_text())
    except ValueError as error:
        return [f"not JSON: {error}"]
    errors = []
    kind = document.get("kind") if isinstance(document, dict) else None
    if kind in validators.by_kind:
        errors += [f"{'/'.join(map(str, e.path))}: {e.message}"
                   for e in validators.by_kind[kind].iter_errors(document)]
    if not errors:
        errors += [e.message[:300] for e in validators.whole.iter_errors(document)]
    return errors


def junit_count_errors(path):
    """Counts a JUnit consumer reads from the testcases against the suite's attributes."""
    errors = []
    xml = junitparser.JUnitXml.fromfile(str(path))
    suites = [xml] if isinstance(xml, junitparser.TestSuite) else list(xml)
    for suite in suites:
        results = [type(r).__name__ for case in suite for r in case.result]
        counted = {
            "tests": sum(1 for _ in suite),
            "failures": results.count("Failure"),
            "errors": results.count("Error"),
            "skipped": results.count("Skipped"),
        }
        for field, value in counted.items():
            if getattr(suite, field) != value:
                errors.append(f"suite {suite.name}: {field}={getattr(suite, field)}, "
                              f"its testcases hold {value}")
    return errors


def junit_errors(path, xsd):
    lint = subprocess.run(["xmllint", "--noout", "--schema", str(xsd), str(path)],
                          capture_output=True, text=True)
    if lint.returncode != 0:
        return [line for line in lint.stderr.splitlines() if "validates" not in line]
    try:
        return junit_count_errors(path)
    except Exception as error:  # junitparser raises many kinds on a document it cannot read
        return [f"junitparser: {error!r}"]


def check(paths, validators, xsd):
    bad = 0
    for path in paths:
        errors = (junit_errors(path, xsd) if path.suffix == ".xml"
                  else json_errors(path, validators))
        if errors:
            bad += 1
            print(f"FAIL {path}:")
            for error in errors[:10]:
                print(f"  {error}")
    return bad


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="directory of colltest and colltestd")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--xsd", required=True)
    parser.add_argument("--kept", help="directory of the documents the integration tests kept")
    parser.add_argument("--only-kept", action="store_true", help="check --kept alone")
    args = parser.parse_args()
    schema = json.loads(pathlib.Path(args.schema).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)

    missing = 0
    paths = []
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        if not args.only_kept:
            (work / "state").mkdir()
            (work / "out").mkdir()
            # colltestd on an ephemeral loopback port, stopped with SIGTERM.
            with Colltestd(os.path.join(args.bin, "colltestd"),
                           ["--backend", "cpu", "--cpu-ranks", "4", "--listen", "127.0.0.1:0"],
                           state_dir=str(work / "state"),
                           log_path=str(work / "colltestd.log")) as daemon:
                runner = Runner(os.path.join(args.bin, "colltest"), daemon.address, work / "out")
                run_every_command(runner)
            missing = runner.documents.count(None)
            paths += [p for p in runner.documents if p is not None]
        if args.kept and os.path.isdir(args.kept):
            kept = sorted(pathlib.Path(args.kept).iterdir())
            print(f"{len(kept)} documents kept by the integration tests")
            paths += [p for p in kept if p.suffix in (".json", ".xml")]
        bad = check(paths, SchemaValidators(schema), args.xsd)
    print(f"{len(paths)} documents checked, {bad} invalid, {missing} missing")
    return 1 if bad or missing or not paths else 0


if __name__ == "__main__":
    sys.exit(main())
