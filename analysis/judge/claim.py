"""Claims: the numbers a benchmark printed about itself, and what each is about.

A benchmark module (analysis/benchmarks/) turns a benchmark's output into a list of Claim, with
units made explicit, and says which phases of a trace each claim is about with a Match.
analysis/judge/match_claims.py judges the matches (analysis/judge/verdict_rules.py holds the rules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import pandas as pd


class UnparsableOutput(ValueError):
    """The output is not what the adapter expects: the message names what was expected."""


@dataclass
class Claim:
    source: str                      # the benchmark module's NAME: "iozone" | "fio" | "dd" | "spec"
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
    printed_ns: int | None = None    # when its line was written (trace clock), from the output timeline
                                     # (analysis/judge/claim_windows.py); None: unknown, matched by order
    extra: dict = field(default_factory=dict)


@dataclass
class Match:
    """What one claim is about, as its benchmark module found it in the report."""
    rows: pd.DataFrame               # its phases: one, the members of a group, or none found
    group: object = None             # the group table's row, when the claim is about concurrent phases
    stonewall: object = None         # where the benchmark stopped counting (analysis/measure/stonewall.py)
    combine: str = "sum"             # "sum": the phases' figures add up; "span": one figure over their span
    notes: list = field(default_factory=list)  # evidence the module found, ranked after the judge's own
    last_ns: int | None = None       # the end of a group's last call, when a member that moved no data made it
    bytes: int | None = None         # bytes the benchmark says it moved, when the claim's extra does not say
    parent_start_ns: int | None = None  # where a group's parent starts its clock, when not at the first data call
    # where the benchmark starts counting, when after the phases' first data call, and why (fio's ramp_time)
    start_ns: int | None = None
    start_why: str = ""
    # the benchmark's own judgement, (window, tolerance, missing) -> Verdict, in place of
    # verdicts.judge (IOzone's per-process statistics); it then gets no generic notes
    judge: Callable | None = None
    # the benchmark's second look at a verdict verdicts.judge gave, (verdict, rows, tolerance) -> None:
    # what the calls around the phase bound of its clock (IOzone's single run: iozone_bounds.refine)
    refine: Callable | None = None
