"""Latency claims: a statistic of what a benchmark times per operation, against the same
statistic of the same operations in the trace.

What one operation is, as the benchmark times it (a claim's `timed`):

  call         one data call (read, write, pread, ..., one io_uring/libaio request from
               submission to completion)
  call+sync    one data call and the fsync/fdatasync calls its thread makes after it, before
               its next data call: from the call's start to the last sync's end
  open..close  one open file description: from its open's start to its last close's end
  calls+sync   the data calls of a thread up to a sync and the syncs after them; "N calls"
               and "N calls+sync" say how many data calls (analysis/phasing/operations.py)
  call or sync every data call and every fsync/fdatasync, each one operation (sysbench
               fileio counts its periodic fsyncs among its events)
  sync         every fsync/fdatasync, each one operation, no data call

A benchmark that drops warm-up requests from its figures says how many (`skip`): the first
operations of the phases, in time order, are left out of the trace's figure too.

The statistics (STATISTICS): mean, min, max, stddev (sample, n - 1: fio), mdev (population,
as ping prints it), median, and any percentile pNN. How near a claim must be (band): a claim
agrees when it lies within [lo * (1 - tolerance) - ALLOWANCE_S, hi * (1 + tolerance) +
ALLOWANCE_S], where for the mean lo = hi = the trace's mean; for a percentile p of n
operations (min and max are p0 and p100) lo and hi are the trace's sorted values at the
positions p * n - 1 - s and p * n + s (from 0, linear between two values), s = 1.96 * sqrt(n *
p * (1 - p)): where every percentile definition puts it (nearest rank, Hyndman and Fan's
interpolations) widened by the 95 % interval of a percentile's rank over n operations, so a
p99.99 of 200 requests may be anything from 70 % of the way between the trace's 199th and
200th values to its largest, one of 2 million is held to its neighbours, and a max is the
trace's largest value: never anything up to it from the value below (rank_band). For a
standard deviation the tolerance grows by 1 / sqrt(2 * (n - 1)), its relative standard error.

Example: `judge(claim, rows, trace, report, 0.05, "")` for "min/avg/max/mdev = 10.1/12.3/98.7/3.2
us" read as four claims gives four verdicts, each with figures {"mean of call+sync": ...}.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Union

import numpy as np
import pandas as pd

from iowitness.analysis.judge import seam
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.judge.verdict_rules import MAPPED_LATENCY, Verdict, cannot_judge, mapped, missing_reason
from iowitness.analysis.measure.figures import fmt
from iowitness.analysis.phasing import operation_values, operations as several, phases as phase_module, quantiles

TIMED = ("call", "call+sync", "open..close", "calls+sync", "call or sync")
STATISTICS = ("mean", "min", "max", "stddev", "mdev", "median", "pNN")
ALIASES = {"avg": "mean", "average": "mean", "sdev": "stddev", "std": "stddev", "p50": "median"}
PERCENTILE = re.compile(r"^p(\d{1,2}(?:\.\d+)?|100)$")
# what a benchmark's own clock adds to each operation and the tracepoints do not see: two clock
# reads (about 20 ns each through the vDSO) and the syscall's entry and exit around the
# tracepoints (a few hundred ns; more on a busy machine that preempts between them)
ALLOWANCE_S = 1e-6
# a per-request claim agrees when at least this share of its requests is within the band of
# its own operation: one request preempted between its clock read and its call is no lie
REQUESTS_SHARE = 0.95
Z95 = 1.96
# the account of a claim that fits each call's start to its thread's next call's start
TO_NEXT = "the time from each call's start to its thread's next call's start"
# the per-request operations a data call's room holds (its thread's previous data call's end to
# its next one's start): the call itself, or the call and the syncs after it (ioping -W's write
# and its fdatasync; under -C, no sync)
ROOMED_REQUESTS = ("call", "call+sync", "call or sync")
# a latency claim that fits once the trace's first few operations are left out: a warm-up the
# benchmark dropped; more than a few would be fitting the claim, not finding a cause
WARMUP_TRIES = 3


def statistic_name(text: str) -> str | None:
    """The statistic a spec names, in canonical form ("avg" -> "mean", "p99.9"), or None."""
    name = ALIASES.get(text.strip().lower(), text.strip().lower())
    return name if name in STATISTICS[:-1] or PERCENTILE.match(name) else None


def quantile(name: str) -> float | None:
    """The fraction a statistic is the quantile of: min 0, median 0.5, p99 0.99, max 1."""
    if name == "min":
        return 0.0
    if name == "max":
        return 1.0
    if name == "median":
        return 0.5
    m = PERCENTILE.match(name)
    return float(m.group(1)) / 100 if m else None


# each data call with its thread's calls around it. "around" is the room with a side a thread's
# first or last call lacks taken from the call itself: its own start to the next call's start,
# or the previous call's end to its own end (a clock read around a call takes in at least the
# call and the time on the side that has a neighbour)
GAPS = ("interval", "to next", "room", "around")


# the value of a room whose call lacks a neighbouring call on a side: no bound
LACKING = np.iinfo(np.int64).min


class ThreadGaps:
    """operations() of GAPS over events given block by block in time order: memory of a value
    per data call and one call per thread, not the rows of the phases; with `into` (an
    OperationValues, "interval" and "around" only) the values go there instead, in memory up to
    its budget and in its file past it. A thread's last data call in a block waits for its next
    one (in a later block) to be given its value.

        gaps = ThreadGaps(phases, "room", "read")
        for events, a in blocks:
            gaps.add(events, a)
        gaps.result()   # operations(all the events, all of a, phases, "room", "read")
    """

    def __init__(self, phases: list[int], timed: str, direction: str | None,
                 into: operation_values.OperationValues | None = None):
        assert timed in GAPS and (into is None or timed in ("interval", "around"))
        self.phases, self.timed, self.direction, self.into = phases, timed, direction, into
        self.parts: list[np.ndarray] = []        # per block: its data calls' values (ns), in row order
        self.followed: list[np.ndarray] = []     # per block: whether each has a next call
        self.starts: list[int] = []              # per block: the index of its first value
        self.given = 0
        # per thread: its last data call so far (block, position), start, end, and the end of the
        # call before it (None: none)
        self.pending: dict[int, tuple[int, int, int, int, int | None]] = {}

    def add(self, events: pd.DataFrame, assigned: pd.DataFrame) -> None:
        data = data_calls(events, assigned, self.phases, self.direction)
        rows = np.flatnonzero(data)
        if not len(rows):
            return
        tid = events["tid"].to_numpy(np.int64)[rows]
        by = np.argsort(tid, kind="stable")
        s = events["start_ns"].to_numpy(np.int64)[rows][by]
        e = events["end_ns"].to_numpy(np.int64)[rows][by]
        t = tid[by]
        first = np.r_[True, t[1:] != t[:-1]]
        last = np.r_[t[1:] != t[:-1], True]
        after, before = np.r_[s[1:], 0], np.r_[0, e[:-1]]
        known = ~first   # the end of the call before: a thread's first here has it from an earlier block, or none
        k = len(self.starts)
        for i in np.flatnonzero(first):   # the thread's call before this block's first
            held = self.pending.pop(int(t[i]), None)
            if held is None:
                continue
            block, at, start, end, earlier = held
            self._set(block, at, self._value(start, end, int(s[i]), earlier))
            before[i], known[i] = end, True
        values = np.zeros(len(rows), np.int64)
        inner = ~last
        if self.timed in ("room", "around"):
            lacking = LACKING if self.timed == "room" else after[inner] - s[inner]
            values[inner] = np.where(known[inner], after[inner] - before[inner], lacking)
        else:
            values[inner] = after[inner] - s[inner]
        for i in np.flatnonzero(last):   # valued when its next call comes, or at the end
            earlier = int(before[i]) if known[i] else None
            self.pending[int(t[i])] = (k, int(by[i]), int(s[i]), int(e[i]), earlier)
            values[i] = self._value(int(s[i]), int(e[i]), None, earlier)
        out = np.empty(len(rows), np.int64)
        out[by] = values
        self.starts.append(self.given)
        self.given += len(rows)
        if self.into is not None:
            self.into.add(out)
            return
        followed = np.empty(len(rows), bool)
        followed[by] = inner
        self.parts.append(out)
        self.followed.append(followed)

    def _set(self, block: int, at: int, ns: int) -> None:
        """A call's value, once its thread's next call came."""
        if self.into is not None:
            self.into.set(self.starts[block] + at, ns)
            return
        self.parts[block][at] = ns
        self.followed[block][at] = True

    def _value(self, start: int, end: int, next_start: int | None, earlier: int | None) -> int:
        """A call's value (ns; LACKING: no bound) given its thread's next call's start (None: it has none)."""
        if self.timed == "room":
            return LACKING if next_start is None or earlier is None else next_start - earlier
        if self.timed == "around":
            return (end if next_start is None else next_start) - (start if earlier is None else earlier)
        return end - start if next_start is None else next_start - start

    def result(self) -> np.ndarray:
        """The values in seconds (a room without a bound: infinite)."""
        if not self.parts:
            return np.empty(0, np.float64)
        ns = np.concatenate(self.parts)
        if self.timed == "to next":
            ns = ns[np.concatenate(self.followed)]
        return np.where(ns == LACKING, np.inf, ns / 1e9) if self.timed == "room" else ns / 1e9


