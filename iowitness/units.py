"""Units and number formats for people: the one place they are defined."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

KIB = 1024

# Multiples of a byte by name, as people and tools write them: SI prefixes are powers of 1000,
# binary ones powers of 1024. dd(1): "kB=1000, K=1024, MB=1000*1000, M=1024*1024, ...
# GB=1000*1000*1000, G=1024*1024*1024, and so on for T, P, E, Z, Y. Binary prefixes can be
# used, too: KiB=K, MiB=M, and so on." dd prints sizes and rates with these names; people give
# --device-ceiling with them.
BYTE_UNITS = {
    "B": 1, "bytes": 1,
    "kB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3, "TB": 1000 ** 4, "PB": 1000 ** 5,
    "EB": 1000 ** 6, "ZB": 1000 ** 7, "YB": 1000 ** 8, "RB": 1000 ** 9, "QB": 1000 ** 10,
    "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4, "PiB": 1024 ** 5,
    "EiB": 1024 ** 6, "ZiB": 1024 ** 7, "YiB": 1024 ** 8, "RiB": 1024 ** 9, "QiB": 1024 ** 10,
}


def bytes_(n) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < KIB or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= KIB
    return str(n)


def micros(us: float) -> str:
    """A latency in µs, without its unit: for a column whose header says "µs". Never switches
    to ms or s (a column of µs holds µs only); large values get thousands separators."""
    if us != us:  # NaN
        return "-"
    return number(us)


def seconds(s: float) -> str:
    if s != s:
        return "-"
    if s < 0.001:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.3f} s" if s < 100 else f"{s:.0f} s"


# a cell that reads as a number: right-aligned ("1,024", "0.50", "58%", "4 thr", "6,416,040?"
# with a verdict mark after it, sweep.py)
_NUMERIC = re.compile(r"^[<>~+-]?[\d,]*\.?\d+( ?%| thr)?[!~?]?$|^-[!~?]?$|^$")


def _is_number_column(frame, c, cells) -> bool:
    from pandas.api.types import is_numeric_dtype  # here: the collector imports this module without pandas

    return is_numeric_dtype(frame[c]) or all(_NUMERIC.match(v) for v in cells)


def numeric_columns(frame) -> set:
    """The columns of a table of display values that hold numbers (right-aligned by every
    reporter): numeric ones, and text ones whose every cell reads as a number."""
    return {c for c in frame.columns if _is_number_column(frame, c, [str(v) for v in frame[c]])}


WRAP_MIN = 20        # a text column wraps down to this many characters before any column is left out
WRAP_MIN_LAST = 8    # ... and down to this many when leaving columns out was not enough


def _fits(widths: list[int]) -> int:
    return sum(widths) + 2 * (len(widths) - 1)


def _drop_first(cols: list[str], name: str) -> str | None:
    """The column `name` names: itself, or with its unit after it ("p50" is "p50 µs")."""
    return next((c for c in cols if c == name or c.startswith(name + " ")), None)


def wrap(text: str, width: int | None, indent: str = "") -> str:
    """Lines of prose folded to `width` (None: as they are); a folded line continues indented
    two spaces more than it starts, so a reader sees where it goes on."""
    import textwrap

    if not width:
        return text
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[:len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, width, initial_indent="", subsequent_indent=lead + indent + "  ",
                             break_long_words=True, break_on_hyphens=False, drop_whitespace=True) or [""]
    return "\n".join(out)


def table(frame: pd.DataFrame, headers: dict | None = None, title: str = "", width: int | None = None,
          drop: tuple = ()) -> str:
    """A plain aligned text table: text left, numbers right. Every cell is shown with
    escape.terminal: a file or process name cannot break the table or drive the terminal.

    width: the terminal's columns (None: no limit). A wider table first loses the columns of
    `drop`, in that order, only as many as needed (the title says which, and that --wide shows
    them), then wraps its widest text column inside its cells; a line still too long (one
    enormous cell) is folded. drop names a column by its name without its unit ("p50")."""
    from iowitness.escape import terminal

    headers = headers or {}
    if frame.empty:
        return wrap(f"{title}: none", width)
    cols = list(frame.columns)
    identifiers = {"tgid", "tid", "pid", "fd", "dev", "ino"}
    body = [[f"{v:,}" if isinstance(v, int) and c not in identifiers else terminal(v) for c, v in zip(cols, row)]
            for row in frame.itertuples(index=False)]
    shown = [terminal(headers.get(c, c)) for c in cols]
    numeric = [_is_number_column(frame, c, [r[i] for r in body]) or c.endswith("_us") or "bytes" in c
               for i, c in enumerate(cols)]

    def widths_of(keep):
        return [max(len(shown[i]), *(len(r[i]) for r in body)) for i in keep]

    # the widest text column wraps inside its cells, down to WRAP_MIN characters, before any
    # column is left out (a wrapped note is still read, a left-out column is not), then further
    # down to WRAP_MIN_LAST when every column of `drop` is out and it is still too wide
    keep = list(range(len(cols)))
    full = widths_of(keep)
    text_cols = [i for i in keep if not numeric[i]]
    wrap_col = max(text_cols, key=lambda i: full[i]) if text_cols else None

    def least(keep):
        return [min(w, WRAP_MIN) if i == wrap_col else w for i, w in zip(keep, widths_of(keep))]

    hidden = []
    for name in drop if width else ():
        if _fits(least(keep)) <= width:
            break
        found = _drop_first([cols[i] for i in keep], name)
        if found is not None and cols.index(found) != wrap_col:
            keep.remove(cols.index(found))
            hidden.append(found)
    widths = widths_of(keep)
    wrapped = {}
    if width and _fits(widths) > width and wrap_col in keep:
        k = keep.index(wrap_col)
        widths[k] = max(min(WRAP_MIN_LAST, widths[k]), widths[k] - (_fits(widths) - width))
        wrapped[k] = widths[k]
    out = []
    if title:
        note = (f" ({len(hidden)} column{'s' if len(hidden) > 1 else ''} left out to fit {width} columns: "
                f"{', '.join(hidden)}; --wide shows all)") if hidden else ""
        out.append(wrap(title + note, width))
    import textwrap

    for r in [shown, *body]:
        cells = [r[i] for i in keep]
        lines = [[c] for c in cells]
        for k, w in wrapped.items():
            lines[k] = textwrap.wrap(cells[k], w, break_long_words=True, break_on_hyphens=False) or [""]
        for n in range(max(len(x) for x in lines)):
            parts = [(x[n] if n < len(x) else "") for x in lines]
            line = "  ".join(v.rjust(w) if numeric[keep[k]] else v.ljust(w)
                             for k, (v, w) in enumerate(zip(parts, widths))).rstrip()
            while width and len(line) > width:   # one cell longer than the screen: folded, not cut
                out.append(line[:width])
                line = "  " + line[width:]
            out.append(line)
    return "\n".join(out)


def rate(bytes_per_second) -> str:
    if bytes_per_second is None or bytes_per_second != bytes_per_second:
        return "-"
    return bytes_(bytes_per_second) + "/s"


def scale_of(largest: float) -> tuple[float, str]:
    """The binary unit an axis of byte amounts up to `largest` reads best in: (divisor, name)."""
    divisor, name = 1.0, "B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        if abs(largest) < KIB * divisor:
            break
        divisor, name = divisor * KIB, unit
    return divisor, name


def latency(us: float) -> str:
    """A latency with its unit, for a value standing alone (axis ticks, labels, sentences):
    850 µs, 12.0 ms, 1.20 s."""
    if us != us:
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms" if us < 1e4 else f"{us / 1e3:.1f} ms"
    return f"{us:.1f} µs" if us >= 10 else f"{us:.2f} µs"


# ---- columns: one unit per column, said once in its header ----------------------------------
#
# A column of a table holds numbers in one unit, chosen from the column's typical (median)
# value, and its header says which: "p99 ms", "bytes MiB", "wall MiB/s". Sizes and rates are
# binary (KiB = 1024 B) everywhere iowitness chooses the unit; a benchmark's own decimal unit
# (dd's MB = 10^6 B) is shown only next to its claim, and says so (claim_unit_note).

TIME_UNITS_US = (("µs", 1.0), ("ms", 1e3), ("s", 1e6))          # latency columns, from µs
BINARY_UNITS = (("B", 1), ("KiB", KIB), ("MiB", KIB ** 2), ("GiB", KIB ** 3), ("TiB", KIB ** 4))


def number(value: float) -> str:
    """A number in a unit already chosen: whole values and large ones without decimals and
    with thousands separators (16,384), small ones with two or three significant digits."""
    if value != value:
        return "-"
    v = abs(value)
    if v >= 100 or abs(value - round(value)) < 1e-9 * max(1.0, v):   # 20 µs, not 19.999999 shown as "20.0"
        return f"{value:,.0f}"
    if v >= 10:
        return f"{value:.1f}"
    if v >= 0.01:
        return f"{value:.2f}"
    return "0" if v == 0 else f"{value:.1g}" if v >= 1e-4 else "<0.0001"


def _typical(values) -> float:
    """The median of a column's finite, non-zero values (0 when it has none)."""
    found = sorted(abs(float(v)) for v in values if v is not None and v == v and v != 0)
    return found[len(found) // 2] if found else 0.0


def column_unit(values, kind: str) -> tuple[str, float]:
    """(unit name, divisor) a column of `kind` reads best in: the largest unit its median
    value is at least 1 of. kind: "bytes" (B), "rate" (B/s), "latency" (µs), "seconds" (s)."""
    typical = _typical(values)
    if kind in ("bytes", "rate"):
        name, divisor = BINARY_UNITS[0]
        for unit, size in BINARY_UNITS:
            if typical >= size:
                name, divisor = unit, size
        return (name + "/s" if kind == "rate" else name), float(divisor)
    scale = TIME_UNITS_US if kind == "latency" else tuple((n, d / 1e6) for n, d in TIME_UNITS_US)
    name, divisor = scale[0]
    for unit, size in scale:
        if typical >= size:
            name, divisor = unit, size
    return name, float(divisor)


def column(values, kind: str, blank_zero: bool = False) -> tuple[str, list[str]]:
    """A column's unit and its cells in that unit: ("MiB", ["32", "0.50", "-"]). NaN shows as
    "-"; with blank_zero, 0 shows as "" (a phase with no fsync has no fsync time)."""
    values = list(values)
    unit, divisor = column_unit(values, kind)
    cells = []
    for v in values:
        if v is None or v != v:
            cells.append("-")
        elif blank_zero and not v:
            cells.append("")
        else:
            cells.append(number(float(v) / divisor))
    return unit, cells


def with_unit(name: str, unit: str) -> str:
    """A column header with its unit said once: "p99" + "ms" -> "p99 ms"."""
    return f"{name} {unit}"


def unit_worth(unit: str, ratio: float) -> float:
    """Bytes one `unit` ("kB/s", "MB/s") is worth, given the ratio the benchmark's own figures
    imply (bytes over printed value): its decimal or its binary meaning, whichever is nearer,
    exactly (a printed value is rounded: dd's "156 MB/s" of 155.6 MB/s implies 997,472 B per MB).
    `ratio` itself for a unit that names no multiple of a byte."""
    prefix = unit.split("/")[0]
    size = BYTE_UNITS.get(prefix)
    if not size or size == 1 or not ratio or ratio != ratio:
        return ratio
    power = round(math.log(size, 1024 if "i" in prefix else 1000))
    return min((1000 ** power, 1024 ** power), key=lambda c: abs(math.log(ratio / c)))


def claim_unit_note(unit: str, factor: float) -> str:
    """What a benchmark's own byte unit means, where people could read it two ways: "kB = 1,024 B"
    (IOzone), "MB = 10^6 B" (dd). Empty for an IEC binary unit (MiB means one thing), for bytes,
    and for units that count no bytes (ops/s, us/op).

    unit: as the benchmark printed it ("kB/s"); factor: bytes per one of that unit."""
    prefix = unit.split("/")[0]
    if prefix not in BYTE_UNITS or prefix in ("B", "bytes") or "i" in prefix or not factor:
        return ""
    power = math.log10(factor)
    if factor >= 1000 and abs(power - round(power)) < 1e-9:
        return f"{prefix} = 10^{round(power)} B"
    return f"{prefix} = {factor:,.0f} B"
