"""The flags of `run` and `sweep` and their SweepSpec, as the colltest CLI builds it
(client/flags/flags.h): n 7168, bf16, m 1,4,16,64,256,1024 and modes eager,graph unless given;
variants unset (or `all`) are the server's (`variants_from_server`). Every bad flag is reported at
once, one line each, in one ValueError."""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable, Optional, TypeVar

from . import colltest_pb2 as pb2
from .durations import parse_timeout_ms
from .enums import DType, Epilogue, Fp8Format, Mode, Pattern, ProtoEnum, QuantTolerance
from .enums import Tolerance, Variant
from .ranges import UINT32_MAX, parse_byte_size, parse_count, parse_uint32_list
from .sizes import resolve_rows
from .specs import split_variants

DEFAULT_N = 7168
DEFAULT_ROWS = [1, 4, 16, 64, 256, 1024]
_NCCL_DTYPES = {"bfloat16": DType.BF16, "half": DType.FP16, "float16": DType.FP16,
                "float": DType.FP32, "float32": DType.FP32}
_T = TypeVar("_T")
_E = TypeVar("_E", bound=ProtoEnum)


class FlagErrors:
    """Every flag error of one command line, so that one try shows them all."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def parse(self, text: Optional[str], parse: Callable[[str], _T]) -> Optional[_T]:
        """The value of a given flag; None when it was not given or did not parse (its message
        is kept)."""
        if text is None:
            return None
        try:
            return parse(text)
        except ValueError as e:
            self.messages.append(str(e))
            return None

    def check(self) -> None:
        if self.messages:
            raise ValueError("\n".join(self.messages))


def parse_uint32(flag: str) -> Callable[[str], int]:
    return lambda text: parse_count(flag, text, UINT32_MAX)


def parse_enum(cls: type[_E], flag: str) -> Callable[[str], _E]:
    def parse(text: str) -> _E:
        try:
            return cls.parse(text)
        except ValueError:
            names = [m.cli_name for m in cls if m.value]
            expected = ", ".join(names[:-1]) + " or " + names[-1]
            raise ValueError(f"{flag}: cannot parse '{text}': expected {expected}") from None
    return parse


def parse_dtype(text: str) -> DType:
    """bf16|fp16|fp32, or nccl-tests' bfloat16|half|float16|float|float32."""
    nccl = _NCCL_DTYPES.get(text.strip().lower())
    if nccl is not None:
        return nccl
    try:
        return DType.parse(text)
    except ValueError:
        raise ValueError(f"--dtype: cannot parse '{text}': expected bf16, fp16 or fp32 "
                         "(nccl-tests: bfloat16, half or float)") from None


def parse_name_list(cls: type[_E], flag: str, text: str, every: list[_E]) -> list[_E]:
    """"eager,graph" or "all": members of `cls`, each unknown one reported."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise ValueError(f"{flag}: cannot parse '{text}': expected a comma-separated list")
    values: list[_E] = []
    unknown: list[str] = []
    for item in items:
        try:
            values += every if item.lower() == "all" else [cls.parse(item)]
        except ValueError as e:
            unknown.append(f"{flag}: {e}")
    if unknown:
        raise ValueError("\n".join(unknown))
    return values


def parse_finite(flag: str, text: str, expected: str = "a finite number") -> float:
    """A finite number, or "FLAG: cannot parse 'TEXT': expected EXPECTED"."""
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"{flag}: cannot parse '{text}': expected {expected}")
    return value


def parse_scale(flag: str) -> Callable[[str], float]:
    """A quantising epilogue's scale: above 0 (the proto's 0 is the default), at most 2^64."""
    expected = "a positive finite number, at most 2^64 (18446744073709551616)"

    def parse(text: str) -> float:
        value = parse_finite(flag, text, expected)
        if value <= 0:
            raise ValueError(f"{flag}: '{text.strip()}' is not above 0 (0 would mean the "
                             f"default): expected {expected}")
        if value > 2.0 ** 64:
            raise ValueError(f"{flag}: '{text.strip()}' is above the limit 2^64: expected "
                             f"{expected}")
        return value
    return parse


def parse_check(text: str) -> None:
    """nccl-tests' -c: colltest checks every case, which is -c 1; 0 and more are refused."""
    count = parse_count("--check", text)
    if count == 0:
        raise ValueError(f"--check: '{text}': colltest has no unchecked case, every case's "
                         "output is checked; leave out -c (or give 1)")
    if count > 1:
        raise ValueError(f"--check: '{text}': colltest checks the last timed call of each case "
                         "(-c 1); for more checked calls use --stress N")


def variants_from_server(args: argparse.Namespace) -> bool:
    """--variants not given, or `all` among them: the variants the server's backend offers."""
    text: Optional[str] = args.variants
    return text is None or any(item.strip().lower() == "all" for item in text.split(","))


def _group(args: argparse.Namespace, spec: pb2.SweepSpec, errors: FlagErrors) -> None:
    """--world and --devices: unset, every device the server selects."""
    spec.world_size = errors.parse(args.world, parse_uint32("--world")) or 0
    spec.devices.extend(errors.parse(args.devices, lambda t: parse_uint32_list("--devices", t))
                        or [])


