"""The operations of a latency claim as spans in time, each with its thread: what room_bound.py
puts a room around.

An operation is what the claim's `timed` says (analysis/phasing/operations.py): one data call
("call", "call or sync"), or several calls timed as one ("call+sync", "open..close",
"calls+sync", "N calls", "N calls+sync"). A benchmark that times an operation of several calls
reads its clock just before the first and just after the last (ops_bench's openclose loop:
`s = now(); open(); write(); close(); total += now() - s`), so the room of an operation runs
from the end of its thread's call before its first call to the start of its thread's call
after its last, as a single call's does.

    start, end, tid = spans(events, assigned, phases, timed, direction, low)

gives, per operation, its first call's start, its last call's end (ns) and its thread, sorted
by thread and then start. The durations are latency.operations' for the same `timed` (a unit
test holds the two together): the grouping rules are those of latency.py and operations.py,
here with the thread and the edges kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import operations as several, phases as phase_module

SINGLE = ("call", "call or sync", "sync")


def roomed(timed: str | None) -> bool:
    """Whether a claim's `timed` is one whose operations have rooms: every valid one."""
    if not timed or timed in SINGLE:
        return True
    try:
        several.parse(timed)
    except ValueError:
        return False
    return True


def spans(events: pd.DataFrame, assigned: pd.DataFrame, phases: list[int], timed: str, direction: str | None,
          low: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, tid) per operation of `timed` in `phases`, int64, sorted by thread then start;
    `low`: only the calls that started then or later (a claim's timed period)."""
    kind = phase_module.call_kinds(events["syscall"])
    wanted = (phase_module.READ,) if direction == "read" else (phase_module.WRITE,) if direction == "write" else \
        (phase_module.READ, phase_module.WRITE)
    start, end = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64)
    tid = events["tid"].to_numpy(np.int64)
    in_phases = np.isin(assigned["phase"].to_numpy(), phases)
    if low is not None:
        in_phases &= start >= low
    faults = phase_module.named(events["syscall"], phase_module.FAULTS)
    data = in_phases & np.isin(kind, wanted) & ~faults & ~phase_module.uncounted(assigned)
    syncs = in_phases & (kind == phase_module.SYNC)
    if timed in SINGLE:
        counted_syncs = syncs & ~faults & ~phase_module.uncounted(assigned)
        rows = np.flatnonzero(data if timed == "call" else counted_syncs if timed == "sync" else data | counted_syncs)
        return _sorted(start[rows], end[rows], tid[rows])
    if timed == "open..close":
        # every call of one open file description, from its open's start to its last close's end
        rows = np.flatnonzero(in_phases)
        frame = pd.DataFrame({"op": assigned["span"].to_numpy()[rows], "start": start[rows], "end": end[rows],
                              "tid": tid[rows]})
        return _grouped(frame.sort_values("start", kind="stable"))
    group, n = several.parse(timed)
    data |= several.rewrite_reads(assigned, kind, in_phases, direction, group) & ~faults
    with_syncs = group in ("call+sync", "calls+sync")
    rows = np.flatnonzero(data | (syncs if with_syncs else np.zeros(len(data), bool)))
    by = np.lexsort((start[rows], tid[rows]))       # per thread, in time order
    rows = rows[by]
    t, is_data = tid[rows], data[rows]
    new_thread = np.r_[True, t[1:] != t[:-1]] if len(rows) else np.empty(0, bool)
    seen = np.cumsum(is_data) - 1                   # data calls before this row, over all threads
    # the thread's data calls before its first row: the first data call of each thread is 0
    base = np.maximum.accumulate(np.where(new_thread, seen + (~is_data), -1)) if len(rows) else seen
    within = seen - base                            # -1: a sync before its thread's first data call
    if group == "calls+sync" and not n:
        # a data call after a sync starts the next operation
        after_sync = np.r_[False, ~is_data[:-1]] & is_data & ~new_thread if len(rows) else is_data
        op_local = np.cumsum(after_sync)
        starts_at = np.maximum.accumulate(np.where(new_thread, np.arange(len(rows)), 0)) if len(rows) else op_local
        op_local = op_local - op_local[starts_at]
    else:
        # the k-th data call of its thread is in operation k // n; a sync joins the data call before it
        op_local = within // max(n, 1)
    op_local = np.where(within >= 0, op_local, -1)
    keep = op_local >= 0
    thread = np.cumsum(new_thread) - 1
    frame = pd.DataFrame({"op": thread[keep] * (several.MOST_CALLS * 1_000) + op_local[keep],
                          "start": start[rows][keep], "end": end[rows][keep], "tid": t[keep],
                          "data": is_data[keep]})
    return _grouped(frame, need_data=True)


def _grouped(frame: pd.DataFrame, need_data: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if frame.empty:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    agg = {"start": ("start", "min"), "end": ("end", "max"), "tid": ("tid", "first")}
    if need_data:
        agg["data"] = ("data", "sum")
    per = frame.groupby("op").agg(**agg)
    if need_data:
        per = per[per["data"] > 0]
    return _sorted(per["start"].to_numpy(np.int64), per["end"].to_numpy(np.int64), per["tid"].to_numpy(np.int64))


def _sorted(start: np.ndarray, end: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.lexsort((start, tid))
    return start[order].astype(np.int64), end[order].astype(np.int64), tid[order].astype(np.int64)
