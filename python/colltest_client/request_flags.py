"""The flags of `health`, `history` and `compare` turned into their requests, as the colltest CLI
does (client/flags/flags.h, history.h, compare_flags.h); ValueError naming the flag."""

from __future__ import annotations

import argparse
import math
from typing import Any

from . import colltest_pb2 as pb2
from .durations import parse_since_ms, parse_timeout_ms
from .enums import HealthLevel, RunState, Variant
from .ranges import parse_uint32_list
from .specs import split_variants
from .sweep_flags import FlagErrors, parse_enum, parse_finite, parse_uint32


def parse_warn_ratio(text: str) -> float:
    """A finite number above 1: the proto reads 0 as 1.5, and <= 1 would flag half the nodes."""
    expected = "a number above 1 (a multiple of the median latency)"
    value = parse_finite("--warn-ratio", text, expected)
    if value <= 1:
        raise ValueError(f"--warn-ratio: '{text}' is not above 1: expected {expected}")
    return value


def _plugins_only(text: str) -> list[str]:
    names, plugins = split_variants(text, "--variants")
    if names:
        raise ValueError("--variants: a health check runs its level's variants; it takes kernel "
                         "plugins only (plugin:NAME)")
    return plugins


def build_health_request(args: argparse.Namespace) -> pb2.HealthRequest:
    request = pb2.HealthRequest(pairs=args.pairs, force=args.force)
    errors = FlagErrors()
    request.timeout_ms = errors.parse(args.timeout,
                                      lambda t: parse_timeout_ms("--timeout", t)) or 0
    request.devices.extend(errors.parse(args.devices,
                                        lambda t: parse_uint32_list("--devices", t)) or [])
    request.fault = (args.fault or "").strip()
    request.warn_ratio = errors.parse(args.warn_ratio, parse_warn_ratio) or 0.0
    level = errors.parse(args.level, parse_enum(HealthLevel, "--level"))
    if level is not None:
        setattr(request, "level", level.value)
    request.plugins.extend(errors.parse(args.variants, _plugins_only) or [])
    request.max_verdict_age_ms = errors.parse(
        args.max_verdict_age, lambda t: parse_timeout_ms("--max-verdict-age", t)) or 0
    errors.check()
    return request


def health_deadline_s(request: pb2.HealthRequest) -> float:
    """How long the client waits for the verdict, as colltest: max(120 s, 40 x the case timeout)
    (standard: max(10 min, 120 x), long: max(30 min, 400 x))."""
    case_s = (request.timeout_ms or 5000) / 1000
    level = HealthLevel.from_pb(request.level)
    floor, multiple = {HealthLevel.LONG: (1800, 400), HealthLevel.STANDARD: (600, 120)}.get(
        level, (120, 40))
    return float(max(floor, multiple * case_s))


def list_runs_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The ListRunsRequest fields of the history flags; unset filters are "any"."""
    fields: dict[str, Any] = {"label": args.label, "page_token": args.page_token}
    if args.state is not None:
        state = RunState.from_pb(0)
        try:
            state = RunState.parse(args.state)
        except ValueError:
            pass
        if not state.value:
            raise ValueError(f"--state: unknown state '{args.state}': expected one of done, "
                             "cancelled, failed, interrupted, queued, running")
        fields["state"] = state
    if args.since is not None:
        fields["since_unix_ms"] = parse_since_ms("--since", args.since)
    if args.variant is not None:
        fields["variant"] = parse_enum(Variant, "--variant")(args.variant)
    if args.limit is not None:
        fields["limit"] = parse_uint32("--limit")(args.limit)
    return fields


def parse_threshold(flag: str, text: str) -> float:
    """A tolerated slowdown: a fraction ("0.05") or a percentage ("5%"); a bare number of 1 or
    more is refused, as "5" most likely means 5 %."""
    number = text.strip()
    percent = number.endswith("%")
    try:
        value = float(number[:-1] if percent else number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{flag}: cannot parse '{text}': expected a fraction such as 0.05 or a "
                         "percentage such as 5%")
    if percent:
        return value / 100
    if value >= 1:
        raise ValueError(f"{flag}: '{number}' would be {value * 100:g} %: write {value / 100:g} "
                         f"or {value:g}% for {value:g} %")
    return value


def compare_fields(args: argparse.Namespace) -> dict[str, Any]:
    """run_a, run_b, baseline and threshold of `compare RUN_A RUN_B` or `compare RUN
    --baseline [NAME]`."""
    wanted = 1 if args.baseline is not None else 2
    if len(args.runs) != wanted:
        raise ValueError(
            "compare: with --baseline, name one run (the candidate): compare RUN --baseline NAME"
            if args.baseline is not None else
            "compare: name two runs, the reference then the candidate: compare RUN_A RUN_B (or "
            "RUN --baseline NAME)")
    threshold = parse_threshold("--threshold", args.threshold) if args.threshold else 0.0
    return {"run_a": "" if args.baseline is not None else args.runs[0], "run_b": args.runs[-1],
            "baseline": args.baseline, "threshold": threshold}
