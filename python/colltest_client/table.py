"""The text tables of `python3 -m colltest_client`. A sweep's table is printed one row per case as
the cases complete, so its columns have fixed widths rather than widths fitted to the rows."""

from __future__ import annotations

import time
from typing import Sequence

from .enums import RunState
from .results import (CaseResult, CompareReport, DevicesReport, HealthReport, HealthTarget,
                      KernelPlugin, RunResult, RunSummary)

# (title, width, align) of each column of a sweep's table; the message column comes last, unpadded.
Columns = Sequence[tuple[str, int, str]]
SWEEP_COLUMNS: Columns = [("m", 6, ">"), ("n", 6, ">"), ("variant", 10, "<"), ("mode", 5, "<"),
                          ("median us", 10, ">"), ("busbw GB/s", 10, ">"), ("status", 11, "<")]


def measured(value: float, digits: int = 1) -> str:
    """A case that never timed (HANG, ERROR, UNSUPPORTED) has zeros: a dash reads as "no data"
    where 0.0 would read as "infinitely fast"."""
    return f"{value:.{digits}f}" if value > 0 else "-"


def line(cells: Sequence[str], columns: Columns) -> str:
    """The cells padded to their columns; a cell beyond the columns comes last, unpadded."""
    text = "  ".join(f"{cell:{align}{width}}" for cell, (_, width, align) in zip(cells, columns))
    if len(cells) > len(columns) and cells[-1]:
        text += "  " + cells[-1]
    return text.rstrip()


def header(columns: Columns, last: str = "message") -> str:
    return line([title for title, _, _ in columns] + [last], columns)


def sweep_header() -> str:
    return header(SWEEP_COLUMNS)


def sweep_row(case: CaseResult) -> str:
    """m, n, variant, mode, median us, busbw GB/s (the cpu backend's are a fraction of a GB/s),
    status, message."""
    return line([str(case.m), str(case.n), case.kernel, case.mode.cli_name,
                 measured(case.median_us), measured(case.busbw_gbps, 2), case.status.cli_name,
                 case.message], SWEEP_COLUMNS)


def run_summary(run: RunResult) -> str:
    """One line on a finished run: "run r-1: DONE, 4 cases: 3 OK, 1 WRONG"."""
    counts = sorted((status.cli_name, n) for status, n in run.counts().items())
    detail = ", ".join(f"{n} {status}" for status, n in counts)
    text = f"run {run.run_id}: {run.state.cli_name}, {len(run.cases)} cases"
    text += f": {detail}" if detail else ""
    # A finished run's message repeats the counts; an aborted run's says why it stopped.
    aborted = run.message and run.state is not RunState.DONE
    return text + (f" ({run.message})" if aborted else "")


def run_table(run: RunResult) -> str:
    """The whole table of a finished run: header, a row per case, the summary line."""
    rows = [sweep_header()] + [sweep_row(c) for c in run.cases] + [run_summary(run)]
    if note := shared_gpu_note(run):
        rows.append(f"note: {note}")
    return "\n".join(rows)


def shared_gpu_note(run: RunResult) -> str:
    """What to say of a run whose ranks shared a GPU (colltestd --ranks-per-gpu), "" for a run on
    separate GPUs: its times are kernel overhead, never a link measurement."""
    ranks = run.ranks_per_gpu or 1
    if run.time_sliced:
        return (f"ranks share a time-sliced GPU ({ranks} per GPU): timings are meaningless "
                "(time-sliced), not a link measurement; busbw is not a link figure")
    if ranks > 1:
        return (f"ranks share a GPU ({ranks} per GPU): times are kernel overhead, not a link "
                "measurement; busbw is not a link figure")
    return ""


def devices_table(report: DevicesReport) -> str:
    """One row per device under a line on the backend; with colltestd --ranks-per-gpu above 1
    each GPU is listed once per slot, with its GPU and slot."""
    slots = report.ranks_per_gpu > 1 or any(d.slot for d in report.devices)
    where = f"{'gpu':>3}  {'slot':>4}  " if slots else ""
    lines = [f"backend {report.backend}, {len(report.devices)} devices, "
             f"max world {report.max_world_size}, colltestd {report.version}",
             f"{'index':>5}  {where}{'name':<24}  {'memory MiB':>10}  uuid"]
    for d in report.devices:
        gpu = d.physical_index if d.physical_index or d.slot else d.index
        where = f"{gpu:>3}  {d.slot:>4}  " if slots else ""
        lines.append(f"{d.index:>5}  {where}{d.name:<24}  {d.memory_bytes >> 20:>10}  "
                     f"{d.uuid}".rstrip())
    lines.append("variants: " + ", ".join(v.cli_name for v in report.variants))
    lines += [f"group {','.join(map(str, g.devices))}: {g.state.cli_name}"
              + (f" ({g.message})" if g.message else "") for g in report.groups]
    return "\n".join(lines + kernel_plugins_lines(report.kernel_plugins))


