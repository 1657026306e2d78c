"""The grammar of counts, byte sizes and lists that the colltest CLI and colltestd share
(common/parse.h), with the same results and the same messages:

    "1,8,64"       the values themselves
    "8..128"       8, 16, 32, 64, 128: doubling from the start while not above the end
    "8..128:x4"    times 4 (a factor of 2 or more); "1..8:+1" plus 1 (a step of 1 or more)
    "1:1024:x4"    the same ranges as BEGIN:END[:xF|:+S]; without a step they double too
    "8K", "32MiB"  K, M, G, T are powers of 1024 (a bare "B" only in byte sizes)

Every function raises ValueError with the message colltest gives, starting with `name`."""

from __future__ import annotations

from dataclasses import dataclass

MAX_LIST_VALUES = 4096  # as many values as the server runs cases in one sweep
UINT32_MAX = (1 << 32) - 1
UINT64_MAX = (1 << 64) - 1

_BLANKS = " \t\n\v\f\r"
_COUNT_EXPECTED = "a count such as 64, 8K or 1M (K, M, G, T: powers of 1024)"
_BYTES_EXPECTED = "a byte size such as 4096, 64K or 32MiB (K, M, G, T: powers of 1024)"
LIST_EXPECTED = ("a comma-separated list of values and ranges such as 1,8,64 or 8..128 "
                 "(doubling), 8..128:x4 (times 4), 1..8:+1 (plus 1), or BEGIN:END[:xF|:+S] such "
                 "as 8K:128M:x2")


@dataclass
class ListRange:
    """From `begin`, times `factor` (or plus `step` where step > 0) while not above `end`."""
    begin: int = 0
    end: int = 0
    factor: int = 2
    step: int = 0


def cannot_parse(name: str, text: str, expected: str) -> ValueError:
    return ValueError(f"{name}: cannot parse '{text}': expected {expected}")


def _digits(text: str) -> int:
    """How many ASCII digits `text` starts with."""
    count = 0
    while count < len(text) and text[count] in "0123456789":
        count += 1
    return count


def _suffix_shift(suffix: str, as_bytes: bool) -> int:
    """log2 of a suffix's multiplier ("k", "mib", "gb"; lower case), -1 for none of them."""
    if not suffix:
        return 0
    if suffix == "b":
        return 0 if as_bytes else -1
    unit = "kmgt".find(suffix[0])
    if unit < 0 or suffix[1:] not in ("", "i", "ib", "b"):
        return -1
    return 10 * (unit + 1)


def _suffixed(name: str, text: str, limit: int, as_bytes: bool) -> int:
    trimmed = text.strip(_BLANKS)
    digits = _digits(trimmed)
    shift = _suffix_shift(trimmed[digits:].lower(), as_bytes)
    if digits == 0 or shift < 0:
        raise cannot_parse(name, text, _BYTES_EXPECTED if as_bytes else _COUNT_EXPECTED)
    value = int(trimmed[:digits])
    if value > UINT64_MAX or (shift and value > UINT64_MAX >> shift):
        raise ValueError(f"{name}: '{trimmed}' does not fit in 64 bits, the limit is {limit}")
    value <<= shift
    if value > limit:
        raise ValueError(f"{name}: '{trimmed}' is {value}, the limit is {limit}")
    return value


def parse_count(name: str, text: str, limit: int = UINT64_MAX) -> int:
    """"64", "8K" (8192), "1M": a count with an optional power-of-1024 suffix."""
    return _suffixed(name, text, limit, as_bytes=False)


def parse_byte_size(name: str, text: str, limit: int = UINT64_MAX) -> int:
    """As parse_count, also "512B", "32MiB", "1MB"."""
    return _suffixed(name, text, limit, as_bytes=True)


