"""A claims spec's rate whose benchmark's clock ran over more than its calls: time at the edges
of the window, which no call shows.

A benchmark reads its clock, then makes its first call; makes its last call, then reads its
clock again. On a busy machine its thread may wait for a CPU between a clock read and the call
next to it: hdparm -T (hdparm.c, time_cache) reads its clock and starts its loop of lseek(0)
and a 2 MiB read; under two CPU hogs one -T figure in six came out 5 % below its calls' figure,
the thread preempted between the clock read and the loop's first lseek. What the trace still
knows: the clock started no earlier than the end of the thread's call before the window (the
last call before its first data call that is not one of the kinds the window repeats: the
loop's own lseek is inside the clock) or the benchmark's output line before it, whichever is
later; and it stopped no later than the start of the thread's call after the window (likewise)
or the claim's own line, whichever is earlier. IOzone has its own bracket of that kind
(analysis/benchmarks/iozone_clock.py); this one is any spec rate's.

    apply(verdicts, rows_of, report, trace, tolerance)

For a spec rate claim that DISAGREES below its calls' figure (a clock over more time gives a
lower rate; a figure above the calls' is no edge's doing), and a spec's elapsed time that
DISAGREES above its calls' span (sysbench's "total time" counts its threads' start-up: 63.3 ms
against 57.5 ms of calls once under load), in the words room_bound.py and return_wait.py use
for the latency and the busy cases ("between" and "beyond" the calls' figure: below it for a
rate, above it for a time):

  EXPLAINED     the claim lies between the calls' figure and the figure over the calls and the
                waits for a CPU the off-CPU records show at the edges (state "preempted"):
                "preempted at the edge", the waits and the figure named
  CANNOT JUDGE  it lies between the calls' figure and the figure over the widest window the
                edges allow, less the thread's sleeps there ("at the edge": the benchmark's own
                work or a wait the trace has no record of may lie inside its clock); or only
                with the sleeps left in (only a clock that ran on while its thread slept)
  DISAGREES     below all of it (the tolerance allowed): no clock between those edges gives it

dd's figure is held the same way, as its module says in its claim's extra clock_edges
(coreutils dd.c: its clock starts after its output's open, which fd_reopen makes an openat, a
dup2 onto fd 1 and a close of the first fd, and stops after it has printed "records in/out", so
its close is inside the clock and only its own line bounds the end; the reopen's close bounds
the start, as the call before the window that is none of its data calls' kinds): a
256 MiB write whose thread waited 20.9 ms for a CPU printed 0.929x of its calls' rate
(tests/unit/test_rate_edges_dd.py, on that run's trace).

Several phases (a claim of `scope` run, window or concurrent) are one window, their first data
call to their last end, when the claim's figure is all their amounts over it (one clock around
them all); a figure that adds each member's or each process's own rate has a clock per member,
and is left as it was, saying so. Phases of one thread are held to that thread's calls as one
phase is. Phases of several threads are held to the output lines only (whose clock it is, the
trace cannot tell, so no thread's call or wait bounds it): at most CANNOT JUDGE "at the edge".

An edge the trace does not close (no call of the thread and no output line on that side) is
taken at the trace's start, or left at the calls' edge at the end: a figure only that could
hold is at most CANNOT JUDGE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from iowitness import units
from iowitness.analysis.judge.verdict_rules import Verdict, cannot_judge, claimed
from iowitness.analysis.measure.device import scheduler_records
from iowitness.analysis.measure.figures import ROW_COLUMNS, WINDOWS, amount_of, fmt, rate, window_end
from iowitness.analysis.phasing import operations as several, phases as phase_module
from iowitness.analysis.read import printed

# an off-CPU record's state when its thread left the CPU (probes/events.h, struct iow_offcpu)
PREEMPTED, SLEEPING = 0, 1
# the most calls walked past on either side (the window's own kinds: a loop's lseeks)
MOST_WALKED = 10_000


@dataclass
class Edges:
    first: int           # the window's first data call's start (ns)
    end: int             # its end (the last data call's, or the fsync's or close's with the window)
    low: int             # the earliest the clock could have started
    high: int            # the latest it could have stopped
    low_from: str        # where `low` came from, in words
    high_from: str
    preempted: int       # ns the thread waited for a CPU in [low, first] and [end, high]
    asleep: int          # ns it slept there
    counted_end: int | None = None   # the end of the window the claim's figure was judged over, when not `end`


def _candidate(verdict: Verdict, rows: pd.DataFrame | None) -> bool:
    value, kind = claimed(verdict.claim)
    said = verdict.claim.source == "spec" or "clock_edges" in verdict.claim.extra
    # a rate below its calls' figure, or an elapsed time above their span: a clock over more time
    longer = verdict.ratio is not None and (verdict.ratio < 1 if kind in ("bytes", "ops") else
                                            verdict.ratio > 1 if kind == "elapsed" else False)
    return (verdict.verdict == "disagrees" and said and bool(value) and longer and rows is not None
            and len(rows) >= 1 and verdict.window in dict(WINDOWS))


def _one_thread(rows: pd.DataFrame) -> bool:
    return len(set(rows["tid"].astype(int))) == 1 and int(rows["threads"].max()) == 1


def _as_one(rows: pd.DataFrame, verdict: Verdict) -> pd.Series | None:
    """Several phases as one window: their first data call to their last end, when the verdict's
    figure is all their amounts over that window (one clock around them all); None when it adds
    figures of their own (each member's rate, or each process's), each over a clock of its own."""
    if len(rows) == 1:
        return rows.iloc[0]
    value, kind = claimed(verdict.claim)
    end_col = dict(WINDOWS)[verdict.window]
    members = list(rows[[c for c in ROW_COLUMNS if c in rows.columns]].itertuples())
    amount = sum(amount_of(r, verdict.claim.direction, kind) for r in members)
    first = int(rows["data_first_ns"].min())
    end = max(window_end(r, end_col) for r in members)
    active = verdict.figures.get(verdict.window)
    # an elapsed time over several phases is the span of them all; a rate, all their amounts over it
    over_all = (end - first) / 1e9 if kind == "elapsed" else rate(amount, first, end)
    if not active or abs(over_all / active - 1) > 1e-6:
        return None
    row = rows.iloc[0].copy()
    row["data_first_ns"], row["data_last_ns"] = first, int(rows["data_last_ns"].max())
    for column in ("sync_end_ns", "close_end_ns"):
        if column in rows:
            row[column] = int(rows[column].max())
    return row


def _thread_calls(report, tids: set[int]) -> dict[int, pd.DataFrame]:
    """Per thread: every traced call of it (start, end, syscall), in time order."""
    parts: dict[int, list[pd.DataFrame]] = {t: [] for t in tids}
    for events, _ in report.event_blocks():
        tid = events["tid"].to_numpy(np.int64)
        for t in tids:
            mine = tid == t
            if mine.any():
                parts[t].append(pd.DataFrame({"start": events["start_ns"].to_numpy(np.int64)[mine],
                                              "end": events["end_ns"].to_numpy(np.int64)[mine],
                                              "syscall": np.asarray(events["syscall"].to_numpy()[mine], str)}))
    return {t: (pd.concat(p, ignore_index=True).sort_values("start", kind="stable").reset_index(drop=True)
                if p else pd.DataFrame({"start": [], "end": [], "syscall": []})) for t, p in parts.items()}


def _off(off, tid: int, low: int, high: int, state: int) -> int:
    """ns of `tid`'s off-CPU stretches in `state` inside [low, high] (clipped to it)."""
    if off is None or not len(off) or high <= low:
        return 0
    mine = off[(off["tid"] == tid) & (off["state"] == state)]
    start = np.clip(mine["off_ns"].astype(np.int64), low, high)
    stop = np.clip(mine["on_ns"].astype(np.int64), low, high)
    return int(np.maximum(stop - start, 0).sum())


