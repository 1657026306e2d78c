"""The enums of colltest.proto as Python enums: `run.state is RunState.DONE`, never a number.

Each member's value is the proto's number. `cli_name` is the name the colltest CLI reads and
prints ("one_stage", "eager", "bf16"; verdicts in upper case, "OK", "DONE"), and `parse` reads it
back. A number a newer server sends that this client does not know becomes UNSPECIFIED rather than
an exception (`from_pb`). A test checks that every enum here lists the proto's values."""

from __future__ import annotations

import enum
from typing import TypeVar

_E = TypeVar("_E", bound="ProtoEnum")


class ProtoEnum(enum.Enum):
    """An enum of colltest.proto; `proto_name` is the enum's name there."""

    @classmethod
    def proto_name(cls) -> str:
        return cls.__name__

    @classmethod
    def from_pb(cls: type[_E], number: int) -> _E:
        """The member of a proto number; UNSPECIFIED for a number this client does not know."""
        try:
            return cls(number)
        except ValueError:
            return cls(0)

    @property
    def cli_name(self) -> str:
        """"one_stage", "eager": the lower-case name the CLI takes."""
        return self.name.lower()

    @classmethod
    def parse(cls: type[_E], text: str) -> _E:
        """The member named `text` (any case); ValueError naming the accepted names."""
        wanted = text.strip().lower()
        for member in cls:
            if member.value and member.cli_name.lower() == wanted:
                return member
        accepted = ", ".join(m.cli_name for m in cls if m.value)
        raise ValueError(f"unknown {_words(cls.__name__)} {text!r}: expected one of {accepted}")


def _words(name: str) -> str:
    """"HealthLevel" -> "health level", "DType" -> "dtype"."""
    out = ""
    for i, ch in enumerate(name):
        if ch.isupper() and i and name[i - 1].islower():
            out += " "
        out += ch.lower()
    return out


class _Verdict(ProtoEnum):
    """Verdicts print in upper case, as the CLI shows them: "OK", "DONE"."""

    @property
    def cli_name(self) -> str:
        return self.name


class DType(ProtoEnum):
    UNSPECIFIED = 0  # the server reads it as BF16
    BF16 = 1
    FP16 = 2
    FP32 = 3

    @property
    def element_bytes(self) -> int:
        return 4 if self is DType.FP32 else 2


class Variant(ProtoEnum):
    UNSPECIFIED = 0
    ONE_STAGE = 1
    TWO_KERNEL = 2
    LAMPORT = 3
    LAMPORT_TB = 4
    NCCL = 5
    AUTO = 6
    LAMPORT_TWO_SHOT = 7
    PLUGIN = 8  # a kernel plugin's case; its name is in CaseResult.plugin


class Epilogue(ProtoEnum):
    UNSPECIFIED = 0
    NONE = 1
    FP8_TOKEN = 2
    FP8_TENSOR = 3
    NVFP4 = 4


class Fp8Format(ProtoEnum):
    UNSPECIFIED = 0
    E4M3FN = 1
    E4M3FNUZ = 2


class QuantTolerance(ProtoEnum):
    UNSPECIFIED = 0
    STRICT = 1
    ULP = 2


class QuantRule(ProtoEnum):
    UNSPECIFIED = 0
    SCALE = 1
    FORMAT = 2
    SATURATION = 3
    ROUNDING = 4
    UNEXPLAINED = 5


class Mode(ProtoEnum):
    UNSPECIFIED = 0
    EAGER = 1
    GRAPH = 2


class Pattern(ProtoEnum):
    UNSPECIFIED = 0
    NORMAL = 1
    INTEGERS = 2
    NEG_ZERO = 3
    LARGE = 4
    DENORMAL = 5
    SAME = 6
    AMAX_LAST_RANK = 7
    QUANT_TIES = 8
    QUANT_SATURATE = 9
    ZERO_ROWS = 10


class Tolerance(ProtoEnum):
    UNSPECIFIED = 0
    STRICT = 1
    AITER = 2
    TRTLLM = 3


class HealthLevel(ProtoEnum):
    UNSPECIFIED = 0  # the server reads it as QUICK
    QUICK = 1
    STANDARD = 2
    LONG = 3


class CaseStatus(_Verdict):
    UNSPECIFIED = 0
    OK = 1
    WRONG = 2
    HANG = 3
    ERROR = 4
    UNSUPPORTED = 5


class RunState(_Verdict):
    UNSPECIFIED = 0
    QUEUED = 1
    RUNNING = 2
    DONE = 3
    CANCELLED = 4
    FAILED = 5
    INTERRUPTED = 6

    @property
    def aborted(self) -> bool:
        """The run ended without completing: its results are incomplete."""
        return self in (RunState.CANCELLED, RunState.FAILED, RunState.INTERRUPTED)


class GroupState(_Verdict):
    UNSPECIFIED = 0
    SERVING = 1
    DEGRADED = 2
    RECOVERING = 3


class CompareVerdict(_Verdict):
    UNSPECIFIED = 0
    SAME = 1
    REGRESSION = 2
    IMPROVEMENT = 3
    ONLY_A = 4
    ONLY_B = 5


ALL_ENUMS: tuple[type[ProtoEnum], ...] = (
    DType, Variant, Epilogue, Fp8Format, QuantTolerance, QuantRule, Mode, Pattern, Tolerance,
    HealthLevel, CaseStatus, RunState, GroupState, CompareVerdict)
