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


def slowest(value: float, largest_call: float, intervals: np.ndarray) -> str | None:
    """Why a max claim above the largest call and within the largest start-to-next-start
    interval cannot be judged, or None."""
    if not len(intervals) or value <= largest_call:
        return None
    longest = float(np.max(intervals))
    if value > longest:
        return None
    return (f"gap in user space: the claimed max {fmt(value, 'latency')} is above the slowest call "
            f"({fmt(largest_call, 'latency')}) and within the longest time from a call's start to the next "
            f"call's ({fmt(longest, 'latency')}): the benchmark's slowest operation may hold time between its calls "
            "(its own work, a page fault, a preemption), which no probe of calls sees")


def between(value: float, active: float, intervals: np.ndarray) -> str | None:
    """Why a mean claim above the calls' mean by at most BETWEEN_MOST_S, and below the mean time
    from a call's start to the next call's, cannot be judged, or None."""
    if not len(intervals) or not 0 < value - active <= BETWEEN_MOST_S:
        return None
    spaced = float(np.mean(intervals))
    if value > spaced:
        return None
    return (f"gap in user space: the claimed mean {fmt(value, 'latency')} is {fmt(value - active, 'latency')} above "
            f"the calls' ({fmt(active, 'latency')}) and below the mean time from a call's start to the next call's "
            f"({fmt(spaced, 'latency')}): the benchmark's clock may take in its own work between calls, which no "
            "probe of calls sees")


def requests(claimed_s: np.ndarray, active: np.ndarray, tolerance: float, allowance: float,
             share: float) -> str | None:
    """Why per-request lines that sit above their own calls by the seam cannot be judged, or None."""
    n = min(len(claimed_s), len(active))
    if not n:
        return None
    claimed_s, active = claimed_s[:n], active[:n]
    fits = (claimed_s >= active * (1 - tolerance) - allowance) & \
        (claimed_s <= active * (1 + tolerance) + allowance + SEAM_S)
    if fits.mean() < share:
        return None
    excess = float(np.median(claimed_s - active))
    return (f"gap in user space: {int(fits.sum()):,} of {n:,} requests are within {SEAM_S * 1e6:g} µs above their "
            f"own call (median {fmt(max(excess, 0.0), 'latency')} above): the seam between a benchmark's clock and "
            "the call's traced span (the syscall's entry and exit, iowitness's own programs, the benchmark's clock "
            "reads), which the trace cannot measure")