def kernel_plugins_lines(plugins: Sequence[KernelPlugin]) -> list[str]:
    """The kernel plugins colltestd was given, one line each under a title: variant, version, the
    first 12 hex digits of the SHA-256, loaded or why it was refused."""
    if not plugins:
        return []
    lines = ["kernel plugins:", f"  {'variant':<24}  {'version':<16}  {'sha256':<12}  state"]
    for p in plugins:
        # A plugin refused before its struct was read has no name: its file names it.
        variant = p.variant or (f"plugin:{p.name}" if p.name else p.path.rsplit("/", 1)[-1])
        state = "loaded" if p.loaded else f"refused: {p.refused or 'no reason given'}"
        lines.append(f"  {variant:<24}  {p.version or '-':<16}  {p.sha256[:12] or '-':<12}  "
                     f"{state}")
    return lines


_TARGET_COLUMNS: Columns = [("devices", 8, "<"), ("status", 11, "<"), ("latency us", 10, ">"),
                            ("ratio", 6, ">"), ("warn", 4, "<")]


def _target_row(t: HealthTarget) -> str:
    return line([",".join(map(str, t.devices)), t.status.cli_name, measured(t.latency_us),
                 f"{t.median_ratio:.2f}", "WARN" if t.slow else "", t.message], _TARGET_COLUMNS)


def health_table(h: HealthReport) -> str:
    """The verdict, a row per rank and per pair, and "health: STATUS in N.N s (M cases)"."""
    lines = [f"verdict: {h.status.cli_name}" + (f": {h.message}" if h.message else ""),
             header(_TARGET_COLUMNS)]
    lines += [_target_row(t) for t in h.ranks + h.pairs]
    lines += [f"group {','.join(map(str, g.devices))}: {g.state.cli_name}" for g in h.groups]
    if h.busy:
        lines.append(f"BUSY: {h.busy_reason}")
    lines.append(f"health: {h.status.cli_name} in {h.wall_ms / 1000:.1f} s "
                 f"({len(h.cases)} cases)")
    return "\n".join(lines)


_HISTORY_COLUMNS: Columns = [("run", 34, "<"), ("state", 11, "<"), ("created (UTC)", 19, "<"),
                             ("cases", 5, ">"), ("ok", 5, ">"), ("failed", 6, ">"),
                             ("owner", 12, "<")]


def history_table(runs: Sequence[RunSummary], next_page_token: str) -> str:
    lines = [header(_HISTORY_COLUMNS, "label")]
    for r in runs:
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r.created_unix_ms / 1000))
        lines.append(line([r.run_id, r.state.cli_name, created, str(r.cases), str(r.ok),
                           str(r.failed), r.owner, r.label], _HISTORY_COLUMNS))
    lines.append(f"{len(runs)} runs" + (f"; next page: --page-token {next_page_token}"
                                        if next_page_token else ""))
    return "\n".join(lines)


_COMPARE_COLUMNS: Columns = [("m", 6, ">"), ("n", 6, ">"), ("variant", 10, "<"),
                             ("mode", 5, "<"), ("us a", 10, ">"), ("us b", 10, ">"),
                             ("ratio", 6, ">"), ("verdict", 11, "<")]


def compare_table(report: CompareReport) -> str:
    against = f"baseline {report.baseline or 'default'}" if report.baseline else report.run_a
    lines = [f"compare {against} -> {report.run_b}", header(_COMPARE_COLUMNS, "reason")]
    for c in report.cases:
        lines.append(line([str(c.m), str(c.n), c.kernel, c.mode.cli_name,
                           measured(c.median_us_a), measured(c.median_us_b),
                           f"{c.ratio:.3f}" if c.ratio else "-", c.verdict.cli_name, c.reason],
                          _COMPARE_COLUMNS))
    lines.append(report.message or f"{report.regressions} regressions, "
                 f"{report.improvements} improvements")
    return "\n".join(lines)
