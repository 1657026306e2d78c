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
        names.case_variant_name(case),
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


def shared_gpu_note(run):
    """What to say of a RunResult whose ranks shared a GPU (colltestd --ranks-per-gpu), "" for a run
    on separate GPUs: its times are kernel overhead, never a link measurement. ranks_per_gpu 0 is a
    record older than the field: one rank per GPU."""
    ranks = run.ranks_per_gpu or 1
    if run.time_sliced:
        return (f"ranks share a time-sliced GPU ({ranks} per GPU): timings are meaningless "
                "(time-sliced), not a link measurement; busbw is not a link figure")
    if ranks > 1:
        return (f"ranks share a GPU ({ranks} per GPU): times are kernel overhead, not a link "
                "measurement; busbw is not a link figure")
    return ""


def devices_table(response):
    """The devices of a ListDevicesResponse, one row each, under a line on the backend. With
    colltestd --ranks-per-gpu above 1 each GPU is listed once per slot, with its GPU and slot."""
    slots = response.machine.ranks_per_gpu > 1 or any(d.slot for d in response.devices)
    where = f"{'gpu':>3}  {'slot':>4}  " if slots else ""
    lines = [f"backend {response.backend}, {len(response.devices)} devices, "
             f"max world {response.max_world_size}, colltestd {response.version}",
             f"{'index':>5}  {where}{'name':<24}  {'memory MiB':>10}  uuid"]
    for device in response.devices:
        # 0 with slot 0 from an older server: one device per GPU, the GPU is the device.
        gpu = device.physical_index if device.physical_index or device.slot else device.index
        where = f"{gpu:>3}  {device.slot:>4}  " if slots else ""
        lines.append(f"{device.index:>5}  {where}{device.name:<24}  "
                     f"{device.memory_bytes >> 20:>10}  {device.uuid}".rstrip())
    variants = ", ".join(names.variant_name(v) for v in response.variants)
    lines.append(f"variants: {variants}")
    lines += kernel_plugins_lines(response)
    return "\n".join(lines)


def kernel_plugins_lines(response):
    """The kernel plugins colltestd was given (docs/plugins.md), one line each under a title:
    variant, version, the first 12 hex digits of the SHA-256, loaded or why it was refused. None
    when it was given none."""
    if not response.kernel_plugins:
        return []
    lines = ["kernel plugins:",
             f"  {'variant':<24}  {'version':<16}  {'sha256':<12}  state"]
    for p in response.kernel_plugins:
        # A plugin refused before its struct was read has no name: its file names it.
        variant = p.variant or (f"plugin:{p.name}" if p.name else p.path.rsplit("/", 1)[-1])
        state = "loaded" if p.loaded else f"refused: {p.refused or 'no reason given'}"
        lines.append(f"  {variant:<24}  {p.version or '-':<16}  {p.sha256[:12] or '-':<12}  "
                     f"{state}")
    return lines