def data_calls(events: pd.DataFrame, assigned: pd.DataFrame, phases: list[int], direction: str | None) -> np.ndarray:
    """The counted data calls of `phases` in `direction` (None: both), page faults left out."""
    kind = phase_module.call_kinds(events["syscall"])
    in_phases = np.isin(assigned["phase"].to_numpy(), phases)
    wanted = (phase_module.READ,) if direction == "read" else (phase_module.WRITE,) if direction == "write" else \
        (phase_module.READ, phase_module.WRITE)
    faults = phase_module.named(events["syscall"], phase_module.FAULTS)
    return in_phases & np.isin(kind, wanted) & ~faults & ~phase_module.uncounted(assigned)


def operations(events: pd.DataFrame, assigned: pd.DataFrame, phases: list[int], timed: str,
               direction: str | None) -> np.ndarray:
    """Seconds per operation in `phases`, in time order of the operations' starts (GAPS: a
    value per data call with its thread's calls around it, ThreadGaps)."""
    if timed not in ("call", "call+sync", "open..close", "call or sync", "sync") + GAPS:
        return several.spans(events, assigned, phases, timed, direction)
    kind = phase_module.call_kinds(events["syscall"])
    in_phases = np.isin(assigned["phase"].to_numpy(), phases)
    start, end = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64)
    if timed == "open..close":
        spans = assigned["span"].to_numpy()[in_phases]
        frame = pd.DataFrame({"span": spans, "start": start[in_phases], "end": end[in_phases]})
        per = frame.groupby("span").agg(start=("start", "min"), end=("end", "max")).sort_values("start")
        return (per["end"] - per["start"]).to_numpy(np.float64) / 1e9
    if timed in ("call", "call or sync", "sync"):
        return durations_ns(events, assigned, phases, timed, direction).astype(np.float64) / 1e9
    data = data_calls(events, assigned, phases, direction)
    if timed in GAPS:   # the whole table as one block: one rule for both
        gaps = ThreadGaps(phases, timed, direction)
        gaps.add(events, assigned)
        return gaps.result()
    syncs = in_phases & (kind == phase_module.SYNC)
    rows = np.flatnonzero(data | syncs)
    tid = events["tid"].to_numpy(np.int64)[rows]
    by = np.argsort(tid, kind="stable")          # per thread, in time order
    rows, tid = rows[by], tid[by]
    is_data = data[rows]
    new_thread = np.r_[True, tid[1:] != tid[:-1]]
    # each data call starts an operation; the syncs after it in its thread belong to it
    op = np.cumsum(is_data) - 1
    first_op_of_thread = np.maximum.accumulate(np.where(new_thread, op + (~is_data), -1))
    keep = op >= first_op_of_thread     # syncs before a thread's first data call belong to none
    keep &= op >= 0
    frame = pd.DataFrame({"op": op[keep], "start": np.where(is_data, start[rows], np.iinfo(np.int64).max)[keep],
                          "end": end[rows][keep]})
    per = frame.groupby("op").agg(start=("start", "min"), end=("end", "max")).sort_values("start")
    return (per["end"] - per["start"]).to_numpy(np.float64) / 1e9


