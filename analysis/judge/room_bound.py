"""A latency statistic over many operations held to what a clock around each call can read.

A benchmark that times one call reads its clock just before it and just after it (sysbench
fileio: `sb_event_start(); execute_event(); sb_event_stop()` around each event, sysbench.c's
thread_run; ioping; fio's synchronous engines). Each reading c_i of call i then lies between the
call's traced span and its room: the time from the end of its thread's call before it (any
traced call of the thread) to the start of its thread's call after it (the clock reads lie in
between; analysis/judge/seam.py holds per-request lines to it). From that, per statistic over the
n operations of a claim:

  min, max, median, pNN  the k-th smallest reading lies between the k-th smallest call and the
                         k-th smallest room (each reading between its call and its room; sorting
                         keeps that): the claim lies between the calls' band and the rooms' band
  mean                   a thread's clock readings do not overlap and follow one another, so
                         their sum is at most the time its rooms cover together (a gap between
                         two calls lies in two rooms, and counts once): the claim lies between
                         the calls' mean and that time over n

On a busy machine the benchmark's thread is preempted between a clock read and its call: sysbench
fileio rndrd under two CPU hogs printed "avg: 0.02" ms (0.015 to 0.025 ms, two decimals) over
reads of 3-5 µs each in the trace, the thread's time between calls taking in the waits for a CPU.
The thread's sleeps between its calls (off-CPU records in state "sleeping": ioping's interval)
are no clock's room: a claim within the rooms only with them is CANNOT JUDGE.
A claim inside these bounds (widened by the tolerance, latency.ALLOWANCE_S and half the claim's
last printed digit) AGREES, the bounds named. A thread's first and last operations of the claim
are closed by its other calls before and after them like any other (dbench's first ReadX by the
open of its file: under load its thread waited for a CPU between them, inside dbench's clock);
with no call of its thread before (after) one, its room is open on that side: the claim's timed
start and the time its line was printed close it when known. A claim beyond the bounds of the
closed rooms but within those open ends CANNOT be judged (only the first or last call's clock
could hold it); one beyond both, or below the calls, DISAGREES: no clock around those calls
could read it.

An operation of several calls (`timed` "open..close", "calls+sync", "N calls", "call+sync": an
open, a write and a close timed as one) is bounded the same way, its span from its first call's
start to its last call's end, its room from the end of its thread's call before its first call
to the start of its thread's call after its last (room_operations.py). Under two CPU hogs,
ops_bench's open..write..close loop printed a mean of 15.91 µs per operation over operations of
13.59 µs: 2.3 µs of waits for a CPU between its clock reads and its calls, which only the seam's
5 µs held before (CANNOT JUDGE).

    apply(verdicts, report, tolerance)

runs after the other passes on the verdicts of a claims spec's latency claims (any `timed`; not
when a thread's operations overlap, as asynchronous requests do)
that disagree, that the seam made CANNOT JUDGE, or that another account explained (latency._fitting:
each call's start to its thread's next call's start, another operation window, a warm-up): a
figure the spec's own account holds needs none of them. An explained verdict the rooms do not
hold keeps its explanation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iowitness import units
from iowitness.analysis.judge import latency, precision, room_operations
from iowitness.analysis.judge.verdict_rules import Verdict, cannot_judge
from iowitness.analysis.measure.device import scheduler_records
from iowitness.analysis.measure.figures import fmt

# an off-CPU record's state when its thread went to sleep (probes/events.h, struct iow_offcpu)
SLEEPING = 1


@dataclass
class Clocks:
    """Per operation of a claim, in time order of their starts, in seconds: its call, its closed
    room (a thread's first call's own start, last call's own end where no call of its thread
    lies before or after it), its open room (the window's edges there: `low`, `high`, inf when
    unknown), and its awake room (the closed room less the thread's sleeps between its calls,
    off-CPU records in state "sleeping"); the same sums per thread for the mean (its first
    call's start to its last call's end, over all threads)."""
    calls: np.ndarray
    closed: np.ndarray
    opened: np.ndarray
    awake: np.ndarray
    spans: float
    opened_spans: float
    awake_spans: float
    asleep: float
    awake_opened: np.ndarray       # the open rooms less the sleeps, at the edges too
    awake_opened_spans: float
    overlapping: bool = False      # a thread's operations overlap (asynchronous requests): no rooms

    def __getitem__(self, cut: slice) -> Clocks:
        return Clocks(self.calls[cut], self.closed[cut], self.opened[cut], self.awake[cut], self.spans,
                      self.opened_spans, self.awake_spans, self.asleep, self.awake_opened[cut],
                      self.awake_opened_spans, self.overlapping)


def _sleeps(off, tid: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> np.ndarray:
    """Per gap [lows, highs] of thread `tid`: ns its thread spent asleep wholly inside it (off-CPU
    stretches in state 1; a thread's stretches do not overlap, so those inside a gap are a run)."""
    out = np.zeros(len(lows))
    if off is None or not len(off):
        return out
    asleep = off[off["state"] == SLEEPING]
    for t in np.unique(tid):
        mine = asleep[asleep["tid"] == t]
        if not len(mine):
            continue
        order = np.argsort(mine["off_ns"].astype(np.int64))
        leave, back = mine["off_ns"].astype(np.int64)[order], mine["on_ns"].astype(np.int64)[order]
        summed = np.r_[0, np.cumsum(back - leave)]
        at = tid == t
        i = np.searchsorted(leave, lows[at], side="left")
        j = np.searchsorted(back, highs[at], side="right")
        out[at] = np.where(j > i, summed[np.maximum(j, i)] - summed[i], 0)
    return out


def neighbours(report, tids: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]] | None:
    """Per thread of `tids`: the starts and the ends of all its traced calls (any kind, any
    file), each sorted, or None when the report cannot give a pass over its events."""
    blocks = getattr(report, "event_blocks", None)
    if blocks is None:
        return None
    starts: dict[int, list] = {int(t): [] for t in tids}
    ends: dict[int, list] = {int(t): [] for t in tids}
    for events, _ in blocks():
        tid = events["tid"].to_numpy(np.int64)
        start, end = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64)
        for t in starts:
            mine = tid == t
            starts[t].append(start[mine])
            ends[t].append(end[mine])
    return {t: (np.sort(np.concatenate(starts[t] or [np.empty(0, np.int64)])),
                np.sort(np.concatenate(ends[t] or [np.empty(0, np.int64)]))) for t in starts}


