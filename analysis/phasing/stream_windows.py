"""Pass 2 of analysis/phasing/stream_table.py: the figures that need a phase's sums or window first.

- the timed fsync and close: the first one that starts after the phase's last data call;
- requests in flight (analysis/phasing/inflight.py) of the phases with asynchronous requests;
- each phase's time in its thread's calls on other targets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import inflight, phase_table as pt, phases as ph

I64 = np.iinfo(np.int64)


def i64(values) -> np.ndarray:
    """The probe's u64 times and sizes as the int64 the table keeps (as astype would)."""
    values = np.asarray(values)
    return values.view(np.int64) if values.dtype == np.uint64 else values.astype(np.int64, copy=False)


def data_rows(e: pd.DataFrame, a: pd.DataFrame, kinds: np.ndarray) -> np.ndarray:
    """The block's rows that are data calls of a phase, not warm-ups or fills (phase_table.table's d_rows)."""
    return np.flatnonzero(ph._is_data(kinds) & ~ph.uncounted(a) & (a["phase"].to_numpy() > 0))


def _groups(key: np.ndarray):
    """(key, rows) for each key of a block, rows in time order."""
    order = ph.stable_order(key) if len(key) else key
    bounds = np.flatnonzero(ph._new_group(key[order]))
    for lo, hi in zip(bounds, np.r_[bounds[1:], len(order)]):
        yield int(key[order[lo]]), order[lo:hi]


class _Union:
    """Length of the union of intervals given in order of their starts."""

    def __init__(self):
        self.end, self.length = I64.min, 0

    def add(self, start: np.ndarray, end: np.ndarray) -> None:
        reach = np.maximum.accumulate(np.r_[self.end, end])
        self.length += int(np.maximum(end - np.maximum(start, reach[:-1]), 0).sum())
        self.end = int(reach[-1])


class _Depth:
    """Requests in flight at each submission (inflight._sweep: ends before starts at one time)."""

    def __init__(self):
        self.ends = np.empty(0, np.int64)      # in flight at the last submission counted
        self.held = (np.empty(0, np.int64), np.empty(0, np.int64))
        self.depth_max, self.in_calls, self.first, self.last = I64.min, 0, I64.max, I64.min
        self.buckets = np.zeros(len(inflight.DEPTH_BUCKETS) + 1, dtype=np.int64)

    def add(self, start: np.ndarray, end: np.ndarray, final: bool = False) -> None:
        self.in_calls += int((end - start).sum())
        if len(start):
            self.first, self.last = min(self.first, int(start.min())), max(self.last, int(end.max()))
        start, end = np.r_[self.held[0], start], np.r_[self.held[1], end]
        # a request starting at the last time seen may share it with the next block's, whose
        # ends at that time come first: keep them for then
        cut = len(start) if final or not len(start) else int(np.searchsorted(start, start[-1], side="left"))
        self.held = (start[cut:], end[cut:])
        start, end = start[:cut], end[:cut]
        if not len(start):
            return
        ended = np.sort(np.r_[self.ends, end])
        depth = len(self.ends) + np.arange(1, len(start) + 1) - np.searchsorted(ended, start, side="right")
        self.depth_max = max(self.depth_max, int(depth.max()))
        self.buckets += np.bincount(inflight.bucket_of(depth) + 1, minlength=len(self.buckets))
        self.ends = ended[ended > start[-1]]


