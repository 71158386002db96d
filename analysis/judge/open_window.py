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

fio's verify pass is timed the same from its open (and its cache invalidation: 1.6 ms of
posix_fadvise on the 8 MiB it just wrote) but only to its last read: it then writes its verify
state and closes the file, outside its runtime (`--rw=randwrite --verify=crc32c`: reads of
11.5 ms, fio's 14 ms runtime; from the open to the last read 13.1 ms, rounded up).

A benchmark whose module says where its clock sits around its calls (extra `clock_edges`:
dd's starts after its output's open, dup2 and close of the first fd, coreutils dd.c) is left to
judge/rate_edges.py: from the open, this window would count a wait before its clock started.

Only a claim that disagrees, or that a phase too short to tell why left unjudged, is looked
at: when a window's figure fits it within the tolerance,
or to the benchmark's clock tick (fio's whole milliseconds, judge/clock_tick.py), it is
explained, first reason the window and its figure. A phase with nothing
before its first data call, or no close after its last, has no such window.

Example: `apply(verdicts, report.phases, 0.05)` after matching.
"""

from __future__ import annotations

import pandas as pd

from iowitness import units
from iowitness.analysis.judge import clock_tick
from iowitness.analysis.judge.verdict_rules import Verdict, claimed
from iowitness.analysis.measure.figures import amount_of, fmt


def figure(rows: pd.DataFrame, direction: str | None, kind: str,
           to_close: bool = True) -> tuple[float, float] | None:
    """(the claim's amount over the longest open-to-close time of its phases, that time in s),
    or None when a phase has no open before its data or no close after it. `to_close` False:
    open to the end of its last data call (fio's verify pass: its clock stops after its last
    read, before it writes its verify state and closes the file)."""
    if not len(rows):
        return None
    first, start = rows["first_ns"].to_numpy(), rows["data_first_ns"].to_numpy()
    close, last = rows["close_end_ns"].fillna(0).to_numpy(), rows["data_last_ns"].to_numpy()
    if (first >= start).any() or (to_close and (close <= last).any()):
        return None
    longest = float(((close if to_close else last) - first).max()) / 1e9
    amount = sum(amount_of(r, direction, kind) for r in rows.itertuples())
    return (amount / longest, longest) if longest > 0 else None


def apply(verdicts: list[Verdict], phases: pd.DataFrame, tolerance: float) -> None:
    """Each disagreeing rate claim that fits its phases' open-to-close window, or their open to
    their last data call, within the tolerance or to the benchmark's clock tick: explained."""
    by_phase = phases.set_index("phase", drop=False)
    for verdict in verdicts:
        value, kind = claimed(verdict.claim)
        # a phase "too short to tell why" is told why when a window covers it (as clock_tick does)
        too_short = verdict.verdict == "cannot judge" and bool(verdict.reasons) and \
            verdict.reasons[0].endswith(clock_tick.TOO_SHORT)
        if not (verdict.verdict == "disagrees" or too_short) or kind not in ("bytes", "ops") or not value or \
                not verdict.phases or "clock_edges" in verdict.claim.extra:
            continue
        if any(p not in by_phase.index for p in verdict.phases):
            continue
        rows = by_phase.loc[verdict.phases]
        for to_close in (True, False):
            found = figure(rows, verdict.claim.direction, kind, to_close)
            if found is None:
                continue
            active, seconds = found
            near = abs(value / active - 1) <= tolerance
            # the elapsed time the claim implies: the same amount over the claimed rate
            ticked = not near and bool(verdict.claim.extra.get("clock_s")) and \
                clock_tick.fits(seconds * active / value, seconds, verdict.claim.extra, tolerance)
            if near or ticked:
                if too_short:
                    verdict.reasons.pop(0)
                _explain(verdict, rows, kind, value, active, seconds, to_close, ticked)
                break


def _explain(verdict: Verdict, rows: pd.DataFrame, kind: str, value: float, active: float, seconds: float,
             to_close: bool, ticked: bool) -> None:
    end = "its close" if to_close else "its last data call"
    verdict.verdict = "explained"
    verdict.figures["open to close" if to_close else "open to last call"] = active
    fit = (f"which the claim's {units.seconds(seconds * active / value)} gives to its clock's tick "
           f"({verdict.claim.extra.get('clock_said', clock_tick.SPEC_SAID)})" if ticked
           else f"within {abs(value / active - 1):.1%} of the claim")
    verdict.reasons.insert(0, f"the benchmark's clock ran from its open of the file to {end}: over those "
                              f"{units.seconds(seconds)} the figure is {fmt(active, kind)}, {fit} (the open came "
                              f"{units.seconds(_before(rows))} before the first data "
                              "call: set-up the benchmark timed, such as fio's cache invalidation)")


def _before(rows: pd.DataFrame) -> float:
    return float((rows["data_first_ns"] - rows["first_ns"]).max()) / 1e9