def durations_ns(events: pd.DataFrame, assigned: pd.DataFrame, phases: list[int], timed: str,
                 direction: str | None) -> np.ndarray:
    """operations() of single calls ("call", "call or sync", "sync") in whole nanoseconds."""
    kind = phase_module.call_kinds(events["syscall"])
    syncs = np.isin(assigned["phase"].to_numpy(), phases) & (kind == phase_module.SYNC)
    data = data_calls(events, assigned, phases, direction) if timed != "sync" else syncs
    rows = np.flatnonzero(syncs if timed == "sync" else data | syncs if timed == "call or sync" else data)
    return events["end_ns"].to_numpy(np.int64)[rows] - events["start_ns"].to_numpy(np.int64)[rows]


def starts_ns(events: pd.DataFrame, assigned: pd.DataFrame, phases: list[int], direction: str | None) -> np.ndarray:
    """The start times of durations_ns's values of single calls ("call"), in the same order."""
    return events["start_ns"].to_numpy(np.int64)[data_calls(events, assigned, phases, direction)]


# a statistic's values: the array of seconds, or the same values held as OperationValues (in
# memory up to a budget, in a file past it: fio's requests over several hosts)
Values = Union[np.ndarray, operation_values.OperationValues]


def figure(values: Values, name: str) -> float:
    """The statistic `name` of `values` (seconds): the trace's figure for the claim."""
    if not len(values):
        return float("nan")
    if isinstance(values, operation_values.OperationValues):
        if name in ("mean", "stddev", "mdev"):
            ddof = 1 if name == "stddev" else 0
            return values.mean() if name == "mean" else values.std(ddof) if len(values) > ddof else 0.0
        # np.percentile's own arithmetic on the two order statistics around its position
        return float(quantiles.percentiles(None, 1, [quantile(name) * 100], extent=([len(values)], [0], [0]),
                                           select=lambda wanted: values.at_ns(wanted[:, 1]), divisor=1e9)[0, 0])
    if name == "mean":
        return float(values.mean())
    if name == "stddev":
        return float(values.std(ddof=1)) if len(values) > 1 else 0.0
    if name == "mdev":
        return float(values.std(ddof=0))
    return float(np.percentile(values, quantile(name) * 100))


