"""Claims: the numbers a benchmark printed about itself, read from its own output.

Each adapter (iozone, fio, dd, spec) turns a benchmark's output into a list of Claim, with
units made explicit; nothing here looks at the trace. Matching claims to phases and judging
them is analysis/verdicts.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class UnparsableOutput(ValueError):
    """The output is not what the adapter expects: the message names what was expected."""


@dataclass
class Claim:
    source: str                      # "iozone" | "fio" | "dd" | "spec"
    test: str                        # the benchmark's name for the test: "write", "random read", "alpha read"
    value: float                     # the number as printed
    unit: str                        # as printed: "kB/s", "ops/s", "us/op", "MB/s", "KiB/s", "s"
    printed: str                     # the line it was read from
    bytes_per_s: float | None = None     # the claim in bytes per second, when it is a throughput
    ops_per_s: float | None = None       # ... in operations per second, when it is a rate of calls
    seconds_per_op: float | None = None  # ... in seconds per operation, when it is a latency
    scope: str = "phase"             # "phase", or for concurrent tests: "children", "parent",
                                     # "min process", "max process", "avg process", "min xfer"
    direction: str | None = None     # "read" | "write" | "mixed"
    file_size: int | None = None     # bytes
    record_size: int | None = None   # bytes
    job: str | None = None           # fio job (or group) name
    processes: int | None = None     # IOzone throughput mode: number of children
    index: int = 0                   # order of appearance in the output
    extra: dict = field(default_factory=dict)
