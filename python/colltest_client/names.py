"""Names of the API's enums as the colltest CLI spells them: lower case for inputs ("one_stage",
"eager", "bf16"), upper case for verdicts ("OK", "WRONG", "DONE"). Derived from the enum value
names of colltest.proto (VARIANT_ONE_STAGE -> one_stage), so a new value needs no change here."""

import re

from . import colltest_pb2 as pb2


# UNSPECIFIED values the server treats as a default: they print as that default, so an output
# never shows a name that cannot be passed back in.
_DEFAULTS = {
    "Mode": "MODE_EAGER",
    "DType": "DTYPE_BF16",
    "Pattern": "PATTERN_NORMAL",
    "Tolerance": "TOLERANCE_STRICT",
    "Epilogue": "EPILOGUE_NONE",
    "QuantTolerance": "QUANT_TOLERANCE_STRICT",
    "HealthLevel": "HEALTH_LEVEL_QUICK",
}


def _enum(enum_name):
    return pb2.DESCRIPTOR.enum_types_by_name[enum_name]


def _prefix(enum_name):
    """The prefix of the enum's value names: every enum of colltest.proto has PREFIX_UNSPECIFIED
    = 0 (VARIANT_UNSPECIFIED -> "VARIANT_")."""
    return _enum(enum_name).values_by_number[0].name[:-len("UNSPECIFIED")]


def name(enum_name, value):
    """The short name of `value` of the enum `enum_name`: name("Variant", 1) == "one_stage"."""
    descriptor = _enum(enum_name)
    full = descriptor.values_by_number[value].name if value in descriptor.values_by_number else None
    if full is None:
        return str(value)
    if full.endswith("_UNSPECIFIED") and enum_name in _DEFAULTS:
        full = _DEFAULTS[enum_name]
    return full[len(_prefix(enum_name)):].lower()


def value(enum_name, text):
    """The enum value named `text` (any case), or `text` itself when it is already a number.
    Raises ValueError naming the accepted names for an unknown one."""
    if isinstance(text, int):
        return text
    descriptor = _enum(enum_name)
    full = _prefix(enum_name) + text.strip().upper()
    if full not in descriptor.values_by_name or full.endswith("_UNSPECIFIED"):
        accepted = ", ".join(name(enum_name, v.number) for v in descriptor.values if v.number)
        if enum_name == "Variant":
            # A kernel plugin is asked for by its name (specs.split_variants).
            accepted = accepted.replace("plugin", "plugin:NAME")
        # "HealthLevel" -> "health level", "DType" -> "dtype".
        what = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", enum_name).lower()
        raise ValueError(f"unknown {what} {text!r}: expected one of {accepted}")
    return descriptor.values_by_name[full].number


def variant_name(v, plugin=None):
    """The variant's name: "lamport"; a kernel plugin's case (VARIANT_PLUGIN) is "plugin:NAME"
    when `plugin` names it (its name, or a PluginIdentity), else "plugin"."""
    if v == pb2.VARIANT_PLUGIN and plugin:
        plugin_name = plugin if isinstance(plugin, str) else plugin.name
        if plugin_name:
            return f"plugin:{plugin_name}"
    return name("Variant", v)


def case_variant_name(case):
    """The variant of a CaseResult or a CaseComparison as the colltest CLI names it: "lamport",
    or "plugin:NAME" for a kernel plugin's case (docs/plugins.md), so that two plugins never read
    as one."""
    return variant_name(case.variant, case.plugin if case.variant == pb2.VARIANT_PLUGIN else None)


def mode_name(v):
    return name("Mode", v)


def dtype_name(v):
    return name("DType", v)


def status_name(v):
    """"OK", "WRONG", "HANG", "ERROR" or "UNSUPPORTED"; "UNSPECIFIED" when the server left it
    unset."""
    return name("CaseStatus", v).upper()


def state_name(v):
    """"DONE", "CANCELLED", "FAILED", ... ("UNSPECIFIED" when unset)."""
    return name("RunState", v).upper()
