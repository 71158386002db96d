"""Units and number formats for people: the one place they are defined."""

from __future__ import annotations

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
    if us != us:  # NaN
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e4:
        return f"{us / 1e3:.1f} ms"
    return f"{us:.1f}" if us >= 10 else f"{us:.2f}"


def seconds(s: float) -> str:
    if s != s:
        return "-"
    if s < 0.001:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.3f} s" if s < 100 else f"{s:.0f} s"


def table(frame: pd.DataFrame, headers: dict | None = None, title: str = "") -> str:
    """A plain aligned text table: text left, numbers right. Every cell is shown with
    escape.terminal: a file or process name cannot break the table or drive the terminal."""
    from iowitness.escape import terminal

    headers = headers or {}
    if frame.empty:
        return f"{title}: none"
    cols = list(frame.columns)
    cells = [[terminal(headers.get(c, c)) for c in cols]]
    identifiers = {"tgid", "tid", "pid", "fd", "dev", "ino"}
    for row in frame.itertuples(index=False):
        cells.append([f"{v:,}" if isinstance(v, int) and c not in identifiers else terminal(v)
                      for c, v in zip(cols, row)])
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    from pandas.api.types import is_numeric_dtype  # here: the collector imports this module without pandas

    numeric = [is_numeric_dtype(frame[c]) or c.endswith("_us") or "bytes" in c for c in cols]
    out = [title] if title else []
    for r in cells:
        out.append("  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(r, widths, numeric)).rstrip())
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
    """A latency with its unit, for axis ticks and labels: 850 µs, 12.0 ms, 1.20 s."""
    text = micros(us)
    return text if text.endswith("s") or text == "-" else f"{text} µs"
