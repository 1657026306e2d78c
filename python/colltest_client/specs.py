"""Request messages from keyword arguments: the field names of colltest.proto, with enum fields
also taking the CLI's names ("lamport", "graph", "bf16") and repeated fields also taking one value
or a comma-separated string."""

import re

from google.protobuf.descriptor import FieldDescriptor

from . import colltest_pb2 as pb2
from . import names

def _convert(field, value):
    # The descriptor names the enum an enum field holds.
    enum = field.enum_type.name if field.type == FieldDescriptor.TYPE_ENUM else None
    if field.label == FieldDescriptor.LABEL_REPEATED:
        if isinstance(value, str):
            value = [part for part in value.split(",") if part]
        elif not isinstance(value, (list, tuple, range)):
            value = [value]
        return [names.value(enum, v) for v in value] if enum else list(value)
    if enum:
        return names.value(enum, value)
    if field.message_type is not None and isinstance(value, dict):
        return message(field.message_type.name, **value)
    return value


def message(type_name, **fields):
    """The message `type_name` of colltest.proto with `fields` set. Raises ValueError for a field
    the message does not have or an enum name it does not know."""
    cls = getattr(pb2, type_name)
    by_name = cls.DESCRIPTOR.fields_by_name
    unknown = sorted(set(fields) - set(by_name))
    if unknown:
        raise ValueError(f"{type_name} has no field {', '.join(unknown)}")
    return cls(**{key: _convert(by_name[key], value) for key, value in fields.items()
                  if value is not None})


# A kernel plugin's name as its struct must spell it (docs/plugins.md): the variant "plugin:NAME".
PLUGIN_PREFIX = "plugin:"
_PLUGIN_NAME = re.compile(r"[a-z0-9_]{1,32}")


def split_variants(variants):
    """(variants, plugins) of a variant list as the colltest CLI's --variants takes it: a list or
    a comma-separated string of variant names, "all" (every variant of colltest's own) and kernel
    plugins as "plugin:NAME" (SweepSpec.plugins, the names without the prefix). Raises ValueError
    for a bare "plugin" or a name a plugin cannot have."""
    if isinstance(variants, str):
        variants = variants.split(",")
    elif not isinstance(variants, (list, tuple, range)):
        variants = [variants]
    kept, plugins = [], []
    for item in variants:
        if not isinstance(item, str):
            kept.append(item)
            continue
        text = item.strip()
        if not text:
            continue
        if text.lower() == "plugin":
            raise ValueError("variants: 'plugin' needs the plugin's name: plugin:NAME")
        if text.lower().startswith(PLUGIN_PREFIX):
            plugin = text[len(PLUGIN_PREFIX):]
            if not _PLUGIN_NAME.fullmatch(plugin):
                raise ValueError(f"variants: {text!r}: a plugin's name is 1 to 32 of a-z, 0-9 "
                                 "and _")
            if plugin not in plugins:
                plugins.append(plugin)
        elif text.lower() == "all":
            # A kernel plugin is named (plugin:NAME), never one of "all".
            kept += [v.number for v in pb2.Variant.DESCRIPTOR.values
                     if v.number and v.number != pb2.VARIANT_PLUGIN]
        else:
            kept.append(text)
    return kept, plugins


def sweep_spec(**fields):
    """A SweepSpec: sweep_spec(world_size=2, m=[1, 64], n=1024, variants="one_stage,lamport").
    Kernel plugins go in `plugins` (names) or among the variants as "plugin:NAME"."""
    if fields.get("variants") is not None:
        variants, plugins = split_variants(fields["variants"])
        fields["variants"] = variants
        if plugins:
            given = fields.get("plugins") or []
            given = given.split(",") if isinstance(given, str) else list(given)
            fields["plugins"] = given + [p for p in plugins if p not in given]
    return message("SweepSpec", **fields)


def health_request(**fields):
    """A HealthRequest: health_request(pairs=True, level="standard")."""
    return message("HealthRequest", **fields)