def band(values: Values, name: str, tolerance: float) -> tuple[float, float, str]:
    """(lowest, highest) value that agrees with the trace's figure, and the rule in words."""
    n = len(values)
    q = quantile(name)
    allowance = f" ± {ALLOWANCE_S * 1e6:g} µs"
    if q is None:
        slack = tolerance + (1 / math.sqrt(2 * (n - 1)) if name in ("stddev", "mdev") and n > 1 else 0)
        at = figure(values, name)
        rule = f"within {slack:.1%}{allowance} of the trace's {name} of {n:,} operations"
        return at * (1 - slack) - ALLOWANCE_S, at * (1 + slack) + ALLOWANCE_S, rule
    # a caller that asks for several statistics of one array sorts it once (fio's 20-odd
    # percentiles of every request of several hosts): checking is linear, sorting is not;
    # OperationValues find their order statistics themselves (fetch: all of them in one select)
    ordered = values if isinstance(values, operation_values.OperationValues) or n < 2 \
        or bool((values[1:] >= values[:-1]).all()) else np.sort(values)
    low, high = rank_band(n, q)
    where = f"rank {_rank(high)}" if low == high else f"ranks {_rank(low)} and {_rank(high)}"
    rule = f"between the trace's values at {where} of {n:,} operations, {tolerance:.0%}{allowance}"
    return (_at(ordered, low) * (1 - tolerance) - ALLOWANCE_S, _at(ordered, high) * (1 + tolerance) + ALLOWANCE_S,
            rule)


