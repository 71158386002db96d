"""A claim that fits the time from a phase's open of its file to its close: the benchmark's
clock ran from before it opened the file to after it closed it.

fio is one: a job's runtime starts before the job opens its file and lays it out or drops its
cached pages (invalidate=1, fio's default: posix_fadvise(POSIX_FADV_DONTNEED), a call of its
own in the trace, not a data call, which may take longer than the reads that follow), and ends
after its close.
A read job after `stonewall` on the file a write job just wrote reads 64 MiB in 83 ms of calls,
yet fio counts 92 ms: its open was 8.8 ms before its first read. The window figures (calls,
+fsync, +close) all start at the first data call; this one starts at the phase's first call
(its open) and ends at the end of the close after its last data call.

Only a claim that disagrees is looked at: when that window's figure fits it within the
tolerance, it is explained, first reason the window and its figure. A phase with nothing
before its first data call, or no close after its last, has no such window.

Example: `apply(verdicts, report.phases, 0.05)` after matching.
"""

from __future__ import annotations

import pandas as pd

from iowitness import units
from iowitness.analysis.judge.verdict_rules import Verdict, claimed
from iowitness.analysis.measure.figures import amount_of, fmt


def figure(rows: pd.DataFrame, direction: str | None, kind: str) -> tuple[float, float] | None:
    """(the claim's amount over the longest open-to-close time of its phases, that time in s),
    or None when a phase has no open before its data or no close after it."""
    if not len(rows):
        return None
    first, start = rows["first_ns"].to_numpy(), rows["data_first_ns"].to_numpy()
    close, last = rows["close_end_ns"].fillna(0).to_numpy(), rows["data_last_ns"].to_numpy()
    if (first >= start).any() or (close <= last).any():
        return None
    longest = float((close - first).max()) / 1e9
    amount = sum(amount_of(r, direction, kind) for r in rows.itertuples())
    return (amount / longest, longest) if longest > 0 else None


def apply(verdicts: list[Verdict], phases: pd.DataFrame, tolerance: float) -> None:
    """Each disagreeing rate claim that fits its phases' open-to-close window: explained."""
    by_phase = phases.set_index("phase", drop=False)
    for verdict in verdicts:
        value, kind = claimed(verdict.claim)
        if verdict.verdict != "disagrees" or kind not in ("bytes", "ops") or not value or not verdict.phases:
            continue
        if any(p not in by_phase.index for p in verdict.phases):
            continue
        found = figure(by_phase.loc[verdict.phases], verdict.claim.direction, kind)
        if found is None or abs(value / found[0] - 1) > tolerance:
            continue
        active, seconds = found
        verdict.verdict = "explained"
        verdict.figures["open to close"] = active
        verdict.reasons.insert(0, f"the benchmark's clock ran from its open of the file to its close: over those "
                                  f"{units.seconds(seconds)} the figure is {fmt(active, kind)}, within "
                                  f"{abs(value / active - 1):.1%} of the claim (the open came "
                                  f"{units.seconds(_before(by_phase.loc[verdict.phases]))} before the first data "
                                  "call: set-up the benchmark timed, such as fio's cache invalidation)")


def _before(rows: pd.DataFrame) -> float:
    return float((rows["data_first_ns"] - rows["first_ns"]).max()) / 1e9
