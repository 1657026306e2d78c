"""Filling the dataclasses of results.py from protobuf messages, and turning them into JSON-ready
dicts: one generic walk over the dataclass fields instead of a copy per field."""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from typing import Any, Callable, TypeVar

from .enums import ProtoEnum

_T = TypeVar("_T")


@functools.lru_cache(maxsize=None)
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_message(cls: Callable[..., _T], message: Any, **given: Any) -> _T:
    """An instance of the dataclass `cls` whose fields not in `given` are copied from the message's
    fields of the same names, enum numbers becoming `cls`'s enum members (a repeated enum field
    typed list[SomeEnum] becomes a list of members). `raw`, when the dataclass has it, is the
    message itself."""
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(typing.cast(Any, cls)):
        if field.name in given:
            values[field.name] = given[field.name]
        elif field.name == "raw":
            values["raw"] = message
        else:
            values[field.name] = _converted(hints[field.name], getattr(message, field.name))
    return cls(**values)


def _converted(hint: Any, value: Any) -> Any:
    if isinstance(hint, type) and issubclass(hint, ProtoEnum):
        return hint.from_pb(value)
    args = typing.get_args(hint)
    if typing.get_origin(hint) is list:
        item = args[0] if args else Any
        return [_converted(item, v) for v in value]
    return value


def to_json(value: Any) -> Any:
    """A JSON-ready copy: dataclasses as dicts (without `raw`), enums by their CLI names
    ("one_stage", "OK"), lists as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name != "raw"}
    if isinstance(value, ProtoEnum):
        return value.cli_name
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value
