"""Durations and times as the colltest CLI reads them (common/parse.h, client/flags/history.h):
"250ms", "2s", "1.5s", "1m30s", "500us", whole days "90d", or a bare number of milliseconds; and
--since as a UTC date, an RFC 3339 time or a duration ago. ValueError messages as colltest's."""

from __future__ import annotations

import calendar
import re
import time
from fractions import Fraction
from typing import Optional

from .ranges import UINT32_MAX, cannot_parse

_BLANKS = " \t\n\v\f\r"
_EXPECTED = ("a duration such as 250ms, 2s, 1.5s, 2m, 500us or 90d, or a whole number of "
             "milliseconds")
_SINCE_EXPECTED = ("a date (2026-11-01), an RFC 3339 time (2026-11-01T08:00:00Z) or a duration "
                   "ago with its unit (24h, 90m, 7d)")
_NS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_TERM = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|ms|s|m|h)")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?"
                      r"(?:([Zz])|([+-])(\d{2}):(\d{2}))")


def _terms_ns(text: str) -> Optional[int]:
    """Nanoseconds of "1m30s"-like text with an optional sign; None when it is not one."""
    sign = -1 if text.startswith("-") else 1
    body = text[1:] if text[:1] in "+-" else text
    total, at = Fraction(0), 0
    while at < len(body):
        match = _TERM.match(body, at)
        if match is None:
            return None
        total += Fraction(match.group(1)) * _NS[match.group(2)]
        at = match.end()
    return sign * int(total) if body else None


def parse_duration_ns(name: str, text: str) -> int:
    """A non-negative duration in nanoseconds."""
    trimmed = text.strip(_BLANKS)
    if trimmed.isascii() and trimmed.isdigit():
        return int(trimmed) * 10**6
    if len(trimmed) > 1 and trimmed.endswith("d") and trimmed[:-1].isascii() \
            and trimmed[:-1].isdigit():
        if int(trimmed[:-1]) > 36500:
            raise cannot_parse(name, text, _EXPECTED)
        return int(trimmed[:-1]) * 86400 * 10**9
    ns = _terms_ns(trimmed)
    if ns is None:
        raise cannot_parse(name, text, _EXPECTED)
    if ns < 0:
        raise ValueError(f"{name}: '{trimmed}' is negative: expected {_EXPECTED}")
    return ns


def parse_timeout_ms(name: str, text: str) -> int:
    """A duration in whole milliseconds, rounded up: "100us" is 1, never 0 (the default)."""
    ms = -(-parse_duration_ns(name, text) // 10**6)
    if ms > UINT32_MAX:
        raise ValueError(f"{name}: '{text.strip(_BLANKS)}' is {ms} ms, the limit is {UINT32_MAX}")
    return ms


def _rfc3339_ms(match: "re.Match[str]") -> int:
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    if match.group(9):
        offset = (int(match.group(10)) * 60 + int(match.group(11))) * 60
        seconds -= offset if match.group(9) == "+" else -offset
    fraction = Fraction(match.group(7) or "0")
    return int((seconds + fraction) * 1000)


def parse_since_ms(name: str, text: str, now_ms: Optional[int] = None) -> int:
    """--since as Unix milliseconds: "2026-11-01" (UTC midnight), "2026-11-01T08:00:00Z", or a
    duration ago ("24h", "7d"). A bare number is refused: "2026" is more likely a year."""
    trimmed = text.strip(_BLANKS)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    date = _DATE.fullmatch(trimmed)
    stamp = _RFC3339.fullmatch(trimmed)
    if date or stamp:
        if date:
            ms = calendar.timegm((int(date.group(1)), int(date.group(2)), int(date.group(3)),
                                  0, 0, 0, 0, 0, 0)) * 1000
        else:
            assert stamp is not None
            ms = _rfc3339_ms(stamp)
        if ms < 0:
            raise ValueError(f"{name}: '{trimmed}' is before 1970-01-01")
        return ms
    if trimmed.isdigit() or any(ch in trimmed for ch in "-:"):
        raise cannot_parse(name, text, _SINCE_EXPECTED)
    try:
        ago_ms = parse_duration_ns(name, trimmed) // 10**6
    except ValueError:
        raise cannot_parse(name, text, _SINCE_EXPECTED) from None
    return max(0, now_ms - ago_ms)
