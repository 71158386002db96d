"""A rate whose end line states how long its period was ("execute 4 sec": the bytes of the
last 4 s up to this line): judged over every period that number allows, to its printed
precision, not from a line the benchmark printed before.

dbench 4.0 resets its statistics at a silent alarm -t/5 whole seconds after "releasing
clients" (dbench.c, sig_alarm: tv_start = now, bytes_done_warmup = bytes, nothing printed); its
"execute T sec" lines and its "Throughput" are over the time since that reset, T printed to
whole seconds ("%3.0f"). A spec whose timing_end_line has a group named `seconds` says so
(claim_windows.stated_period): the period starts T before the line, T within half its last
printed digit (3.5 to 4.5 s for "4"), and never before the spec's timing_line. Beside two CPU
hogs the alarms come late and the first seconds' rate differs from the later ones', so a
window started at "releasing clients" gave a false DISAGREES (1.08x on "execute 1 sec", 3 of 3
runs of dbench -t 5).

The figure of a start s is the bytes (or calls) of the claim's phases that started at s or
later and ended by the line, over the time from s to the line. A claim within the tolerance of
that figure for some s the printed seconds allow AGREES; one outside every such figure keeps its
verdict, its reasons naming the range.

    apply(verdict, report, phases, period, tolerance)
"""

from __future__ import annotations

import numpy as np

from iowitness.analysis.judge.claim_windows import StatedPeriod
from iowitness.analysis.judge.verdict_rules import Verdict, claimed
from iowitness.analysis.measure.figures import fmt
from iowitness.analysis.phasing import phases as phase_module

NAME = "stated period"


def figure_range(starts: np.ndarray, moved: np.ndarray, earliest: int, latest: int,
                 end: int) -> tuple[float, float] | None:
    """The least and most amount per second over a period from a start s in [earliest, latest]
    to `end`, counting what the calls that started at s or later moved (every call ended by
    `end`); None when there is no such period."""
    if latest <= earliest or end <= latest:
        return None
    order = np.argsort(starts)
    starts, moved = starts[order].astype(np.int64), moved[order].astype(np.float64)
    after = np.concatenate([np.cumsum(moved[::-1])[::-1], [0.0]])   # after[i]: moved by calls i..
    # the figure rises as s moves on between two calls' starts and drops at each start passed:
    # its extremes are at the bracket's edges and at each start inside it, with that call (s at
    # its start) and without it (s just after, not past the latest start)
    edges = [after[np.searchsorted(starts, earliest, side="left")] / (end - earliest),
             after[np.searchsorted(starts, latest, side="left")] / (end - latest)]
    with_it = np.flatnonzero((starts >= earliest) & (starts <= latest))
    without_it = np.flatnonzero((starts >= earliest) & (starts < latest))
    figures = np.concatenate([np.asarray(edges), after[with_it] / (end - starts[with_it]),
                              after[without_it + 1] / (end - starts[without_it])]) * 1e9
    return float(figures.min()), float(figures.max())


def _moved(verdict: Verdict, report, phases: list[int], earliest: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, amount) of each counted data call of `phases` in the claim's direction that
    started at `earliest` or later and ended by `end`."""
    events, assigned = report.evidence.calls_of(phases, ["start_ns", "end_ns", "ret"])
    kind = phase_module.call_kinds(events["syscall"])
    direction = verdict.claim.direction
    wanted = (phase_module.READ,) if direction == "read" else (phase_module.WRITE,) if direction == "write" else \
        (phase_module.READ, phase_module.WRITE)
    start, stop = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64)
    mine = np.isin(kind, wanted) & ~phase_module.uncounted(assigned) & (start >= earliest) & (stop <= end)
    amount = np.ones(int(mine.sum())) if verdict.kind == "ops" else \
        np.maximum(events["ret"].to_numpy(np.int64)[mine], 0).astype(np.float64)
    return start[mine], amount


def apply(verdict: Verdict, report, phases: list[int], period: StatedPeriod | None, tolerance: float) -> None:
    """Judge a rate over the periods its end line's printed seconds allow, when its calls'
    window does not agree with it."""
    if period is None or verdict.verdict == "agrees" or verdict.kind not in ("bytes", "ops") or not phases:
        return
    if verdict.kind == "ops" and verdict.claim.extra.get("timed") not in (None, "call"):
        return   # operations of several calls: their starts are not one call's
    value, kind = claimed(verdict.claim)
    if not value:
        return
    starts, amounts = _moved(verdict, report, phases, period.earliest_ns, period.end_ns)
    found = figure_range(starts, amounts, period.earliest_ns, period.latest_ns, period.end_ns)
    if found is None:
        return
    least, most = found
    span = (f"over the last {period.printed} s up to the line {period.line[:60]!r} "
            f"({(period.end_ns - period.latest_ns) / 1e9:.3f} to {(period.end_ns - period.earliest_ns) / 1e9:.3f} s, "
            "its printed precision)")
    verdict.figures[NAME] = (least + most) / 2
    if least * (1 - tolerance) <= value <= most * (1 + tolerance):
        verdict.reasons[:1] = [f"timed over the period its line states: claim {fmt(value, kind)}, the calls' amount "
                               f"{span}: {fmt(least, kind)} to {fmt(most, kind)}"]
        verdict.verdict, verdict.window = "agrees", NAME
        verdict.ratio = value / min(max(value, least), most)
    else:
        verdict.reasons.append(f"{span}: {fmt(least, kind)} to {fmt(most, kind)}, and the claim is outside it too")
