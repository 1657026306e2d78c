"""The text tables of `python3 -m colltest_client`. A sweep's table is printed one row per case as
the cases complete, so its columns have fixed widths rather than widths fitted to the rows."""

from . import colltest_pb2 as pb2
from . import names

# (title, width, align) of each column of a sweep's table; the message column comes last, unpadded.
SWEEP_COLUMNS = [
    ("m", 6, ">"),
    ("n", 6, ">"),
    ("variant", 10, "<"),
    ("mode", 5, "<"),
    ("median us", 10, ">"),
    ("busbw GB/s", 10, ">"),
    ("status", 11, "<"),
]


def measured(value, digits=1):
    """A case that never timed (HANG, ERROR, UNSUPPORTED) has zeros: a dash reads as "no data"
    where 0.0 would read as "infinitely fast"."""
    return f"{value:.{digits}f}" if value > 0 else "-"


def _line(cells):
    text = "  ".join(f"{cell:{align}{width}}"
                     for cell, (_, width, align) in zip(cells, SWEEP_COLUMNS))
    if len(cells) > len(SWEEP_COLUMNS) and cells[-1]:
        text += "  " + cells[-1]
    return text.rstrip()


def sweep_header():
    return _line([title for title, _, _ in SWEEP_COLUMNS] + ["message"])


def sweep_row(case):
    """The row of a CaseResult: m, n, variant, mode, median us, busbw GB/s, status, message."""
    return _line([
        str(case.m),
        str(case.n),
        names.variant_name(case.variant),
        names.mode_name(case.mode),
        measured(case.timing.median_us),
        measured(case.busbw_gbps, 2),  # the cpu backend's are a fraction of a GB/s
        names.status_name(case.status),
        case.message,
    ])


def run_summary(run):
    """One line on a finished RunResult: "run 7: DONE, 4 cases: 3 OK, 1 WRONG"."""
    counts = {}
    for case in run.cases:
        status = names.status_name(case.status)
        counts[status] = counts.get(status, 0) + 1
    detail = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    text = f"run {run.run_id}: {names.state_name(run.state)}, {len(run.cases)} cases"
    text += f": {detail}" if detail else ""
    # A finished run's message repeats the counts; an aborted run's says why it stopped.
    aborted = run.message and run.state != pb2.RUN_STATE_DONE
    return text + (f" ({run.message})" if aborted else "")


def devices_table(response):
    """The devices of a ListDevicesResponse, one row each, under a line on the backend."""
    lines = [f"backend {response.backend}, {len(response.devices)} devices, "
             f"max world {response.max_world_size}, colltestd {response.version}",
             f"{'index':>5}  {'name':<24}  {'memory MiB':>10}  uuid"]
    for device in response.devices:
        lines.append(f"{device.index:>5}  {device.name:<24}  {device.memory_bytes >> 20:>10}  "
                     f"{device.uuid}".rstrip())
    variants = ", ".join(names.variant_name(v) for v in response.variants)
    lines.append(f"variants: {variants}")
    return "\n".join(lines)
