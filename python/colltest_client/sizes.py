"""The rows (m) of a sweep from per-rank sizes in bytes, as nccl-tests users give them: --bytes
RANGE or -b BEGIN [-e END] [-f FACTOR], for the one hidden size n and the dtype (the colltest
CLI's client/flags/size_flags.h, with its messages)."""

from __future__ import annotations

from typing import Optional

from .enums import DType
from .ranges import UINT32_MAX, ListRange, expand_range, parse_byte_size, parse_byte_size_list
from .ranges import parse_count, parse_uint32_list


def byte_flags_given(bytes_list: Optional[str], begin: Optional[str], end: Optional[str],
                     factor: Optional[str]) -> str:
    """The byte flags given, for messages: "--bytes", "-b, -e"."""
    names = ("--bytes", "-b", "-e", "-f")
    return ", ".join(n for n, v in zip(names, (bytes_list, begin, end, factor)) if v is not None)


def _begin_end_factor(given: str, begin: Optional[str], end: Optional[str],
                      factor: Optional[str]) -> list[int]:
    """-b BEGIN [-e END] [-f FACTOR]: -e defaults to -b (one size), -f to 2."""
    if begin is None:
        raise ValueError(f"{given}: needs -b, the smallest size in bytes per rank")
    r = ListRange(begin=parse_byte_size("-b", begin))
    r.end = parse_byte_size("-e", end) if end is not None else r.begin
    if factor is not None:
        r.factor = parse_count("-f", factor)
    if r.end < r.begin:
        raise ValueError(f"-e: {r.end} bytes is below -b {r.begin} bytes")
    if r.factor < 2:
        raise ValueError(f"-f: the factor {r.factor} must be 2 or more")
    values: list[int] = []
    expand_range("-b/-e/-f", f"-b {r.begin} -e {r.end} -f {r.factor}", r, values)
    return values


def _rows_for(flag: str, size: int, n: int, dtype: DType) -> int:
    """m for `size` bytes per rank, or ValueError naming the nearest whole numbers of rows."""
    dtype = DType.BF16 if dtype is DType.UNSPECIFIED else dtype
    element = dtype.element_bytes
    row = n * element
    row_text = f"a row is {row} bytes (n {n} x {element} bytes of {dtype.cli_name})"
    if row == 0:
        raise ValueError(f"{flag}: n 0 has rows of 0 bytes: no size in bytes gives an m")
    m = size // row
    if m == 0:
        raise ValueError(f"{flag}: {size} bytes is less than a row: {row_text}; the smallest "
                         f"valid size is {row}")
    if size % row:
        raise ValueError(f"{flag}: {size} bytes is not a whole number of rows: {row_text}; "
                         f"nearest valid sizes: {m * row} and {(m + 1) * row}")
    if m > UINT32_MAX:
        raise ValueError(f"{flag}: {size} bytes is m {m} rows, the limit is {UINT32_MAX}")
    return m


def resolve_rows(m: Optional[str], bytes_list: Optional[str], begin: Optional[str],
                 end: Optional[str], factor: Optional[str], n: list[int],
                 dtype: DType) -> list[int]:
    """The m list from --m or from the byte flags; [] when none was given (the default
    applies). Refused: --m with a byte flag, a byte flag without exactly one n, a size that is
    not a whole number of rows, -e below -b, --bytes with -b/-e/-f."""
    given = byte_flags_given(bytes_list, begin, end, factor)
    if not given:
        return parse_uint32_list("--m", m) if m is not None else []
    if m is not None:
        raise ValueError(f"--m: cannot be combined with {given}: give the sizes as rows (--m) or "
                         "as bytes per rank (--bytes or -b/-e/-f)")
    if len(n) != 1:
        got = ",".join(map(str, n)) if n else "none"
        raise ValueError(f"{given}: needs exactly one --hidden to turn bytes into rows (m = bytes "
                         f"/ (n x element size)), got {got}")
    if bytes_list is None:
        flag, sizes = "-b", _begin_end_factor(given, begin, end, factor)
    elif begin is not None or end is not None or factor is not None:
        raise ValueError("--bytes: cannot be combined with -b, -e or -f: give the sizes one way")
    else:
        flag, sizes = "--bytes", parse_byte_size_list("--bytes", bytes_list)
    return [_rows_for(flag, size, n[0], dtype) for size in sizes]
