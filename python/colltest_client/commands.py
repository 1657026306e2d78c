"""The commands of `python3 -m colltest_client`: each takes the client, the parsed flags and the
output, prints its report and returns the colltest CLI's exit code. Failed calls raise
ColltestError, which cli.main turns into a message and exit 3 (5 for BUSY)."""

from __future__ import annotations

import argparse
from typing import Optional, TextIO

from . import colltest_pb2 as pb2
from . import request_flags, sweep_flags, table, verdict
from .client import Client
from .output import Output
from .results import RunPage, RunResult, RunSummary

MAX_HISTORY_PAGES = 100  # --all stops there, as colltest does


def devices(client: Client, args: argparse.Namespace, out: Output, err: TextIO) -> int:
    report = client.devices(timeout=30)
    out.report("devices", report, lambda: table.devices_table(report))
    return verdict.EXIT_OK


def _stream(client: Client, spec: pb2.SweepSpec, out: Output, rows: bool) -> Optional[RunResult]:
    """The sweep's summary; with `rows`, each case's row is printed as it completes."""
    summary = None
    printed_header = False
    for event in client.sweep(spec):
        if rows and event.result is not None:
            if not printed_header:
                out.stdout.write(table.sweep_header() + "\n")
                printed_header = True
            out.stdout.write(table.sweep_row(event.result) + "\n")
            out.stdout.flush()
        summary = event.summary or summary
    if rows and summary is not None:
        body = [table.run_summary(summary)]
        body += [f"note: {n}"] if (n := table.shared_gpu_note(summary)) else []
        out.stdout.write(("" if printed_header else table.sweep_header() + "\n")
                         + "\n".join(body) + "\n")
    return summary


def run(client: Client, args: argparse.Namespace, out: Output, err: TextIO) -> int:
    """`run` and `sweep`: a table streams row by row (sweep) or comes whole at the end (run);
    JSON and --out get the whole run. With --compare-baseline, the comparison follows."""
    spec = sweep_flags.build_sweep_spec(args)
    compare = _run_comparison(args)
    if sweep_flags.variants_from_server(args):
        sweep_flags.use_server_variants(spec, client.devices(timeout=30).variants)
    streamed = args.command == "sweep" and out.format == "table" and not out.path
    summary = _stream(client, spec, out, rows=streamed)
    if summary is None:
        print("colltest_client: the sweep stream ended without a summary", file=err)
        return verdict.EXIT_ERROR
    finished = summary
    if not streamed:
        out.report("run", finished, lambda: table.run_table(finished))
    code = verdict.exit_code_for_run(finished)
    if compare is None or finished.state.aborted:
        return code
    baseline, threshold = compare
    report = client.compare(run_b=finished.run_id, baseline=baseline, threshold=threshold)
    print(f"colltest_client: comparison: {report.message}", file=err)
    return code if code != verdict.EXIT_OK else verdict.exit_code_for_comparison(report)


def _run_comparison(args: argparse.Namespace) -> Optional[tuple[str, float]]:
    """(baseline, threshold) of --compare-baseline and --compare-threshold; None without."""
    if args.compare_baseline is None:
        if args.compare_threshold is not None:
            raise ValueError("--compare-threshold: only with --compare-baseline, which it "
                             "applies to")
        return None
    threshold = (request_flags.parse_threshold("--compare-threshold", args.compare_threshold)
                 if args.compare_threshold is not None else 0.0)
    return args.compare_baseline, threshold


def health(client: Client, args: argparse.Namespace, out: Output, err: TextIO) -> int:
    request = request_flags.build_health_request(args)
    report = client.health(request, timeout=request_flags.health_deadline_s(request))
    out.report("health", report, lambda: table.health_table(report))
    if report.busy:
        print(f"colltest_client: BUSY: nothing was checked: {report.busy_reason}", file=err)
    return verdict.exit_code_for_health(report)


def history(client: Client, args: argparse.Namespace, out: Output, err: TextIO) -> int:
    """One page, or with --all every page (at most 100); a repeated page token is an error."""
    fields = request_flags.list_runs_fields(args)
    runs: list[RunSummary] = []
    seen = {fields["page_token"]} if fields["page_token"] else set()
    page = RunPage([], "")
    for _ in range(MAX_HISTORY_PAGES if args.all else 1):
        page = client.list_runs(timeout=30, **fields)
        runs += page.runs
        if not page.next_page_token:
            break
        if page.next_page_token in seen:
            print(f"colltest_client: the server answered page token '{page.next_page_token}' "
                  "twice: the history cannot be followed", file=err)
            return verdict.EXIT_ERROR
        seen.add(page.next_page_token)
        fields["page_token"] = page.next_page_token
    result = RunPage(runs, page.next_page_token)
    out.report("history", result, lambda: table.history_table(runs, result.next_page_token))
    return verdict.EXIT_OK


def compare(client: Client, args: argparse.Namespace, out: Output, err: TextIO) -> int:
    report = client.compare(timeout=60, **request_flags.compare_fields(args))
    out.report("compare", report, lambda: table.compare_table(report))
    if out.format != "table" or out.path:
        print(f"colltest_client: comparison: {report.message}", file=err)
    return verdict.exit_code_for_comparison(report)


def get(client: Client, args: argparse.Namespace, out: Output, err: TextIO) -> int:
    run_result = client.get_run(args.run_id, timeout=30)
    out.report("run", run_result, lambda: table.run_table(run_result))
    return verdict.exit_code_for_run(run_result)
