"""Typed results of colltestd's calls: dataclasses over the protobuf messages, with enums as
Python enums (enums.py). The names follow the colltest CLI's JSON (docs/output-formats.md):
`world` is CaseResult.world_size, `median_us` its timing.median_us. Every class keeps the message
it was made from as `raw`, for the fields not lifted here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import colltest_pb2 as pb2
from .convert import from_message
from .enums import (CaseStatus, CompareVerdict, DType, Epilogue, GroupState, HealthLevel, Mode,
                    Pattern, RunState, Variant)


def kernel_name(variant: Variant, plugin: str) -> str:
    """"lamport", or "plugin:NAME" for a kernel plugin's case, as the colltest CLI names it."""
    if variant is Variant.PLUGIN and plugin:
        return f"plugin:{plugin}"
    return variant.cli_name


@dataclass
class PluginIdentity:
    """The build of a kernel plugin a case ran."""
    name: str
    version: str
    sha256: str


@dataclass
class RankResult:
    rank: int
    device: int
    status: CaseStatus
    message: str
    median_us: float
    mismatches: int
    suspect_peer: int  # for a HANG: the peer this rank waited for, -1 when unknown
    phase: str  # for a HANG: where it waited
    calls: int
    raw: pb2.RankResult = field(repr=False, compare=False)

    @classmethod
    def from_pb(cls, r: pb2.RankResult) -> RankResult:
        return from_message(cls, r, median_us=r.timing.median_us, mismatches=r.diff.mismatches)


@dataclass
class CaseResult:
    """One case of a sweep: its identity, verdict, timing (us, the slowest rank's) and diffs."""
    index: int
    kernel: str  # "lamport" or "plugin:NAME"
    variant: Variant
    resolved_variant: Variant  # what `auto` dispatched to
    mode: Mode
    world: int
    m: int
    n: int
    dtype: DType
    bytes: int  # per rank: m x n x the element size
    pattern: Pattern
    residual: bool
    epilogue: Epilogue
    keep_normed: bool
    status: CaseStatus
    message: str
    median_us: float
    p10_us: float
    p90_us: float
    algbw_gbps: float
    busbw_gbps: float
    mismatches: int
    max_abs_err: float
    max_ulp: int
    stress_calls: int
    wall_ms: float
    plugin: Optional[PluginIdentity]
    ranks: list[RankResult]
    raw: pb2.CaseResult = field(repr=False, compare=False)

    @classmethod
    def from_pb(cls, c: pb2.CaseResult) -> CaseResult:
        variant = Variant.from_pb(c.variant)
        dtype = DType.from_pb(c.dtype)
        t, d = c.timing, c.diff
        plugin = from_message(PluginIdentity, c.plugin) if c.HasField("plugin") else None
        return from_message(
            cls, c, kernel=kernel_name(variant, c.plugin.name), world=c.world_size,
            bytes=c.m * c.n * dtype.element_bytes, median_us=t.median_us, p10_us=t.p10_us,
            p90_us=t.p90_us, mismatches=d.mismatches, max_abs_err=d.max_abs_err,
            max_ulp=d.max_ulp, plugin=plugin, ranks=[RankResult.from_pb(r) for r in c.ranks])


@dataclass
class RunResult:
    """A run: its state, and its cases in the order of the expanded sweep."""
    run_id: str
    state: RunState
    backend: str
    message: str
    label: str
    owner: str
    created_unix_ms: int
    finished_unix_ms: int
    ranks_per_gpu: int
    time_sliced: bool
    cases: list[CaseResult]
    raw: pb2.RunResult = field(repr=False, compare=False)

    @classmethod
    def from_pb(cls, r: pb2.RunResult) -> RunResult:
        return from_message(cls, r, label=r.spec.label,
                            cases=[CaseResult.from_pb(c) for c in r.cases])

    def counts(self) -> dict[CaseStatus, int]:
        """How many cases of each status."""
        out: dict[CaseStatus, int] = {}
        for case in self.cases:
            out[case.status] = out.get(case.status, 0) + 1
        return out


@dataclass
class SweepProgress:
    done: int
    total: int
    queue_position: int  # runs ahead of this one while queued
    state: RunState


@dataclass
class SweepEvent:
    """One event of a sweep's stream: exactly one of progress, result (a case) and summary (the
    whole run, the last event)."""
    run_id: str
    progress: Optional[SweepProgress] = None
    result: Optional[CaseResult] = None
    summary: Optional[RunResult] = None

    @classmethod
    def from_pb(cls, e: pb2.SweepEvent) -> SweepEvent:
        kind = e.WhichOneof("event")
        if kind == "progress":
            return cls(e.run_id, progress=from_message(SweepProgress, e.progress))
        if kind == "result":
            return cls(e.run_id, result=CaseResult.from_pb(e.result))
        if kind == "summary":
            return cls(e.run_id, summary=RunResult.from_pb(e.summary))
        return cls(e.run_id)