def _fenced(t: np.ndarray, s: np.ndarray, e: np.ndarray, near) -> tuple[np.ndarray, np.ndarray]:
    """Per operation: the latest end of another call of its thread at or before its start, and
    the earliest start of one at or after its end (-inf, inf where none): a clock read just
    before and just after the call lies between them."""
    before, after = np.full(len(s), -np.inf), np.full(len(s), np.inf)
    if not near:
        return before, after
    for thread in np.unique(t):
        if int(thread) not in near:
            continue
        starts, ends = near[int(thread)]
        at = t == thread
        i = np.searchsorted(ends, s[at], side="right") - 1
        before[at] = np.where(i >= 0, ends[np.maximum(i, 0)] if len(ends) else 0, -np.inf)
        j = np.searchsorted(starts, e[at], side="left")
        after[at] = np.where(j < len(starts), starts[np.minimum(j, len(starts) - 1)] if len(starts) else 0, np.inf)
    return before, after


def clocks(events, assigned, phases: list[int], timed: str, direction: str | None, low: int | None = None,
           high: int | None = None, off=None, near=None) -> Clocks:
    """The calls of a claim's operations and their rooms (Clocks); `off`: the trace's off-CPU
    records (analysis/measure/device.scheduler_records), or None; `near`: every traced call of
    each thread (neighbours), whose calls other than the claim's close the rooms too."""
    start, end, tid = room_operations.spans(events, assigned, phases, timed, direction, low)
    s, e, t = start.astype(np.float64), end.astype(np.float64), tid
    first = np.r_[True, t[1:] != t[:-1]]
    last = np.r_[t[1:] != t[:-1], True]
    fence_before, fence_after = _fenced(t, s, e, near)
    open_before = np.where(first, np.maximum(-np.inf if low is None else np.minimum(float(low), s), fence_before),
                           np.maximum(np.r_[0.0, e[:-1]], fence_before))
    open_after = np.where(last, np.minimum(np.inf if high is None else np.maximum(float(high), e), fence_after),
                          np.minimum(np.r_[s[1:], 0.0], fence_after))
    # a thread's first (last) operation of the claim is closed too when another call of its
    # thread lies before (after) it: the clock read cannot cross that call (dbench's first
    # ReadX after its NTCreateX's open, the thread preempted between them under load); with
    # none, its closed room is the call itself and only the open one reaches the window's edge
    fenced_before, fenced_after = ~first | np.isfinite(fence_before), ~last | np.isfinite(fence_after)
    before = np.where(fenced_before, open_before, s)
    after = np.where(fenced_after, open_after, e)
    # the thread's sleeps between a clock's possible read and the call, and after it
    asleep_before = np.where(fenced_before, _sleeps(off, t, before.astype(np.int64), s.astype(np.int64)), 0.0)
    asleep_after = np.where(fenced_after, _sleeps(off, t, e.astype(np.int64), after.astype(np.int64)), 0.0)
    closed = (after - before) / 1e9
    awake = closed - (asleep_before + asleep_after) / 1e9
    opened = (open_after - open_before) / 1e9
    # the mean: a thread's clock readings follow one another without overlap, so together they
    # span at most the union of their rooms; a gap no other call splits lies in two rooms, once
    previous_after = np.where(first, -np.inf, np.r_[-np.inf, after[:-1]])
    shared = ~first & (previous_after >= before)
    spans = float((after - np.maximum(before, previous_after)).sum()) / 1e9
    asleep = float(asleep_before.sum() + asleep_after.sum() - asleep_before[shared].sum()) / 1e9
    opened_previous = np.where(first, -np.inf, np.r_[-np.inf, open_after[:-1]])
    opened_spans = float((open_after - np.maximum(open_before, opened_previous)).sum()) / 1e9
    # the open ends' sleeps (an unfenced first call's edge before it, last call's after it), where finite
    edge_before = np.where(~fenced_before & np.isfinite(open_before),
                           _sleeps(off, t, np.nan_to_num(open_before, neginf=0).astype(np.int64), s.astype(np.int64)),
                           0.0)
    edge_after = np.where(~fenced_after & np.isfinite(open_after),
                          _sleeps(off, t, e.astype(np.int64), np.nan_to_num(open_after, posinf=0).astype(np.int64)),
                          0.0)
    awake_opened = opened - (asleep_before + asleep_after + edge_before + edge_after) / 1e9
    awake_opened_spans = opened_spans - asleep - float(edge_before.sum() + edge_after.sum()) / 1e9
    back = np.argsort(s, kind="stable")   # time order, as latency.operations gives them
    return Clocks((e - s)[back] / 1e9, closed[back], opened[back], awake[back], spans, opened_spans,
                  spans - asleep, asleep, awake_opened[back], awake_opened_spans,
                  bool((~first[1:] & (s[1:] < e[:-1])).any()))