def rank_band(n: int, q: float) -> tuple[float, float]:
    """(lowest, highest) position, from 0, in n sorted values where a benchmark's q-quantile of
    the same operations can fall: every definition (Hyndman and Fan's nine, nearest rank, linear
    interpolation) puts it between positions q * n - 1 and q * n, and the 95 % interval of a
    percentile's rank, Z95 * sqrt(n * q * (1 - q)), widens that. The max (q = 1) is the largest
    value and the min the smallest, under every definition and with no sampling spread: the band
    never reaches the value next to them."""
    spread = Z95 * math.sqrt(n * q * (1 - q))
    return max(0.0, q * n - 1 - spread), min(n - 1.0, q * n + spread)


def _at(ordered: Values, position: float) -> float:
    """The sorted values at a fractional position: linear between the two around it."""
    below = int(math.floor(position))
    above = min(below + 1, len(ordered) - 1)
    a, b = ordered.at([below, above]) if isinstance(ordered, operation_values.OperationValues) \
        else (ordered[below], ordered[above])
    return float(a + (b - a) * (position - below))


def ranks_read(n: int, names) -> list[int]:
    """The ranks (from 0) of n sorted values that band() and figure() read for these statistics:
    what OperationValues.fetch finds in one select before they are asked one by one."""
    ranks: set[int] = set()
    for name in names:
        q = quantile(name)
        if q is None or not n:
            continue
        # band's two positions, and figure's (np.percentile: (n - 1) q, give or take its rounding)
        for position in (*rank_band(n, q), (n - 1) * q):
            below = int(math.floor(position))
            ranks |= {r for r in range(below - 1, below + 3) if 0 <= r < n}
    return sorted(ranks)


def _rank(position: float) -> str:
    rank = position + 1
    return f"{rank:,.0f}" if abs(rank - round(rank)) < 0.05 else f"{rank:,.1f}"


def judge(claim: Claim, rows: pd.DataFrame, trace, report, tolerance: float, missing: str = "",
          lines: list[Claim] | None = None) -> Verdict:
    """The verdict on a latency statistic claim (claim.extra: statistic, timed, skip). `lines`:
    the same test's per-request lines, if the benchmark printed them (ioping's summary and its
    request lines): the run's own seam, for a statistic the seam moved (_seamed_lines)."""
    name = claim.extra.get("statistic", "mean")
    timed = claim.extra.get("timed", "call")
    label = f"{name} of {timed}"
    verdict = Verdict(claim, [int(p) for p in rows["phase"]], "agrees", window=label, kind="latency")
    if rows.empty:
        return cannot_judge(verdict, "no phase of the trace matches this claim")
    values = _values(claim, rows, trace, report)
    if missing:
        verdict.reasons.append(missing_reason(missing))
    if not len(values):
        return cannot_judge(verdict, f"the phases have no {timed} operation to time"
                                     + (f" after the {claim.extra.get('skip')} skipped" if claim.extra.get("skip") else "")
                                     + (f": they are page faults, {MAPPED_LATENCY}" if mapped(rows) else ""))
    active = figure(values, name)
    verdict.figures = {label: active}
    verdict.counts = {"operations": len(values)}
    value = float(claim.seconds_per_op)
    verdict.ratio = value / active if active else None
    lo, hi, rule = band(values, name, tolerance)
    skipped = f", the first {claim.extra['skip']} skipped as the benchmark says" if claim.extra.get("skip") else ""
    where = f"{len(values):,} operations ({timed}{skipped})"
    if lo <= value <= hi:
        verdict.reasons.insert(0, f"{name}: claim {fmt(value, 'latency')}, trace {fmt(active, 'latency')} over "
                                  f"{where}; agrees when {rule}")
        return verdict
    others = _fitting(claim, rows, trace, report, name, value, tolerance, timed)
    if others:
        verdict.verdict = "explained"
        verdict.reasons.insert(0, others)
        return verdict
    gap = seam.reason(value, active, name, len(values)) or (
        seam.held(value, float(np.max(values)) if name == "max" else active,
                  _values(claim, rows, trace, report, "interval"), name) if name in ("max", "mean") else None)
    printed = _seamed_lines(lines, verdict.phases, report, tolerance) if not gap and lines else None
    if printed is not None and band(printed, name, tolerance)[0] <= value <= band(printed, name, tolerance)[1]:
        gap = seam.lines(value, name, figure(printed, name), len(printed))
    if gap:
        return cannot_judge(verdict, gap)
    verdict.verdict = "disagrees"
    hint = several.whole_hint(verdict.ratio, len(values), tolerance) if name == "mean" and timed == "call" else None
    if hint:
        # n calls timed as one, with no group in sight: cannot be judged, never DISAGREES at n×
        verdict.verdict = "cannot judge"
        verdict.reasons.insert(0, hint)
    verdict.reasons.insert(0 if not hint else 1, f"{name}: claim {fmt(value, 'latency')} vs trace {fmt(active, 'latency')} over {where} "
                              + (f"({verdict.ratio:.2f}×); " if verdict.ratio is not None else "")
                              + f"agrees only {rule} "
                              f"({fmt(max(lo, 0), 'latency')} to {fmt(hi, 'latency')})")
    return verdict


