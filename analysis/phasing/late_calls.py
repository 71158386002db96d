"""Each phase's timed fsync and close found in the sums pass (analysis/phasing/stream_table.py pass 1),
so that a trace needing nothing else of pass 2 (no asynchronous phase, no thread whose phases
overlap) skips that pass over the blocks.

    late = LateCalls(slots)
    for events, a in assigned.blocks():           # in time order
        late.add(slot, kinds, start, end, data)   # data: the block's rows that are data calls
    late.found("sync", phases)                    # {phase: end of its timed fsync}, or None

The figure is stream_windows.Windows.first_after's: per phase, the end of the first fsync
(close) of the phase that starts at or after the end of its last data call. That last end is
known only after the last block; what is kept meanwhile, per phase and kind, is the first call
starting at or after the phase's last data end so far (the candidate) and the first call at the
latest start seen (the tie). A later data call ending past the candidate's start removes it;
then only a call starting exactly there can stand (blocks come in start order, so every earlier
call started at or before that data call), and that is the tie. Memory: a few integers per phase.
A block out of start order (not expected of the reader) makes `found` None: the caller then
counts them in pass 2 as before.
"""

from __future__ import annotations

import numpy as np

from iowitness.analysis.phasing import phases as ph
from iowitness.analysis.read import distinct

I64 = np.iinfo(np.int64)


class _Firsts:
    """One kind's candidate and tie per phase."""

    def __init__(self, slots: int):
        self.cand = np.zeros(slots, bool)
        self.cand_start, self.cand_end = np.zeros(slots, np.int64), np.zeros(slots, np.int64)
        self.tie = np.zeros(slots, bool)
        self.tie_start, self.tie_end = np.zeros(slots, np.int64), np.zeros(slots, np.int64)

    def add(self, p: np.ndarray, start: np.ndarray, end: np.ndarray, data_end: np.ndarray) -> None:
        # the candidates still at or after their phase's last data end
        died = self.cand & (self.cand_start < data_end)
        if died.any():
            by_tie = died & self.tie & (self.tie_start >= data_end)
            self.cand[died] = False
            self.cand[by_tie] = True
            self.cand_start[by_tie], self.cand_end[by_tie] = self.tie_start[by_tie], self.tie_end[by_tie]
        if not len(p):
            return
        # phases without one: the block's first call at or after the phase's last data end
        open_ = np.flatnonzero((start >= data_end[p]) & ~self.cand[p])
        if len(open_):
            new, at = distinct.unique(p[open_], return_index=True)
            rows = open_[at]
            self.cand[new] = True
            self.cand_start[new], self.cand_end[new] = start[rows], end[rows]
        # the tie: the first call at the latest start of each phase
        top = np.full(len(self.tie), I64.min)
        np.maximum.at(top, p, start)
        at_top = np.flatnonzero(start == top[p])
        new, at = distinct.unique(p[at_top], return_index=True)
        rows = at_top[at]
        moved = ~self.tie[new] | (self.tie_start[new] < start[rows])
        new, rows = new[moved], rows[moved]
        self.tie[new] = True
        self.tie_start[new], self.tie_end[new] = start[rows], end[rows]


class LateCalls:
    """The timed fsync and close of each phase, from the sums pass (see the module's text)."""

    KINDS = {"sync": ph.SYNC, "close": ph.CLOSE}

    def __init__(self, slots: int):
        self.data_end = np.full(slots, I64.min)
        self.firsts = {name: _Firsts(slots) for name in self.KINDS}
        self.ordered, self._last_start = True, I64.min

    def add(self, slot: np.ndarray, kinds: np.ndarray, start: np.ndarray, end: np.ndarray,
            data: np.ndarray) -> None:
        """One block: `slot` its calls' phases (0: none), `kinds` their call kinds, `start`,
        `end` their times (int64), `data` the positions of its data calls of a phase."""
        if not self.ordered or not len(start):
            return
        if start[0] < self._last_start or (len(start) > 1 and bool((start[1:] < start[:-1]).any())):
            self.ordered = False
            return
        self._last_start = int(start[-1])
        np.maximum.at(self.data_end, slot[data], end[data])
        for name, kind in self.KINDS.items():
            at = np.flatnonzero(kinds == kind)
            self.firsts[name].add(slot[at], start[at], end[at], self.data_end)

    def found(self, name: str, phases: np.ndarray) -> dict[int, int] | None:
        """{phase: the end of its first `name` call at or after its last data call} for `phases`
        (those with data calls), or None when a block came out of start order."""
        if not self.ordered:
            return None
        f = self.firsts[name]
        phases = np.asarray(phases, dtype=np.int64)
        mine = phases[f.cand[phases]]
        return dict(zip(mine.tolist(), f.cand_end[mine].tolist()))