def bounds(calls: np.ndarray, rooms: np.ndarray, spans: float, name: str, tolerance: float) -> tuple[float, float]:
    """(lowest, highest) value a clock around each call can give as the statistic `name`."""
    lo = latency.band(calls, name, tolerance)[0]
    if name == "mean":
        hi = spans / len(calls) if np.isfinite(spans) else np.inf
        return lo, hi * (1 + tolerance) + latency.ALLOWANCE_S
    if not np.isfinite(rooms).all():
        finite = np.isfinite(rooms)
        q = latency.quantile(name) or 0.0
        # the open rooms sort last: a quantile above the finite ones is unbounded
        if latency.rank_band(len(rooms), q)[1] > finite.sum() - 1:
            return lo, np.inf
    return lo, latency.band(rooms, name, tolerance)[1]


def _statistic(verdict: Verdict) -> str | None:
    name = verdict.claim.extra.get("statistic", "mean")
    return name if name == "mean" or latency.quantile(name) is not None else None


def _candidate(verdict: Verdict) -> bool:
    claim = verdict.claim
    # a claims spec's latency (fio's and the other modules' own judges hold theirs)
    if verdict.kind != "latency" or claim.source != "spec" or claim.extra.get("requests") or \
            claim.seconds_per_op is None:
        return False
    if not room_operations.roomed(claim.extra.get("timed", "call")) or _statistic(verdict) is None:
        return False
    first = verdict.reasons[0] if verdict.reasons else ""
    seamed = verdict.verdict == "cannot judge" and first.startswith("gap in user space")
    # another account latency._fitting found (each call's start to its next one's, another
    # operation window, a warm-up): a figure the spec's own account holds needs none of them
    other = verdict.verdict == "explained" and first.startswith(f"{_statistic(verdict)}: the claim ") and \
        " fits " in first
    return verdict.verdict == "disagrees" or seamed or other


def _half(verdict: Verdict) -> float:
    """Half the claim's last printed digit, in seconds (precision.py), or 0."""
    claim = verdict.claim
    text = claim.extra.get("printed_value")
    half = precision.half_digit(str(text)) if text else None
    if not half or not claim.value or claim.seconds_per_op is None:
        return 0.0
    return half * claim.seconds_per_op / claim.value


def _last_end(report) -> int | None:
    """The end of the trace's last data call: where a claim's line has no time (output given
    after the fact), the benchmark printed it after its calls, and read its clock before."""
    phases = report.phases
    if phases is None or phases.empty or "last_ns" not in phases:
        return None
    return int(phases["last_ns"].max())