class Windows:
    def __init__(self, s: dict, rows: pd.DataFrame, known: dict | None = None):
        """`known`: {"sync": ..., "close": ...}, each {phase: end} when already found in pass 1
        (analysis/phasing/late_calls.py), or None to find them here."""
        self.after = rows["data_last_ns"]
        known = known or {}
        self.late = {name: dict(known[name]) if known.get(name) is not None else {} for name in ("sync", "close")}
        self.searched = [name for name in ("sync", "close") if known.get(name) is None]
        self.wanted = rows.index[rows["async_ops"] > 0].to_numpy(np.int64)
        self.data_union = {int(p): _Union() for p in self.wanted}
        self.all_union = {int(p): _Union() for p in self.wanted}
        self.depth = {int(p): _Depth() for p in self.wanted}
        # other targets: the phases of threads whose phases overlap
        self.sub = pt.thread_phases(rows)
        self.threads = np.unique(self.sub["tid"].to_numpy(np.int64))
        self.phase_tid = np.full(int(rows.index.max()) + 1, -1, dtype=np.int64)
        self.phase_tid[self.sub.index.to_numpy(np.int64)] = self.sub["tid"].to_numpy(np.int64)
        self.in_window = np.zeros(len(self.sub), dtype=np.int64)
        self.own = np.zeros(len(self.phase_tid), dtype=np.int64)
        self.previous: dict[int, tuple[int, int]] = {}   # tid -> (start, latency) of its last call

    def add(self, e: pd.DataFrame, a: pd.DataFrame) -> None:
        if not len(e):
            return
        kinds = ph.call_kinds(e["syscall"])
        phase = a["phase"].to_numpy()
        slot = np.maximum(phase, 0)
        start, end = i64(e["start_ns"].to_numpy()), i64(e["end_ns"].to_numpy())
        rows = data_rows(e, a, kinds)
        for name, kind in (("sync", ph.SYNC), ("close", ph.CLOSE)):
            if name not in self.searched:
                continue
            at = np.flatnonzero(kinds == kind)
            found = pt.first_late(slot[at], e["start_ns"].to_numpy()[at], e["end_ns"].to_numpy()[at], self.after)
            for p, value in found.items():   # blocks come in time order: the first block's is the first
                self.late[name].setdefault(p, value)
        if len(self.wanted):
            for p, mine in _groups(phase[rows]):
                if p in self.depth:
                    d = rows[mine]
                    self.data_union[p].add(start[d], end[d])
                    self.depth[p].add(start[d], end[d])
            for p, mine in _groups(phase):
                if p in self.all_union:
                    self.all_union[p].add(start[mine], end[mine])
        if len(self.threads):
            self._targets(e, slot, start)

    def needs_pass(self) -> bool:
        """Whether add() has anything to count: a timed fsync or close not found in pass 1,
        a phase with asynchronous requests, a thread whose phases overlap."""
        return bool(self.searched) or bool(len(self.wanted)) or bool(len(self.threads))

    def _targets(self, e, slot, start) -> None:
        tid = e["tid"].to_numpy().astype(np.int64)
        latency = i64(e["latency_ns"].to_numpy())
        lo, hi = self.sub["first_ns"].to_numpy(np.int64), self.sub["last_ns"].to_numpy(np.int64)
        p_tid = self.sub["tid"].to_numpy(np.int64)
        for t, mine in _groups(np.where(np.isin(tid, self.threads), tid, -1)):
            if t < 0:
                continue
            s_start, s_lat = start[mine], latency[mine]
            before = self.previous.get(t)
            if before is None:
                counted = pt.once(np.full(len(mine), t), s_start, s_lat)
            else:
                counted = pt.once(np.full(len(mine) + 1, t), np.r_[before[0], s_start], np.r_[before[1], s_lat])[1:]
            self.previous[t] = (int(s_start[-1]), int(s_lat[-1]))
            cum = np.r_[0, np.cumsum(counted)]
            of = np.flatnonzero(p_tid == t)
            self.in_window[of] += cum[np.searchsorted(s_start, hi[of])] - cum[np.searchsorted(s_start, lo[of])]
            sl = slot[mine]
            own = self.phase_tid[np.minimum(sl, len(self.phase_tid) - 1)] == t
            own &= sl < len(self.phase_tid)
            np.add.at(self.own, sl[own], s_lat[own])

    def first_after(self, name: str) -> pd.Series:
        out = pd.Series(0, index=self.after.index, dtype=np.int64)
        found = pd.Series(self.late[name], dtype=np.int64) if self.late[name] else pd.Series(dtype=np.int64)
        out.loc[found.index.intersection(out.index)] = found.astype(np.int64)
        return out

    def in_flight(self, wanted):
        index = pd.Index(self.wanted)
        data = pd.Series([self.data_union[p].length for p in self.wanted], index=index, dtype=np.int64)
        every = pd.Series([self.all_union[p].length for p in self.wanted], index=index, dtype=np.int64)
        for p in self.wanted:
            self.depth[p].add(np.empty(0, np.int64), np.empty(0, np.int64), final=True)
        d = [self.depth[p] for p in self.wanted]
        counts = pd.DataFrame(np.array([x.buckets[1:] for x in d], dtype=np.int64), index=index,
                              columns=range(len(inflight.DEPTH_BUCKETS)))
        depth = inflight.depth_frame(pd.Series([x.depth_max for x in d], index=index, dtype=np.int64),
                                     pd.Series([x.in_calls for x in d], index=index, dtype=np.int64),
                                     pd.Series([x.last - x.first for x in d], index=index, dtype=np.int64), counts)
        return data, depth, every

    def other_targets(self, rows: pd.DataFrame) -> pd.Series:
        out = pd.Series(0, index=rows.index, dtype=np.int64)
        if len(self.sub):
            own = self.own.astype(np.float64)[self.sub.index.to_numpy(np.int64)]
            out.loc[self.sub.index] = np.maximum(self.in_window - own, 0).astype(np.int64)
        return out