def _shape(args: argparse.Namespace, spec: pb2.SweepSpec, errors: FlagErrors) -> None:
    """--hidden and --dtype, then the rows: --m or the byte flags for that n and dtype (skipped
    when either failed); their own errors are reported after the rows', as colltest does."""
    later = FlagErrors()
    n = later.parse(args.n, lambda t: parse_uint32_list("--hidden", t))
    spec.n.extend(n if args.n is not None else [DEFAULT_N])
    dtype = later.parse(args.dtype, parse_dtype) if args.dtype is not None else DType.BF16
    _set_enum(spec, "dtype", dtype)
    spec.m.extend(errors.parse(args.m, lambda t: parse_uint32_list("--m", t)) or [])
    byte_flags = (args.bytes, args.minbytes, args.maxbytes, args.stepfactor)
    if any(v is not None for v in byte_flags) and not later.messages and dtype is not None:
        known = dtype

        def rows(_: str) -> list[int]:
            return resolve_rows(args.m, *byte_flags, list(spec.n), known)
        m = errors.parse("", rows)
        if m:
            del spec.m[:]
            spec.m.extend(m)
    if args.m is None and not spec.m:
        spec.m.extend(DEFAULT_ROWS)
    errors.messages += later.messages


def _kernels(args: argparse.Namespace, text: str) -> tuple[list[Variant], list[str]]:
    """--variants: colltest's variants (none when they are the server's) and kernel plugins."""
    names, plugins = split_variants(text, "--variants")
    if not names and plugins:
        return [], plugins
    every: list[Variant] = [v for v in Variant if v.value and v is not Variant.PLUGIN]
    listed = ",".join(v if isinstance(v, str) else v.cli_name for v in names)
    variants = parse_name_list(Variant, "--variants", listed, every)
    return ([] if variants_from_server(args) else variants), plugins


def _cases(args: argparse.Namespace, spec: pb2.SweepSpec, errors: FlagErrors) -> None:
    """--variants, --modes, --pattern, --tolerance and the quantising epilogues' flags."""
    variants, plugins = errors.parse(args.variants, lambda t: _kernels(args, t)) or ([], [])
    spec.variants.extend(v.value for v in variants)
    spec.plugins.extend(plugins)
    both: list[Mode] = [Mode.EAGER, Mode.GRAPH]
    modes = errors.parse(args.modes, lambda t: parse_name_list(Mode, "--modes", t, both))
    if args.modes is None:
        modes = both
    spec.modes.extend(m.value for m in modes or [])
    enum_flags: tuple[tuple[str, type[ProtoEnum], str], ...] = (
        ("--pattern", Pattern, "pattern"), ("--tolerance", Tolerance, "tolerance"))
    for flag, cls, field in enum_flags:
        _set_enum(spec, field, errors.parse(getattr(args, field), parse_enum(cls, flag)))
    every = [e for e in Epilogue if e.value]
    epilogues = errors.parse(args.epilogue,
                             lambda t: parse_name_list(Epilogue, "--epilogue", t, every)) or []
    spec.epilogues.extend(dict.fromkeys(e.value for e in epilogues))
    _set_enum(spec, "fp8_format", errors.parse(args.fp8_format,
                                               parse_enum(Fp8Format, "--fp8-format")))
    spec.fp8_scale = errors.parse(args.fp8_scale, parse_scale("--fp8-scale")) or 0.0
    spec.nvfp4_global_scale = errors.parse(args.nvfp4_global_scale,
                                           parse_scale("--nvfp4-global-scale")) or 0.0
    _set_enum(spec, "quant_tolerance", errors.parse(args.quant_tolerance, parse_enum(
        QuantTolerance, "--quant-tolerance")))


def _set_enum(message: Any, field: str, value: Optional[ProtoEnum]) -> None:
    if value is not None:
        setattr(message, field, value.value)


def _counts(args: argparse.Namespace, spec: pb2.SweepSpec, errors: FlagErrors) -> None:
    """Counts, the timeout, eps, the fault, the label and the kernel knobs: unset stays 0."""
    spec.warmup = errors.parse(args.warmup, parse_uint32("--warmup")) or 0
    spec.iters = errors.parse(args.iters, parse_uint32("--iters")) or 0
    errors.parse(args.check, parse_check)
    spec.stress_calls = errors.parse(args.stress, parse_uint32("--stress")) or 0
    spec.seed = errors.parse(args.seed, lambda t: parse_count("--seed", t)) or 0
    spec.timeout_ms = errors.parse(args.timeout, lambda t: parse_timeout_ms("--timeout", t)) or 0
    spec.eps = errors.parse(args.eps, lambda t: parse_finite("--eps", t)) or 0.0
    spec.fault = (args.fault or "").strip()  # its grammar is the server's to check
    knobs = pb2.Knobs(
        grid_blocks=errors.parse(args.grid_blocks, parse_uint32("--grid-blocks")) or 0,
        threads_per_block=errors.parse(args.threads_per_block,
                                       parse_uint32("--threads-per-block")) or 0,
        lamport_min_bytes=errors.parse(args.lamport_min_bytes, lambda t: parse_byte_size(
            "--lamport-min-bytes", t)) or 0,
        arm_repeat=errors.parse(args.arm_repeat, parse_uint32("--arm-repeat")) or 0)
    if knobs.ByteSize():  # an all-default Knobs is left unset, as colltest does
        spec.knobs.CopyFrom(knobs)
    spec.label = args.label or ""


def build_sweep_spec(args: argparse.Namespace) -> pb2.SweepSpec:
    """The SweepSpec of the run/sweep flags; ValueError with every bad flag, one per line."""
    spec = pb2.SweepSpec()
    errors = FlagErrors()
    _group(args, spec, errors)
    _shape(args, spec, errors)
    _cases(args, spec, errors)
    _counts(args, spec, errors)
    errors.check()
    spec.keep_normed = args.keep_normed
    spec.no_residual = args.no_residual
    spec.stop_on_failure = args.stop_on_failure
    spec.force = args.force
    return spec


def use_server_variants(spec: pb2.SweepSpec, variants: list[Variant]) -> None:
    """The variants a ListDevices answer names, in its order."""
    del spec.variants[:]
    spec.variants.extend(v.value for v in variants)