@dataclass
class Device:
    index: int
    name: str
    memory_bytes: int
    backend: str
    uuid: str
    pci_bus_id: str
    serial: str
    physical_index: int  # the GPU a slot is on (colltestd --ranks-per-gpu)
    slot: int


@dataclass
class GroupHealth:
    devices: list[int]
    state: GroupState
    message: str
    recoveries: int
    respawns: int
    last_hang: str


@dataclass
class KernelPlugin:
    path: str
    sha256: str
    loaded: bool
    refused: str  # why it was not loaded
    name: str
    version: str
    variant: str  # "plugin:NAME"


@dataclass
class DevicesReport:
    """ListDevices: the backend, its devices, the variants it runs, its groups and plugins."""
    backend: str
    version: str
    max_world_size: int
    devices: list[Device]
    variants: list[Variant]
    groups: list[GroupHealth]
    kernel_plugins: list[KernelPlugin]
    ranks_per_gpu: int
    raw: pb2.ListDevicesResponse = field(repr=False, compare=False)

    @classmethod
    def from_pb(cls, r: pb2.ListDevicesResponse) -> DevicesReport:
        return from_message(
            cls, r, devices=[from_message(Device, d) for d in r.devices],
            groups=[from_message(GroupHealth, g) for g in r.groups],
            kernel_plugins=[from_message(KernelPlugin, p) for p in r.kernel_plugins],
            ranks_per_gpu=r.machine.ranks_per_gpu)


@dataclass
class HealthTarget:
    """A rank (one device) or a pair (two) of a health check."""
    devices: list[int]
    status: CaseStatus
    message: str
    suspect_peer: int
    phase: str
    latency_us: float
    median_ratio: float
    slow: bool  # a WARN, not a failure
    cases: int
    busbw_gbps: float
    expected_busbw_gbps: float
    below_expected: bool


@dataclass
class HealthSelfTest:
    ran: bool
    passed: bool
    fault: str
    message: str


@dataclass
class HealthReport:
    status: CaseStatus
    message: str
    level: HealthLevel
    wall_ms: float
    ranks: list[HealthTarget]
    pairs: list[HealthTarget]
    cases: list[CaseResult]
    groups: list[GroupHealth]
    run_ids: list[str]
    self_test: HealthSelfTest
    verdict_unix_ms: int
    cached: bool
    busy: bool
    busy_reason: str
    raw: pb2.HealthResponse = field(repr=False, compare=False)

    @classmethod
    def from_pb(cls, h: pb2.HealthResponse) -> HealthReport:
        return from_message(
            cls, h, ranks=[from_message(HealthTarget, t) for t in h.ranks],
            pairs=[from_message(HealthTarget, t) for t in h.pairs],
            cases=[CaseResult.from_pb(c) for c in h.cases],
            groups=[from_message(GroupHealth, g) for g in h.groups],
            run_ids=list(h.run_ids), self_test=from_message(HealthSelfTest, h.self_test))


@dataclass
class RunSummary:
    """A run of the history."""
    run_id: str
    state: RunState
    cases: int
    ok: int
    failed: int  # WRONG, HANG or ERROR
    created_unix_ms: int
    finished_unix_ms: int
    label: str
    owner: str
    backend: str
    variants: list[Variant]
    machine_key: str
    hostname: str
    raw: pb2.RunSummary = field(repr=False, compare=False)

    @classmethod
    def from_pb(cls, r: pb2.RunSummary) -> RunSummary:
        return from_message(cls, r)


@dataclass
class RunPage:
    """A page of the history, newest first; next_page_token is empty on the last page."""
    runs: list[RunSummary]
    next_page_token: str


@dataclass
class CaseComparison:
    kernel: str
    variant: Variant
    mode: Mode
    world: int
    m: int
    n: int
    dtype: DType
    epilogue: Epilogue
    keep_normed: bool
    verdict: CompareVerdict
    reason: str
    ratio: float  # median_b / median_a; 0 when either did not run
    median_us_a: float
    median_us_b: float
    status_a: CaseStatus
    status_b: CaseStatus


@dataclass
class CompareReport:
    run_a: str
    run_b: str
    baseline: str
    threshold: float
    regressions: int
    improvements: int
    regressed: bool
    message: str
    cases: list[CaseComparison]
    raw: pb2.CompareResponse = field(repr=False, compare=False)

    @classmethod
    def from_pb(cls, r: pb2.CompareResponse) -> CompareReport:
        cases = [from_message(CaseComparison, c, world=c.world_size,
                              kernel=kernel_name(Variant.from_pb(c.variant), c.plugin),
                              median_us_a=c.timing_a.median_us, median_us_b=c.timing_b.median_us)
                 for c in r.cases]
        return from_message(cls, r, cases=cases)