def _values(claim: Claim, rows: pd.DataFrame, trace, report, timed: str | None = None) -> np.ndarray:
    # calls before the claim's timed period (claim_windows.timed_start) are left out
    low = claim.extra.get("timed_ns")
    values = report.evidence.operations([int(p) for p in rows["phase"]], timed or claim.extra.get("timed", "call"),
                                        claim.direction, **({"low": low} if low is not None else {}))
    return values[int(claim.extra.get("skip") or 0):]


def _fitting(claim, rows, trace, report, name, value, tolerance, timed) -> str | None:
    """Another account that fits: the other operation windows, each call's start to the next,
    or the first few operations left out (a warm-up the benchmark dropped and the spec did not say)."""
    def fits(values):
        if not len(values):
            return False
        lo, hi, _ = band(values, name, tolerance)
        return lo <= value <= hi

    for other in TIMED + ("to next",):
        if other == timed:
            continue
        values = _values(claim, rows, trace, report, other)
        if fits(values):
            if other == "to next":
                return (f"{name}: the claim {fmt(value, 'latency')} fits {TO_NEXT} ({fmt(figure(values, name), 'latency')} over "
                        f"{len(values):,}, each thread's last call left out), not the "
                        f"{timed} ({fmt(figure(_values(claim, rows, trace, report), name), 'latency')}): the "
                        "benchmark's clock took in time outside its calls (its own work between a clock read "
                        "and the call, or the thread preempted there)")
            return (f"{name}: the claim {fmt(value, 'latency')} fits {other} per operation "
                    f"({fmt(figure(values, name), 'latency')} over {len(values):,}), not {timed}: "
                    f"the benchmark times {other}")
    values = _values(claim, rows, trace, report)
    for more in range(1, WARMUP_TRIES + 1):
        if fits(values[more:]):
            skip = int(claim.extra.get("skip") or 0) + more
            return (f"{name}: the claim {fmt(value, 'latency')} fits the {timed} operations without the first "
                    f"{more} ({fmt(figure(values[more:], name), 'latency')} over {len(values) - more:,}): a warm-up "
                    f"the benchmark dropped from its figures (say skip = {skip})")
    return None


