"""The seam between a benchmark's clock and its calls: time no probe sees, per call.

A benchmark that times one call reads its clock just before and just after it. Between those
reads and the call's traced span lie the kernel's syscall entry and exit paths, iowitness's own
entry and exit programs (they run outside the span they time) and the benchmark's own
bookkeeping: the "gap in user space" around each call. A latency claim a few microseconds above
the trace's figure for calls of a few microseconds is that seam, not a wrong figure; the trace
cannot tell how much of it the benchmark took in, so such a claim CANNOT be judged, with the
reason named, never DISAGREES.

Measured (ioping 1.3, `ioping -c 20 -i 0.01 -C .`, cached 4 KiB preads on ext4, this 2-vCPU VM):
untraced it printed avg 5.46 µs; traced, avg 10.2 µs while the trace's calls took 6.41 µs: a
seam of 3.8 µs per call, 4.7 µs of it added by tracing. SEAM_S bounds it.

The slowest operation (a `max` claim) can also hold time between calls: a preemption, or
a page fault between a clock read and the call. A max above the largest call and below the
largest start-to-next-start interval cannot be judged either (bonnie++'s per-char latency).

Per-request lines (ioping's `request=k time=...`) carry the seam of every call, so it is
measured from the run, not bounded by SEAM_S: ioping times `now(); pread(); now()` (ioping.c,
its request loop), so each printed time is its call's traced span plus the seam, which has a
sign (a clock around a call only adds) and a bound per call (the clock reads lie after the
previous call's end and before the next call's start: the "room"). Lines each above their
own call and within its room are the seam (CANNOT JUDGE, with the run's median seam named);
one line below its call or beyond its room is a figure no clock around that call could read
(DISAGREES). Measured, ioping -c 20 -i 0.01 traced on this 2-vCPU VM: median seams of 2.2 to
3.3 µs per run, up to 6-7 µs on the CI machine's runs; under two CPU hogs one or two of 19
requests preempted between clock read and call, 100-130 µs above it (rooms of about 20 ms).
"""

from __future__ import annotations

import numpy as np

from iowitness.analysis.measure.figures import fmt

# the most a benchmark's clock may take in around one call, outside the call's traced span
SEAM_S = 5e-6
# the most a mean may take in of the benchmark's own work between its calls (dbench 4.0's
# WriteX/ReadX: 6-7 µs per call above the trace's mean, its loadfile's work timed with the call),
# and only when the time from each call's start to the next holds it
BETWEEN_MOST_S = 20e-6


def reason(value: float, active: float, statistic: str, operations: int) -> str | None:
    """Why a latency claim above the trace's figure by at most SEAM_S cannot be judged, or None."""
    excess = value - active
    if not (0 < excess <= SEAM_S) or not operations:
        return None
    return (f"gap in user space: the claim is {fmt(excess, 'latency')} above the trace's {statistic} "
            f"({fmt(value, 'latency')} vs {fmt(active, 'latency')}), within the {SEAM_S * 1e6:g} µs per call that "
            "lie between a benchmark's clock and the call's traced span (the syscall's entry and exit, "
            "iowitness's own programs, the benchmark's clock reads): the trace cannot tell how much of it the "
            "benchmark took in")


def held(value: float, active: float, intervals: np.ndarray, statistic: str) -> str | None:
    """Why a max or mean claim above the calls' figure, and within the same figure of the times
    from a call's start to the next call's, cannot be judged, or None: the benchmark's clock
    may hold time between its calls. A max may hold any of it (bonnie++'s per-char latency:
    a preemption, a page fault between a clock read and the call); a mean at most
    BETWEEN_MOST_S per call (dbench's own work timed with each call)."""
    if statistic not in ("max", "mean") or not len(intervals) or value <= active:
        return None
    if statistic == "mean" and value - active > BETWEEN_MOST_S:
        return None
    bound = float(np.max(intervals) if statistic == "max" else np.mean(intervals))
    if value > bound:
        return None
    calls, spaced = (("the slowest call", "the longest") if statistic == "max" else ("the calls' mean", "the mean"))
    return (f"gap in user space: the claimed {statistic} {fmt(value, 'latency')} is {fmt(value - active, 'latency')} "
            f"above {calls} ({fmt(active, 'latency')}) and within {spaced} time from a call's start to the next "
            f"call's ({fmt(bound, 'latency')}): the benchmark's clock may hold time between its calls (its own work, "
            "a page fault, a preemption), which no probe of calls sees")


def unexplained(claimed_s: np.ndarray, active: np.ndarray, rooms: np.ndarray, tolerance: float,
                allowance: float) -> np.ndarray:
    """Which per-request lines no gap in user space can explain: below their own call (a clock
    read around a call cannot read less than the call took), or above the room around it (the
    time from the previous call's end to the next call's start, all a clock around it can span)."""
    below = claimed_s < active * (1 - tolerance) - allowance
    beyond = claimed_s > rooms * (1 + tolerance) + allowance
    return below | beyond


def requests(claimed_s: np.ndarray, active: np.ndarray, rooms: np.ndarray | None, tolerance: float,
             allowance: float) -> str | None:
    """Why per-request lines that sit above their own calls, each within the room around its
    call, cannot be judged, or None (a line below its call or beyond its room: DISAGREES).

    The seam is measured from the run itself: each line's excess over its own call. It has a
    sign (a clock around a call only adds) and a bound per line (the room), not a size fixed
    beforehand: ioping's was 2-5 µs on one run and 6-7 µs on another of the same machine, and
    a request preempted between its clock read and its call adds 100 µs or more."""
    n = min(len(claimed_s), len(active))
    if not n or rooms is None or len(rooms) < n:
        return None
    claimed_s, active, rooms = claimed_s[:n], active[:n], rooms[:n]
    if unexplained(claimed_s, active, rooms, tolerance, allowance).any():
        return None
    excess = claimed_s - active
    top = active * (1 + tolerance) + allowance
    above = claimed_s > top
    median = float(np.median(excess))
    # the run's seam: the lines within twice its median excess of their call (the rest held
    # more: a preemption, the benchmark's own work)
    near = excess <= max(2 * median, 0.0) + (top - active)
    lo, hi = float(np.min(excess[near])), float(np.max(excess[near]))
    held_more = int((~near).sum())
    return (f"gap in user space: {int(above.sum()):,} of {n:,} requests are above their own call, none below it, "
            f"each within the time from the previous call's end to the next call's start; the run's own seam: "
            f"median {fmt(max(median, 0.0), 'latency')} above ({int(near.sum()):,} within "
            f"{fmt(max(lo, 0.0), 'latency')} to {fmt(hi, 'latency')})"
            + (f", {held_more:,} more (a preemption or the benchmark's own work)" if held_more else "")
            + ": time between the benchmark's clock and the call's traced span (the syscall's entry and exit, "
            "iowitness's own programs, the benchmark's clock reads), which the trace cannot measure")


def lines(value: float, statistic: str, printed: float, n: int) -> str:
    """Why a statistic claim that fits the benchmark's own per-request lines, each of them the
    seam above its own call (latency._seamed_lines), cannot be judged: a request preempted
    between clock read and call moves a summary's mean, max or mdev far from the calls'."""
    return (f"gap in user space: the claimed {statistic} {fmt(value, 'latency')} is the {statistic} of the benchmark's "
            f"own {n:,} request lines ({fmt(printed, 'latency')}), each above its own call and within the time from "
            "the previous call's end to the next call's start: the seam between its clock and its calls (a "
            "preemption, its own work, the syscall's entry and exit), which the trace cannot measure")
