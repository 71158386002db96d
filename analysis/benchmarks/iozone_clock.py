"""IOzone's clock on a busy machine: a timed phase's claim set against the window the calls
around it bound, not against its calls' own span alone.

IOzone reads its clock after the call before its loop and again before the call after it
(iozone.c write_perf_test: `fsync(fd); ... starttime1 = time_so_far();`, the writes, with -e
the fsync and with -c the close, `writetime = (time_so_far() - starttime1) - time_res`, and
only then, without -e, the fsync and close that clean up; read_perf_test the same after its
lseek). So the window it timed holds the phase's calls and lies within the gap from the end of
the thread's call before them to the start of its call after them (iozone_bounds.py says the
same of a phase too short to time). On a quiet machine the two clock reads sit some µs from
the calls and the calls' own figure is the claim to within 0.01%. On a busy one the thread
may wait for a CPU at either edge: preempted at the return of the fsync before the loop (its
clock not read yet, or read and then the wait) or of the last write (its clock not read yet):
IOzone's window then holds milliseconds no call shows, and a rewrite of 64 MiB in 14 ms printed
7% below its calls' figure (two CPU hogs on two CPUs).

    refine(verdict, rows, bounds, tolerance)

For a verdict on one timed phase that disagrees (or that only the time inside the calls
explains): a claim within the bracket of its window (the calls, or with -e/-c up to the fsync
or close, at least; the gap between the calls around at most; with the tolerance) AGREES, its
first reason the bracket with its numbers; a window with the fsync or close that the claim
misses but whose calls' bracket holds it is EXPLAINED (that call was outside the timed
window). A claim outside every bracket still DISAGREES, the bracket added to its reason: no
window IOzone's clock could have run gives it (a doctored figure, or another cause).

A -N claim (microseconds per operation) is IOzone's window over its operations, so the time
between the calls is in it: its mean latency (the time inside the calls) is only the least it
can be. One that disagrees with the mean latency is set against the same bracket, per
operation, to its printed precision (-N prints whole microseconds, cut down): a rewrite whose
thread waited 8.2 ms for a CPU between its calls printed 16 us/op against 2.84 µs inside them
and 16.5 µs/op over their span (two CPU hogs).
"""

from __future__ import annotations

import pandas as pd

from iowitness import units
from iowitness.analysis.benchmarks.iozone_bounds import Bounds, _inner_end, figure_range, fits_bracket
from iowitness.analysis.judge import precision, verdict_rules as verdicts
from iowitness.analysis.judge.latency import ALLOWANCE_S
from iowitness.analysis.measure.figures import fmt
from iowitness.analysis.phasing import call_bounds

WINDOWS = ("calls", "+fsync", "+close")
_WHAT = {"+fsync": "fsync", "+close": "close"}


def bracket(row, bounds: Bounds, window: str, amount: float, kind: str = "bytes") -> tuple[float, float, str] | None:
    """(least, most, said) of a rate over `amount` (a time per operation when `kind` is
    "latency"): at least over the window's calls, at most over the gap between the calls
    around them; None when a side has no call in the trace."""
    before, before_name, after, after_name = bounds.around(int(row["phase"]), window, short_only=False)
    if before == call_bounds.NONE_BEFORE or after == call_bounds.NONE_AFTER:
        return None
    first, end = int(row["data_first_ns"]), _inner_end(row, window)
    inner_s = max((end - first) / 1e9 - ALLOWANCE_S, 1e-9)
    outer_s = (after - before) / 1e9 + ALLOWANCE_S
    lead, trail = max(first - before, 0) / 1e9, max(after - end, 0) / 1e9
    timed = {"+fsync": "its calls and the fsync after them", "+close": "its calls and the close after them"}.get(
        window, "its calls")
    said = (f"IOzone's clock ran at least over {timed} ({units.seconds(inner_s + ALLOWANCE_S)}) and at most from the "
            f"end of the {before_name} before ({units.seconds(lead)} before the first) to the start of the "
            f"{after_name} after ({units.seconds(trail)} after the last): {units.seconds(outer_s - ALLOWANCE_S)}")
    return (*figure_range(kind, amount, inner_s, outer_s), said)


def refine(verdict: verdicts.Verdict, rows: pd.DataFrame, bounds: Bounds, tolerance: float,
           timed: str = "calls") -> None:
    """The verdict on one timed IOzone phase, with the bracket the calls around it give (module
    doc); `timed`: IOzone's window (iozone.window), which a latency claim's verdict does not name."""
    by_busy = verdict.verdict == "explained" and verdict.reasons[0].startswith(verdicts.BUSY_EXPLAINED)
    per_operation = verdict.kind == "latency"
    window = timed if per_operation else verdict.window
    if (verdict.verdict != "disagrees" and not by_busy) or len(rows) != 1 or window not in WINDOWS \
            or verdict.kind not in ("bytes", "ops", "latency"):
        return
    row = rows.iloc[0]
    if bool(row["too_short"]):
        return
    value = verdicts.claimed(verdict.claim)[0]
    amount = float(row["bytes"]) if verdict.kind == "bytes" else float(row["ops"])
    if value is None or amount <= 0:
        return
    own = bracket(row, bounds, window, amount, verdict.kind)
    if own is None:
        return
    low, high, said = own
    verdict.figures.update({"bounded, least": low, "bounded, most": high})
    # a figure printed to few digits (-N's whole microseconds, cut down) is judged to them
    printed = precision.printed_span(verdict.claim, value, verdict.kind)
    if fits_bracket(value, low, high, tolerance, printed):
        verdict.verdict = "agrees"
        verdict.reasons.pop(0)   # "no active figure within ...", or the busy account: now told
        between = "the rest of the window is time between the calls (a wait for a CPU at a call's return, on a " \
                  "busy machine), which no call shows" if not per_operation else \
                  "IOzone's time per operation holds the time between its calls (its own loop, and a wait for a " \
                  "CPU on a busy machine), which the calls' mean latency leaves out"
        fits = precision.fit_words(value, low, high, printed, tolerance, verdict.kind)
        verdict.reasons.insert(0, f"{said}: {fmt(low, verdict.kind)} to {fmt(high, verdict.kind)}, and the claim "
                                  f"{fmt(value, verdict.kind)} {fits}: {between}")
        verdicts._note_window(rows, verdict.figures, window, verdict.kind, verdict.reasons)
        return
    calls = bracket(row, bounds, "calls", amount, verdict.kind) if window != "calls" else None
    if calls is not None and fits_bracket(value, calls[0], calls[1], tolerance, printed):
        what = _WHAT[window]
        verdict.verdict = "explained"
        verdict.reasons.pop(0)
        verdict.reasons.insert(0, f"{what} outside the timed window: the claim {fmt(value, verdict.kind)} misses the "
                                  f"window with the {what} ({fmt(low, verdict.kind)} to {fmt(high, verdict.kind)}) yet "
                                  f"fits its calls alone: {calls[2]}, {fmt(calls[0], verdict.kind)} to "
                                  f"{fmt(calls[1], verdict.kind)}")
        return
    if verdict.verdict == "disagrees":
        verdict.reasons.insert(1, f"{said}: {fmt(low, verdict.kind)} to {fmt(high, verdict.kind)}, and the claim "
                                  f"lies outside it by more than {tolerance:.0%}: no window IOzone's clock could have "
                                  "run between those calls gives it")