def _range_step(name: str, item: str, text: str, as_bytes: bool, out: ListRange) -> None:
    """Reads ":xF" or ":+S" (S may carry a suffix, as the bounds) into `out`."""
    geometric = len(text) > 1 and text[0] in "xX"
    arithmetic = len(text) > 1 and text[0] == "+" and text[1] in "0123456789"
    if geometric:
        number_text = text[1:]
        if _digits(number_text) != len(number_text) or int(number_text) > UINT64_MAX:
            raise cannot_parse(name, item, LIST_EXPECTED)
        out.factor = int(number_text)
    elif arithmetic:
        try:
            out.step = _suffixed(name, text[1:], UINT64_MAX, as_bytes)
        except ValueError:
            raise cannot_parse(name, item, LIST_EXPECTED) from None
        if out.step == 0:
            raise ValueError(f"{name}: range '{item}': the step 0 must be 1 or more")
    else:
        raise cannot_parse(name, item, LIST_EXPECTED)


def _parse_range(name: str, item: str, limit: int, as_bytes: bool) -> ListRange:
    """"START..END[:xF|:+S]" (the item holds "..") or "BEGIN:END[:xF|:+S]"."""
    step_text = None
    if ".." in item:
        begin_text, rest = item.split("..", 1)
        end_text, colon, after = rest.partition(":")
        step_text = after if colon else None
    else:
        parts = item.split(":")
        if len(parts) > 3:
            raise cannot_parse(name, item, LIST_EXPECTED)
        begin_text, end_text = parts[0], parts[1]
        step_text = parts[2] if len(parts) == 3 else None
    out = ListRange(begin=_suffixed(name, begin_text, limit, as_bytes),
                    end=_suffixed(name, end_text, limit, as_bytes))
    if step_text is not None:
        _range_step(name, item, step_text, as_bytes, out)
    return out


def _too_many(name: str, item: str) -> ValueError:
    where = f" (range '{item}')" if item else ""
    return ValueError(f"{name}: more than {MAX_LIST_VALUES} values{where}, the limit is "
                      f"{MAX_LIST_VALUES}")


def expand_range(name: str, item: str, r: ListRange, values: list[int]) -> None:
    """Appends the values of `r` to `values`, at most MAX_LIST_VALUES in all; `item` names the
    range in the messages as the user gave it."""
    if r.begin > r.end:
        raise ValueError(f"{name}: range '{item}' runs backwards ({r.begin} > {r.end})")
    if r.step == 0 and r.factor < 2:
        raise ValueError(f"{name}: range '{item}': the factor {r.factor} must be 2 or more")
    if r.step == 0 and r.begin == 0:
        raise ValueError(f"{name}: range '{item}': a multiplying range cannot start at 0 "
                         "(use :+STEP)")
    value = r.begin
    while True:
        if len(values) == MAX_LIST_VALUES:
            raise _too_many(name, item)
        values.append(value)
        if r.step > 0:
            if r.end - value < r.step:
                return
            value += r.step
        else:
            if value > r.end // r.factor:
                return
            value *= r.factor


def _parse_list(name: str, text: str, limit: int, as_bytes: bool) -> list[int]:
    values: list[int] = []
    for raw in text.split(","):
        item = raw.strip(_BLANKS)
        if not item:  # "1,,8" is most likely a typo that should not shrink the sweep
            raise cannot_parse(name, text, LIST_EXPECTED)
        if ".." in item or ":" in item:
            expand_range(name, item, _parse_range(name, item, limit, as_bytes), values)
            continue
        if len(values) == MAX_LIST_VALUES:
            raise _too_many(name, "")
        values.append(_suffixed(name, item, limit, as_bytes))
    return values


def parse_list(name: str, text: str, limit: int = UINT64_MAX) -> list[int]:
    """The values of a list of counts and ranges ("1,8,64", "1:1024:x4", "8..128:+8")."""
    return _parse_list(name, text, limit, as_bytes=False)


def parse_byte_size_list(name: str, text: str, limit: int = UINT64_MAX) -> list[int]:
    """parse_list whose values and bounds are byte sizes ("8K:128MiB:x2")."""
    return _parse_list(name, text, limit, as_bytes=True)


def parse_uint32_list(name: str, text: str) -> list[int]:
    """The CLI's --m, --n and --devices: a list of values up to 2^32 - 1."""
    return parse_list(name, text, UINT32_MAX)