def edges(row, window: str, calls: pd.DataFrame, lines: list, tgid: int, t0: int | None,
          printed_ns: int | None, off, tid: int, own_line: bool = False) -> Edges:
    """The widest time the benchmark's clock could have run around the window's calls (module doc)."""
    end_col = dict(WINDOWS)[window]
    first = int(row["data_first_ns"])
    end = int(row["data_last_ns"]) if end_col is None else int(max(row["data_last_ns"], row[end_col]))
    start, stop, name = calls["start"].to_numpy(np.int64), calls["end"].to_numpy(np.int64), calls["syscall"].to_numpy()
    # the window's own kinds are those among its data calls (a loop's lseeks), not the fsync or
    # close after them: dd's reopen of its output closes the first fd before its clock starts
    inside = (start >= first) & (stop <= int(row["data_last_ns"]))
    kinds = phase_module.call_kinds(pd.Series(name[inside], dtype="category")) if inside.any() else np.empty(0)
    own = set(name[inside][~np.isin(kinds, (phase_module.READ, phase_module.WRITE))]) if inside.any() else set()
    # the call before: walk back past the window's own kinds (a loop's lseek is inside its clock)
    low_call, low_name = None, ""
    for i in np.flatnonzero(stop <= first)[::-1][:MOST_WALKED]:
        if name[i] not in own:
            low_call, low_name = int(stop[i]), str(name[i])
            break
    high_call, high_name = None, ""
    for i in np.flatnonzero(start >= end)[:MOST_WALKED]:
        if name[i] not in own:
            high_call, high_name = int(start[i]), str(name[i])
            break
    mine = [ln.t_ns for ln in lines if ln.t_ns is not None and ln.pid in (None, tgid)]
    line_before = max((t for t in mine if t <= first), default=None)
    # own_line: the benchmark prints other lines before it reads its clock (dd's "records in"),
    # so only the claim's own line bounds it
    line_after = None if own_line else min((t for t in mine if t >= end), default=None)
    if printed_ns is not None and printed_ns >= end:
        line_after = printed_ns if line_after is None else min(line_after, printed_ns)
    lows = [(t, w) for t, w in ((low_call, f"the end of its {low_name} before"),
                                (line_before, "its output line before")) if t is not None]
    low, low_from = max(lows) if lows else (min(int(t0 if t0 is not None else first), first), "the trace's start")
    highs = [(t, w) for t, w in ((high_call, f"the start of its {high_name} after"), (line_after, "its line"))
             if t is not None]
    high, high_from = min(highs) if highs else (end, "")
    preempted = _off(off, tid, low, first, PREEMPTED) + _off(off, tid, end, high, PREEMPTED)
    asleep = _off(off, tid, low, first, SLEEPING) + _off(off, tid, end, high, SLEEPING)
    return Edges(first, end, low, high, low_from, high_from, preempted, asleep)