def judge(verdict: Verdict, report, tolerance: float, off=None, near=None) -> None:
    """The verdict of one candidate claim, held to its calls and their rooms (module doc)."""
    claim = verdict.claim
    name = _statistic(verdict)
    timed = claim.extra.get("timed", "call")
    several = timed not in room_operations.SINGLE
    events, assigned = report.evidence.calls_of(list(verdict.phases), ["tid", "start_ns", "end_ns"])
    # the first call's clock read lies after the claim's timed start (else the trace's start:
    # under `run` the benchmark did not exist before it); the last one's before its line
    low = claim.extra.get("timed_ns", report.t0)
    high = claim.printed_ns if claim.printed_ns is not None else _last_end(report)
    got = clocks(events, assigned, list(verdict.phases), timed, claim.direction, low, high, off, near)
    got = got[int(claim.extra.get("skip") or 0):]
    if not len(got.calls) or name is None or claim.seconds_per_op is None or got.overlapping:
        return
    n = len(got.calls)
    value, half = claim.seconds_per_op, _half(verdict)
    lo, hi_awake = bounds(got.calls, got.awake, got.awake_spans, name, tolerance)
    hi_closed = bounds(got.calls, got.closed, got.spans, name, tolerance)[1]
    hi_awake_open = bounds(got.calls, got.awake_opened, got.awake_opened_spans, name, tolerance)[1]
    hi_open = bounds(got.calls, got.opened, got.opened_spans, name, tolerance)[1]
    shown = fmt(value, "latency") + (f" (± {fmt(half, 'latency')}, half its last printed digit)" if half else "")
    what = ("the time the rooms cover together, over the operations (a thread's clock readings follow one "
            "another without overlap)" if name == "mean"
            else "the rooms (from the end of its thread's call before each call to the start of the one after it)"
            if not several else "the rooms (from the end of its thread's call before each operation's first call to "
            "the start of the one after its last)")
    awake = (got.awake_spans / n) if name == "mean" else latency.figure(got.awake, name)
    closed = (got.spans / n) if name == "mean" else latency.figure(got.closed, name)
    asleep = f", less the {units.seconds(got.asleep)} its threads slept between calls" if got.asleep else ""
    records = "" if off is not None else " (the trace holds no off-CPU records to tell its threads' sleeps)"
    if value + half < lo or (verdict.verdict == "explained" and value - half > hi_awake):
        return   # below the calls: as judged; explained by another account the rooms do not hold: kept
    if value - half <= hi_awake:
        verdict.verdict = "agrees"
        verdict.reasons.insert(0, f"{name}: the claim {shown} lies between the {name} of the {n:,} {timed} "
                                  f"operations ({fmt(latency.figure(got.calls, name), 'latency')}) and the {name} of "
                                  f"{what}{asleep} ({fmt(awake, 'latency')}){records}: a clock read just before each "
                                  "call and just after it reads no less than the call and no more than its room; the "
                                  "time between calls is the benchmark's own work, or its thread waiting for a CPU")
        verdict.figures[f"{name} of the rooms' joint time" if name == "mean" else f"{name} of rooms"] = awake
        return
    edge = (f"{name}: the claim {shown} is above the {name} of {what}{asleep} ({fmt(awake, 'latency')}); only a "
            "thread's first or last call, whose room the trace does not close (no call of its thread before or after "
            "it in the claim's window), could hold it")
    if value - half <= hi_awake_open:
        cannot_judge(verdict, edge)
        return
    if value - half <= hi_closed:
        cannot_judge(verdict, f"{name}: the claim {shown} is above the {name} of {what}{asleep} "
                              f"({fmt(awake, 'latency')}) and within it with their sleeps ({fmt(closed, 'latency')}): "
                              "only a clock that ran on while its thread slept between calls (a lock, a sleep of its "
                              "own) reads so much")
        return
    if value - half <= hi_open:
        cannot_judge(verdict, f"{name}: the claim {shown} is above the {name} of {what} ({fmt(closed, 'latency')}); "
                              "only a thread's first or last call, whose room the trace does not close (no call of "
                              "its thread before or after it in the claim's window), could hold it")
        return
    verdict.verdict = "disagrees"
    verdict.reasons.insert(0, f"{name}: the claim {shown} is above the {name} of {what} ({fmt(closed, 'latency')}"
                              + (f", {fmt(hi_open, 'latency')} with the window's edges" if np.isfinite(hi_open)
                                 else "") + "), all a clock read just before each call and just after it can span")


def apply(verdicts: list[Verdict], report, tolerance: float, trace=None, strace: bool = False) -> None:
    """Each latency statistic that disagrees, or that the seam left unjudged, held to the rooms.
    Not on an strace import: its calls' times hold ptrace's stops (match_claims.STRACE_LATENCY)."""
    if strace:
        return
    candidates = [v for v in verdicts if _candidate(v)]
    if not candidates:
        return
    off = scheduler_records(trace) if trace is not None else None
    # one pass over the events for every candidate's threads: their other calls close the rooms
    tids = np.unique(np.concatenate([report.evidence.calls_of(list(v.phases), ["tid"])[0]["tid"].to_numpy(np.int64)
                                     for v in candidates]))
    near = neighbours(report, tids)
    for verdict in candidates:
        judge(verdict, report, tolerance, off, near)