def judge_requests(claims: list[Claim], rows: pd.DataFrame, trace, report, tolerance: float,
                   missing: str = "", shift: int = 0, shifted: str = "") -> Verdict:
    """One verdict for a benchmark's per-request lines: the k-th printed request against the
    k-th operation of its phases (after the skipped ones), summed up as "N of M within".

    When they do not fit as the spec says, the other accounts are tried: another operation
    window (the benchmark times each call with its sync), or the trace's surplus operations
    at the start left out (a warm-up request the benchmark dropped); one that fits explains.
    `shift`: the request numbered n is the trace's operation n + shift (a trace that began after
    the benchmark's first requests, judge/request_anchor.py; `shifted` says so)."""
    timed = claims[0].extra.get("timed", "call")
    skip = int(claims[0].extra.get("skip") or 0)
    # the verdict speaks for all the lines: its claim is their median, as printed; the lines
    # may print in units of their own (ms and µs): the median is of their times, in its own unit
    middle = sorted(claims, key=lambda c: c.seconds_per_op)[len(claims) // 2]
    first = dataclasses.replace(claims[0], value=middle.value, unit=middle.unit, seconds_per_op=middle.seconds_per_op,
                                printed=f"{len(claims):,} request lines ({claims[0].printed!r} ...), median "
                                        f"{middle.value:g} {middle.unit}",
                                extra={**claims[0].extra, "requests": len(claims)})
    verdict = Verdict(first, [int(p) for p in rows["phase"]], "agrees", window=f"median {timed}",
                      kind="latency")
    if rows.empty:
        return cannot_judge(verdict, f"no phase of the trace matches these {len(claims):,} requests")
    if missing:
        verdict.reasons.append(missing_reason(missing))
    # calls before the requests' timed period (their lines' own start: judge/request_anchor.py) are left out
    low = {"low": claims[0].extra["timed_ns"]} if claims[0].extra.get("timed_ns") is not None else {}
    every = {name: report.evidence.operations(verdict.phases, name, first.direction, **low)
             for name in dict.fromkeys((timed,) + TIMED)}
    if shifted:
        verdict.reasons.append(shifted)
    # the trace's operation of each printed request, counted from 1 after the skipped ones
    numbers = [int(c.extra.get("request") or k + 1) + shift for k, c in enumerate(claims)]
    claimed_s = np.array([c.seconds_per_op for c in claims])
    said = _pairs(claimed_s, numbers, every[timed][skip:], tolerance)
    if said is None:
        return cannot_judge(verdict, f"the phases have {len(every[timed]) - skip:,} {timed} operations, none for "
                                     f"the {len(claims):,} printed requests")
    within, ratios, active, count = said
    verdict.ratio = float(np.nanmedian(ratios))
    verdict.figures = {f"median {timed}": float(np.median(active))}
    verdict.counts = {"requests": len(claims), "within": int(within.sum())}
    summary = (f"{int(within.sum()):,} of {len(within):,} requests within {tolerance:.0%} ± {ALLOWANCE_S * 1e6:g} µs "
               f"of their own {timed} (the k-th printed request against the k-th operation in time order"
               + (f", after the {skip} skipped" if skip else "") + f"); median ratio {verdict.ratio:.3f}")
    # numbered requests (ioping's request=k) each name their operation: the trace's others are
    # the requests whose lines the spec leaves out (ioping's "(warmup)" request 1)
    numbered = all(c.extra.get("request") for c in claims) and len(set(numbers)) == len(numbers)

    def accounted_for(operations: int) -> bool:
        return operations == len(claims) or (numbered and max(numbers) == operations)

    accounted = accounted_for(count)
    if shift < 0:
        # the requests that ran before the trace began are counted apart: the verdict is about
        # each of the others, whole in the trace, not about a test seen from its middle
        verdict.counts["before_trace"] = -shift
    if count != len(claims):
        summary += (f"; the benchmark printed {len(claims):,} requests, the trace has {count:,} {timed} operations"
                    + (f": numbered up to {max(numbers):,}, {count - len(claims):,} more are requests whose "
                       "lines the spec leaves out" if accounted else ""))
    if within.mean() >= REQUESTS_SHARE and accounted:
        verdict.reasons.insert(0, summary)
        return verdict
    # other accounts: another window, or the trace's surplus at the start (a dropped warm-up)
    for name in TIMED:
        surplus = len(every[name]) - skip - len(claims)
        for extra_skip in dict.fromkeys((0, surplus if surplus > 0 else 0)):
            if (name, extra_skip) == (timed, 0):
                continue
            other = _pairs(claimed_s, numbers, every[name][skip + extra_skip:], tolerance)
            if other is not None and other[0].mean() >= REQUESTS_SHARE and accounted_for(other[3]):
                verdict.verdict = "explained"
                verdict.ratio = float(np.nanmedian(other[1]))
                why = []
                if name != timed:
                    why.append(f"the benchmark times {name} per request, not {timed}")
                if extra_skip:
                    why.append(f"the trace's first {extra_skip} operation(s) are not among the printed requests "
                               f"(a warm-up the benchmark dropped: skip = {skip + extra_skip})")
                verdict.reasons.insert(0, f"{int(other[0].sum()):,} of {len(claims):,} requests within "
                                          f"{tolerance:.0%} ± {ALLOWANCE_S * 1e6:g} µs when {' and '.join(why)}; "
                                          f"median ratio {float(np.nanmedian(other[1])):.3f}; as the spec says, {summary}")
                return verdict
    # every printed request against its own call (by ioping's number, or in order when as many):
    # above it, within the room around it, is the seam (analysis/judge/seam.py)
    rooms = _rooms(numbers, report.evidence.operations(verdict.phases, "room", first.direction, **low)[skip:]) \
        if timed in ROOMED_REQUESTS and len(active) == len(claims) else None
    gap = seam.requests(claimed_s, active, rooms, tolerance, ALLOWANCE_S) \
        if count == len(claims) or "request" in claims[0].extra else None
    if gap:
        return cannot_judge(verdict, f"{gap}; as the spec says, {summary}")
    worst = int(np.nanargmax(np.abs(np.log(np.where(ratios > 0, ratios, np.nan))))) if np.isfinite(ratios).any() else 0
    verdict.verdict = "disagrees"
    verdict.reasons.insert(0, summary + f"; agrees only when {REQUESTS_SHARE:.0%} are; furthest: request "
                                        f"{numbers[worst] - shift} claims {fmt(claimed_s[worst], 'latency')}, its operation "
                                        f"took {fmt(active[worst], 'latency')}")
    if rooms is not None:
        off = seam.unexplained(claimed_s, active, rooms, tolerance, ALLOWANCE_S)
        if off.any():
            verdict.reasons.insert(1, f"{int(off.sum()):,} of {len(claims):,} requests no gap in user space explains: "
                                      "below their own call, or above the time from the previous call's end to the "
                                      "next call's start (all a clock around the call can span)")
    return verdict


def _seamed_lines(lines: list[Claim], phases: list[int], report, tolerance: float) -> np.ndarray | None:
    """The printed times of a benchmark's per-request lines when every one sits above its own
    call and within the room around it (seam.unexplained finds none), else None: what the
    benchmark's clock read per request, the seam included, each line held to its own call."""
    timed = lines[0].extra.get("timed", "call")
    if timed not in ROOMED_REQUESTS:
        return None
    skip = int(lines[0].extra.get("skip") or 0)
    numbers = [int(c.extra.get("request") or k + 1) for k, c in enumerate(lines)]
    claimed_s = np.array([c.seconds_per_op for c in lines])
    low = {"low": lines[0].extra["timed_ns"]} if lines[0].extra.get("timed_ns") is not None else {}
    active = _rooms(numbers, report.evidence.operations(phases, timed, lines[0].direction, **low)[skip:])
    rooms = _rooms(numbers, report.evidence.operations(phases, "room", lines[0].direction, **low)[skip:])
    if active is None or rooms is None or seam.unexplained(claimed_s, active, rooms, tolerance, ALLOWANCE_S).any():
        return None
    return claimed_s


def _rooms(numbers: list[int], rooms: np.ndarray) -> np.ndarray | None:
    """The room around each printed request's own call (seam.unexplained), or None."""
    at = np.array([n - 1 for n in numbers])
    return rooms[at] if len(at) and (at >= 0).all() and (at < len(rooms)).all() else None


def _pairs(claimed_s: np.ndarray, numbers: list[int], values: np.ndarray, tolerance: float):
    """(within, ratios, active, operations) of the printed requests against `values`, or None."""
    at = np.array([n - 1 for n in numbers])
    ok = (at >= 0) & (at < len(values))
    if not ok.any():
        return None
    claimed_s, active = claimed_s[ok], values[at[ok]]
    within = (claimed_s >= active * (1 - tolerance) - ALLOWANCE_S) & (claimed_s <= active * (1 + tolerance) + ALLOWANCE_S)
    # a printed request without its operation in the trace is not within
    within = np.r_[within, np.zeros(int((~ok).sum()), bool)]
    return within, claimed_s / np.where(active > 0, active, np.nan), active, len(values)
