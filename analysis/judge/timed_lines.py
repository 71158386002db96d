"""A rate whose spec says on which output lines the benchmark's clock starts and stops
(`timing_line` and `timing_end_line`): judged over the time between those two lines, not only
over its calls' span.

dbench 4.0 prints "releasing clients", then reads its clock and lets its clients go; every
second its alarm handler reads the clock again and prints the bytes since over the time since
(dbench.c; docs/specs/dbench.toml). So its clock runs from just after the first line's write to
just before the "execute" line's. The calls window (first data call's start to the last one's
end) is shorter whenever no data call runs at an edge: a client let go late, or a client inside
a Flush (an fsync, no data call) when the alarm rings. Beside two CPU hogs a client sat 353 ms
in one Flush before the first "execute" line: its 23.44 MB/sec was 0.70x the calls' figure, a
false DISAGREES, though the bytes over the time between the two lines gave 23.44 exactly.

When both lines are placed on the output timeline and the claim is a run-wide total (scope
"run": a test's own figure may be timed from some point after its timing_line, hdparm -t's
after a flush and a wait), the claim's calls (started after the timing
line, ended by the end line: match_claims' timed rows) over the time between the two lines are
the figure of the period the spec names ("lines"). A claim within the tolerance of it AGREES;
one between it and the calls' figure is EXPLAINED (the clock ran at least over the calls, at
most between the lines: a clock read some time after the first line's write, or before the
last one's); one outside both keeps its verdict, its reasons naming this figure too.

    apply(verdict, rows, low, high, tolerance)   # low, high: the two lines' times (trace clock)
"""

from __future__ import annotations

import pandas as pd

from iowitness import units
from iowitness.analysis.judge import claim_windows
from iowitness.analysis.judge.verdict_rules import Verdict, claimed
from iowitness.analysis.measure.figures import amount_of, fmt
from iowitness.analysis.phasing import operations

NAME = "lines"


def figure(verdict: Verdict, rows: pd.DataFrame, low: int, high: int) -> float | None:
    """The claim's amount over the seconds from `low` to `high`, or None when there is none."""
    if high <= low or not len(rows):
        return None
    timed = verdict.claim.extra.get("timed") if verdict.kind == "ops" else None
    counted = operations.per_operation(rows, timed)
    amount = sum(amount_of(r, verdict.claim.direction, verdict.kind) for r in counted.itertuples())
    return float(amount) / ((high - low) / 1e9) if amount else None


def apply(verdict: Verdict, rows: pd.DataFrame, low: int | None, high: int | None, tolerance: float) -> None:
    """Judge a rate between its timing_line and its timing_end_line (both placed) when its calls'
    window does not agree with it."""
    extra = verdict.claim.extra
    if low is None or high is None or verdict.kind not in ("bytes", "ops") or verdict.verdict == "agrees":
        return
    if not (extra.get("timing_line") and extra.get("timing_end_line")) or extra.get("skip"):
        return   # the period starts at a line only when its timing_line says so, and no skip moves it
    if claim_windows.states_seconds(verdict.claim):
        return   # its end line states how long it was: stated_period.py judges it
    if extra.get("scope") != "run":
        # a run-wide total (dbench's): a test's own figure may be timed from a point after its
        # timing_line (hdparm -t flushes and waits first), which only its calls bound
        return
    value, _ = claimed(verdict.claim)
    between = figure(verdict, rows, low, high)
    if not value or between is None:
        return
    kind, calls = verdict.kind, verdict.figures.get(verdict.window)
    verdict.figures[NAME] = between
    span = (f"the time between its timing_line and its timing_end_line ({units.seconds((high - low) / 1e9)}), "
            f"which the spec says its clock ran over")
    if abs(value / between - 1) <= tolerance:
        reason = (f"timed between its lines: claim {fmt(value, kind)}, the calls' amount over {span}: "
                  f"{fmt(between, kind)} ({value / between:.2f}x); the calls themselves span less "
                  f"({verdict.window} {fmt(calls, kind) if calls else '-'}): time at the edges in no data call "
                  "(a client let go late, or inside a flush when the clock was read)")
        verdict.verdict, verdict.window, verdict.ratio = "agrees", NAME, value / between
        verdict.reasons[:1] = [reason]
    elif calls and between * (1 - tolerance) <= value <= calls * (1 + tolerance):
        reason = (f"clock between its lines and its calls: claim {fmt(value, kind)} lies between the calls' "
                  f"amount over {span}, {fmt(between, kind)}, and over their own span, {fmt(calls, kind)}: "
                  "its clock ran at least over the calls and at most between the lines")
        verdict.verdict = "explained"
        verdict.reasons[:1] = [reason]
    else:
        verdict.reasons.append(f"over {span}: {fmt(between, kind)}, and the claim is outside it too")
