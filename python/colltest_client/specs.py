"""Request messages from keyword arguments: the field names of colltest.proto, with enum fields
also taking Python enum members (Variant.LAMPORT) or the CLI's names ("lamport", "graph", "bf16"),
and repeated fields also taking one value or a comma-separated string."""

from __future__ import annotations

import re
from typing import Any, Union

from google.protobuf.descriptor import FieldDescriptor

from . import colltest_pb2 as pb2
from .enums import ALL_ENUMS, ProtoEnum, Variant

_ENUMS: dict[str, type[ProtoEnum]] = {cls.proto_name(): cls for cls in ALL_ENUMS}
# A kernel plugin's name as its struct must spell it (docs/plugins.md): the variant "plugin:NAME".
PLUGIN_PREFIX = "plugin:"
_PLUGIN_NAME = re.compile(r"[a-z0-9_]{1,32}")

EnumInput = Union[ProtoEnum, int, str]


def enum_number(enum_name: str, value: EnumInput) -> int:
    """The proto number of a member, a number or a CLI name of the proto enum `enum_name`."""
    cls = _ENUMS[enum_name]
    if isinstance(value, ProtoEnum):
        if not isinstance(value, cls):
            raise ValueError(f"{value!r} is not a {enum_name}")
        return int(value.value)
    if isinstance(value, int):
        return value
    try:
        return int(cls.parse(value).value)
    except ValueError as e:
        if cls is Variant:  # a kernel plugin is asked for by its name (split_variants)
            raise ValueError(str(e) + ", plugin:NAME") from None
        raise


def _convert(field: Any, value: Any) -> Any:
    enum = field.enum_type.name if field.type == FieldDescriptor.TYPE_ENUM else None
    if field.label == FieldDescriptor.LABEL_REPEATED:
        if isinstance(value, str):
            value = [part for part in value.split(",") if part.strip()]
        elif not isinstance(value, (list, tuple, range)):
            value = [value]
        return [enum_number(enum, v) for v in value] if enum else list(value)
    if enum:
        return enum_number(enum, value)
    if field.message_type is not None and isinstance(value, dict):
        return message(field.message_type.name, **value)
    return value


def message(type_name: str, **fields: Any) -> Any:
    """The message `type_name` of colltest.proto with `fields` set (None leaves a field unset).
    Raises ValueError for a field the message does not have or an enum name it does not know."""
    cls = getattr(pb2, type_name)
    by_name = cls.DESCRIPTOR.fields_by_name
    unknown = sorted(set(fields) - set(by_name))
    if unknown:
        raise ValueError(f"{type_name} has no field {', '.join(unknown)}")
    return cls(**{key: _convert(by_name[key], value) for key, value in fields.items()
                  if value is not None})


def _plugin_name(text: str, what: str) -> str:
    plugin = text[len(PLUGIN_PREFIX):]
    if not _PLUGIN_NAME.fullmatch(plugin):
        raise ValueError(f"{what}: '{text}': a plugin's name is 1 to 32 of a-z, 0-9 and _")
    return plugin


def split_variants(variants: Any, what: str = "variants") -> tuple[list[Any], list[str]]:
    """(variants, plugins) of a variant list as the colltest CLI's --variants takes it: members,
    names or a comma-separated string, "all" (every variant of colltest's own) and kernel plugins
    as "plugin:NAME" (SweepSpec.plugins). ValueError for a bare "plugin" or a bad plugin name."""
    if isinstance(variants, str):
        variants = variants.split(",")
    elif not isinstance(variants, (list, tuple, range)):
        variants = [variants]
    kept: list[Any] = []
    plugins: list[str] = []
    for item in variants:
        text = item.strip() if isinstance(item, str) else None
        if text is None:
            kept.append(item)
        elif text.lower() == "plugin":
            raise ValueError(f"{what}: 'plugin' needs the plugin's name: plugin:NAME")
        elif text.lower().startswith(PLUGIN_PREFIX):
            plugin = _plugin_name(text, what)
            plugins += [] if plugin in plugins else [plugin]
        elif text.lower() == "all":  # a kernel plugin is named, never one of "all"
            kept += [v for v in Variant if v.value and v is not Variant.PLUGIN]
        elif text:
            kept.append(text)
    return kept, plugins


def sweep_spec(**fields: Any) -> pb2.SweepSpec:
    """A SweepSpec: sweep_spec(world_size=2, m=[1, 64], n=1024, variants="one_stage,lamport").
    Kernel plugins go in `plugins` (names) or among the variants as "plugin:NAME"."""
    if fields.get("variants") is not None:
        variants, plugins = split_variants(fields["variants"])
        fields["variants"] = variants
        if plugins:
            given = fields.get("plugins") or []
            given = given.split(",") if isinstance(given, str) else list(given)
            fields["plugins"] = given + [p for p in plugins if p not in given]
    spec: pb2.SweepSpec = message("SweepSpec", **fields)
    return spec


def health_request(**fields: Any) -> pb2.HealthRequest:
    """A HealthRequest: health_request(pairs=True, level="standard")."""
    request: pb2.HealthRequest = message("HealthRequest", **fields)
    return request