def judge(verdict: Verdict, rows: pd.DataFrame, got: Edges, tolerance: float, records: bool) -> None:
    """The verdict of one candidate, held between its calls' figure and its edges' (module doc)."""
    value, kind = claimed(verdict.claim)
    active = verdict.figures.get(verdict.window)
    if not value or not active or active != active:
        return
    inner = (got.end - got.first) / 1e9
    # the bytes (or operations): the figure over the window it was judged on
    amount = active * ((got.counted_end if got.counted_end is not None else got.end) - got.first) / 1e9
    lead, trail = (got.first - got.low) / 1e9, (got.high - got.end) / 1e9
    preempted_s = inner + got.preempted / 1e9
    widest_s = (got.high - got.low) / 1e9
    awake_s = max(widest_s - got.asleep / 1e9, inner)
    if kind == "elapsed":   # the clock's time itself, each window as long as it is
        at_preempted, at_awake, at_widest = preempted_s, awake_s, widest_s
    else:
        at_preempted, at_awake, at_widest = amount / preempted_s, amount / awake_s, amount / widest_s

    def within(figure: float) -> bool:   # the claim no further from the calls' figure than `figure`
        return value <= figure * (1 + tolerance) if kind == "elapsed" else value >= figure * (1 - tolerance)
    verdict.figures.update({"with the waits at the edges": at_preempted, "widest window, awake": at_awake})
    shown = fmt(value, kind)
    span = (f"from {got.low_from} its first call ({units.seconds(lead)} before it)"
            + (f" to {got.high_from} ({units.seconds(trail)} after its last)" if got.high_from else
               " to its last call's end"))
    if got.preempted and within(at_preempted):
        verdict.verdict = "explained"
        verdict.reasons.insert(0, f"preempted at the edge: the thread waited {units.seconds(got.preempted / 1e9)} "
                                  f"for a CPU (off-CPU records, state \"preempted\") between {got.low_from} its first "
                                  f"call and that call, or after its last; over the calls' {units.seconds(inner)} and "
                                  f"those waits the figure is {fmt(at_preempted, kind)}, and the claim {shown} lies "
                                  f"between it and the calls' {fmt(active, kind)}: a clock read before a wait for a "
                                  "CPU counts it, which no call shows")
        return
    if within(at_awake):
        cannot_judge(verdict, f"at the edge: the claim {shown} lies between the calls' figure {fmt(active, kind)} and "
                              f"{fmt(at_awake, kind)} over the widest window the benchmark's clock could have run, "
                              f"{span}" + (f", less the {units.seconds(got.asleep / 1e9)} its thread slept there"
                                           if got.asleep else "")
                              + ": a wait for a CPU or the benchmark's own work between its clock read and its calls "
                              "may lie inside its clock, which no call shows"
                              + ("" if records else " (the trace holds no off-CPU records to tell a wait)"))
        return
    if within(at_widest):
        cannot_judge(verdict, f"at the edge: the claim {shown} is beyond {fmt(at_awake, kind)}, the figure over the "
                              f"widest window the benchmark's clock could have run less its thread's sleeps, and "
                              f"within {fmt(at_widest, kind)} with them ({span}): only a clock that ran on while its "
                              "thread slept reads so long")
        return
    verdict.reasons.insert(1, f"the widest window the benchmark's clock could have run, {span}, gives "
                              f"{fmt(at_widest, kind)}, and the claim {shown} is beyond it by more than "
                              f"{tolerance:.0%}: no clock between those edges gives it")


