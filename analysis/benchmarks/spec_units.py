"""The numbers and units a claims spec reads (analysis/benchmarks/spec.py): its units, a
number's multiplier suffix, a record size, and a hint for a unit that is almost one.

Example: `number("12.8k")` is 12800.0, `number("4K", 1024)` 4096.0, `size("64KiB")` 65536.
"""

from __future__ import annotations

import re

# The units a spec may name: (Claim field, factor to bytes/s, ops/s, s/op or seconds).
# SI prefixes are powers of 1000 (SI Brochure, 9th edition, table 7: k = 10^3, M = 10^6,
# G = 10^9); binary prefixes powers of 1024 (IEC 80000-13: Ki = 2^10, Mi = 2^20, Gi = 2^30).
# A program that divides by 1048576 prints MiB/s, whatever its label says: docs/claims-spec.md.
UNITS = {
    "B/s": ("bytes_per_s", 1),
    "kB/s": ("bytes_per_s", 1000), "MB/s": ("bytes_per_s", 1000 ** 2), "GB/s": ("bytes_per_s", 1000 ** 3),
    "KiB/s": ("bytes_per_s", 1024), "MiB/s": ("bytes_per_s", 1024 ** 2), "GiB/s": ("bytes_per_s", 1024 ** 3),
    "ops/s": ("ops_per_s", 1),
    "ns/op": ("seconds_per_op", 1e-9), "us/op": ("seconds_per_op", 1e-6), "µs/op": ("seconds_per_op", 1e-6),
    "ms/op": ("seconds_per_op", 1e-3), "s/op": ("seconds_per_op", 1),
    # a time per operation printed without "/op" (a latency line, "avg 12.3 us"): the same
    "ns": ("seconds_per_op", 1e-9), "us": ("seconds_per_op", 1e-6), "µs": ("seconds_per_op", 1e-6),
    "ms": ("seconds_per_op", 1e-3),
    "s": ("seconds", 1),  # a test's elapsed time: extra["seconds"]
}
# a number's multiplier suffix ("12.8k", "146 K"): decimal by default; [benchmark]
# multipliers = "binary" makes them powers of 1024. "m" is mega, as in "1.2m iops": a
# benchmark that means milli says so in its unit (ms/op)
MULTIPLIERS = {"": 0, "k": 1, "K": 1, "m": 2, "M": 2, "g": 3, "G": 3}
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([kKmMgG]?)\s*$")
# a record size: bytes, or with a binary suffix (4k, 64K, 1M, 4KiB); "kB"/"MB" are decimal
_SIZE = re.compile(r"^\s*(\d+)\s*(|[kKmMgG]|KiB|MiB|GiB|kB|KB|MB|GB)\s*$")
SIZE_FACTORS = {"": 1, "k": 1024, "K": 1024, "KiB": 1024, "m": 1024 ** 2, "M": 1024 ** 2, "MiB": 1024 ** 2,
                "g": 1024 ** 3, "G": 1024 ** 3, "GiB": 1024 ** 3, "kB": 1000, "KB": 1000, "MB": 1000 ** 2,
                "GB": 1000 ** 3}


def near(unit: str) -> str:
    """A hint for a unit that is almost one: 'MB' -> MB/s, 'usec' -> us, 'IOPS' -> ops/s."""
    guesses = {"iops": "ops/s", "op/s": "ops/s", "usec": "us", "msec": "ms", "nsec": "ns", "sec": "s",
               "kb/s": "kB/s"}
    guess = unit + "/s" if unit + "/s" in UNITS else guesses.get(unit.lower())
    return f" (did you mean {guess!r}?)" if guess else ""


def size(text: str) -> int | None:
    """Bytes in a record size as a benchmark prints it: 4096, 4k, 64K, 1M, 4KiB, 8kB."""
    m = _SIZE.match(text)
    return int(m.group(1)) * SIZE_FACTORS[m.group(2)] if m else None


def number(text: str, base: int = 1000) -> float | None:
    """A printed number with its multiplier ("12.8k", "146 K", "1.5M"), or None."""
    m = _NUMBER.match(text or "")
    return float(m.group(1)) * base ** MULTIPLIERS[m.group(2)] if m else None
