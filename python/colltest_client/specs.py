"""Request messages from keyword arguments: the field names of colltest.proto, with enum fields
also taking the CLI's names ("lamport", "graph", "bf16") and repeated fields also taking one value
or a comma-separated string."""

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


def sweep_spec(**fields):
    """A SweepSpec: sweep_spec(world_size=2, m=[1, 64], n=1024, variants="one_stage,lamport")."""
    return message("SweepSpec", **fields)


def health_request(**fields):
    """A HealthRequest: health_request(pairs=True, level="standard")."""
    return message("HealthRequest", **fields)