def apply(verdicts: list[Verdict], rows_of: dict[int, pd.DataFrame], report, trace, tolerance: float) -> None:
    """Each spec rate claim below its calls' figure that disagrees, held to its window's edges.
    `rows_of`: id(verdict) -> the phase rows it was judged on (its timed rows)."""
    candidates = [v for v in verdicts if _candidate(v, rows_of.get(id(v)))]
    if not candidates or not hasattr(report, "event_blocks"):
        return
    off = scheduler_records(trace) if trace is not None else None
    lines = printed.lines_of(trace) if trace is not None else []
    tids = {int(rows_of[id(v)]["tid"].iloc[0]) for v in candidates if _one_thread(rows_of[id(v)])}
    calls = _thread_calls(report, tids)
    nothing = pd.DataFrame({"start": np.empty(0, np.int64), "end": np.empty(0, np.int64), "syscall": []})
    for verdict in candidates:
        rows = several.per_operation(rows_of[id(verdict)], verdict.claim.extra.get("timed"))
        row = _as_one(rows, verdict)
        if row is None:
            verdict.reasons.append(f"not held to its clock's edges: the figure adds the {len(rows):,} phases' own "
                                   "figures, each over a clock of its own, whose edges are not told apart")
            continue
        tid = int(row["tid"])
        if not _one_thread(rows):
            # whose clock it is, the trace cannot tell: no thread's calls bound it, only the
            # benchmark's output lines (and the trace's start); no wait is known to be inside it
            verdict.reasons.append(f"its {len(set(rows['tid'].astype(int))):,} threads' clock is held to the "
                                   "benchmark's output lines around them, not to any thread's calls")
            got = edges(row, verdict.window, nothing, lines, int(row["tgid"]), report.t0, verdict.claim.printed_ns,
                        None, tid)
            judge(verdict, rows, got, tolerance, off is not None)
            continue
        # a benchmark module may say where its clock sits around its calls (dd's: extra clock_edges)
        said = verdict.claim.extra.get("clock_edges") or {}
        window = said.get("window", verdict.window) if row.get("close_end_ns", 0) > 0 else verdict.window
        got = edges(row, window, calls[tid], lines, int(row["tgid"]), report.t0, verdict.claim.printed_ns,
                    off, tid, own_line=bool(said.get("own_line")))
        if window != verdict.window:
            got.counted_end = edges(row, verdict.window, calls[tid], lines, int(row["tgid"]), report.t0,
                                    verdict.claim.printed_ns, off, tid).end
        judge(verdict, rows, got, tolerance, off is not None)
