"""The device view (analysis/device.py) of a trace read block by block: what it needs of the
events, gathered per phase and per thread as the blocks go by, never kept per event.

    facts = stream_device.DeviceFacts(phases, trace)
    for events, a in assigned.blocks():                # stream_assign's blocks, in time order
        facts.add(events, a)
    table = stream_device.per_phase(trace, phases, facts)   # == device.per_phase(trace, phases, assigned)

The device view reads the trace's block and sched_switch records (kept in memory: one per
device request or context switch, far fewer than the calls) and, of the events, only:

  - the processes that made them (their device requests are the benchmark's own);
  - each phase's first device number (the block device under its file);
  - each phase's threads (device_credit.py credits a request to the phases of its submitter);
  - per phase, its calls' time inside its window, the fsyncs' part of it, and for each
    off-CPU stretch of its threads, the call it fell in: a call's work is done in its block,
    against the sched_switch records, so no call is kept.

device.per_phase gathers the same facts from its whole events table as one block, and both
finish with device.from_facts: one source of truth, so the streamed table is the in-memory
one exactly (tests/unit/test_stream_device.py). Every figure summed over calls or stretches is
an integer count of nanoseconds: exact in any order, so the blocks' order of additions does
not matter.

Memory: arrays per phase; per (phase, thread) pair, that thread's off-CPU stretches inside the
phase's window with the call each fell in so far.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phases import SYNC, call_kinds, named, stable_order
from iowitness.collector.traceformat import async_ops

I64 = np.iinfo(np.int64)
TID_BITS = 32


def window(phases: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each phase's window: its first data call to the end of its last call, fsync and close included."""
    a = phases["data_first_ns"].to_numpy(np.int64)
    b = np.maximum.reduce([phases[c].to_numpy(np.int64) for c in ("data_last_ns", "sync_end_ns", "close_end_ns")])
    return a, b


def scheduler_records(trace):
    """The trace's off-CPU stretches (sched_switch), or None when it has none to trust (the probe
    watched every process, so the traced threads' stretches were not kept)."""
    off = getattr(trace, "offcpu", None)
    have = off is not None and (trace.meta.get("device_view") or {}).get("offcpu", True)
    return off if have else None


class _Stretches:
    """One thread's off-CPU stretches inside one phase's window (clipped to it), and the call
    of the phase each one's midpoint falls in so far: the latest-starting call that started
    by then (its start, end and kind)."""

    def __init__(self, off: np.ndarray, on: np.ndarray, state: np.ndarray, lo: int, hi: int):
        self.start, self.end = np.clip(off, lo, hi), np.clip(on, lo, hi)
        self.state = state
        self.mid = (self.start + self.end) // 2
        self.call_start = np.full(len(off), I64.min)
        self.call_end = np.full(len(off), I64.min)
        self.call_kind = np.full(len(off), -1, dtype=np.int64)

    def meet(self, start: np.ndarray, end: np.ndarray, kind: np.ndarray) -> None:
        """A block's calls of this thread in this phase, sorted by start (ties in time order).
        A later block's call is later in time order, so it wins a tie on the start."""
        if not len(self.mid):
            return
        k = np.searchsorted(start, self.mid, side="right") - 1
        at = np.flatnonzero(k >= 0)
        k = k[at]
        later = start[k] >= self.call_start[at]
        at, k = at[later], k[later]
        self.call_start[at], self.call_end[at], self.call_kind[at] = start[k], end[k], kind[k]


class DeviceFacts:
    """What device.from_facts needs of a trace's events, fed block by block (module docstring).

    phases: the phase table the view is made for (its windows, threads, async_ops); trace: for
    its block records (no view without them) and its off-CPU stretches.
    """

    def __init__(self, phases: pd.DataFrame, trace):
        self.phase = phases["phase"].to_numpy(np.int64)
        self.wanted = getattr(trace, "block", None) is not None and len(self.phase) > 0
        self.tgids: set[int] = set()
        self.first_dev: dict[int, int] = {}              # phase -> device number of its first call
        self.thread_keys = np.empty(0, dtype=np.int64)   # (row of the phase) << TID_BITS | tid
        self._slot = np.full(int(self.phase.max(initial=0)) + 1, -1, dtype=np.int64)
        self._slot[self.phase[self.phase >= 0]] = np.flatnonzero(self.phase >= 0)
        self.offcpu = scheduler_records(trace) if self.wanted else None
        self.lo, self.hi = window(phases) if len(self.phase) else (np.empty(0, np.int64),) * 2
        self.queued = (phases["async_ops"].to_numpy() > 0 if "async_ops" in phases
                       else np.zeros(len(self.phase), dtype=bool))
        self.in_calls_ns = np.zeros(len(self.phase), dtype=np.int64)
        self.sync_ns = np.zeros(len(self.phase), dtype=np.int64)
        self.stretches: dict[int, _Stretches] = {}      # thread key -> its stretches in the phase's window
        if self.offcpu is not None:
            self._by_thread(self.offcpu)

    @property
    def timed(self) -> bool:
        """Whether the trace's sched_switch records give the threads' time split."""
        return self.offcpu is not None

    def _by_thread(self, off: np.ndarray) -> None:
        """The stretches thread by thread, each thread's in the order they began, with the
        latest end so far: those that can overlap a window [lo, hi) lie between the first whose
        running end passes lo and the first that begins at hi."""
        by_off = np.argsort(off["off_ns"], kind="stable")
        tid = off["tid"][by_off].astype(np.int64)
        by_tid = np.argsort(tid, kind="stable")
        order = by_off[by_tid]
        self._o_off, self._o_on = off["off_ns"][order].astype(np.int64), off["on_ns"][order].astype(np.int64)
        self._o_state = off["state"][order]
        self._o_tids, first = np.unique(tid[by_tid], return_index=True)
        self._o_bounds = np.r_[first, len(order)]
        self._o_ended = np.empty_like(self._o_on)
        for lo, hi in zip(self._o_bounds[:-1], self._o_bounds[1:]):
            self._o_ended[lo:hi] = np.maximum.accumulate(self._o_on[lo:hi])

    def _stretches_of(self, slot: int, tid: int) -> _Stretches:
        lo, hi = self.lo[slot], self.hi[slot]
        k = int(np.searchsorted(self._o_tids, tid))
        if k == len(self._o_tids) or self._o_tids[k] != tid:
            empty = np.empty(0, dtype=np.int64)
            return _Stretches(empty, empty, self._o_state[:0], lo, hi)
        mine = slice(self._o_bounds[k], self._o_bounds[k + 1])
        off, on, ended = self._o_off[mine], self._o_on[mine], self._o_ended[mine]
        first = int(np.searchsorted(ended, lo, side="right"))
        near = slice(first, max(first, int(np.searchsorted(off, hi, side="left"))))
        sel = (on[near] > lo) & (off[near] < hi)
        return _Stretches(off[near][sel], on[near][sel], self._o_state[mine][near][sel], lo, hi)

    def add(self, events: pd.DataFrame, a: pd.DataFrame) -> None:
        """One block of events and of phases.assign's rows for them, the blocks in time order."""
        if not self.wanted or not len(events):
            return
        self.tgids.update(pd.unique(events["tgid"].to_numpy()).tolist())
        phase = a["phase"].to_numpy().astype(np.int64)
        known = (phase >= 0) & (phase < len(self._slot))
        slot = np.where(known, self._slot[np.where(known, phase, 0)], -1)
        rows = np.flatnonzero(slot >= 0)
        if not len(rows):
            return
        slot = slot[rows]
        first = pd.Series(slot).drop_duplicates()   # hashed, in time order: no sort of the block
        dev = events["dev"].to_numpy()[rows[first.index.to_numpy()]]
        for s, d in zip(first.tolist(), dev.tolist()):
            self.first_dev.setdefault(int(self.phase[s]), int(d))
        tid = events["tid"].to_numpy().astype(np.int64)[rows]
        group, keys = pd.factorize((slot << TID_BITS) | tid)
        self.thread_keys = np.union1d(self.thread_keys, keys)
        if self.timed:
            self._calls(events, rows, slot, group, keys)

    def _calls(self, events, rows, slot, group, keys) -> None:
        """Time in calls inside each phase's window, and the call each off-CPU stretch fell in.
        A queued phase's asynchronous requests are no time in a call (device._cpu)."""
        for key in keys.tolist():
            if key not in self.stretches:
                self.stretches[key] = self._stretches_of(key >> TID_BITS, key & ((1 << TID_BITS) - 1))
        syscall = events["syscall"]
        counted = np.flatnonzero(~(self.queued[slot] & named(syscall, async_ops())[rows]))
        if not len(counted):
            return
        # each thread's calls in a phase, sorted by start, ties in time order
        order = counted[stable_order(group[counted].astype(np.int64))]
        start = events["start_ns"].to_numpy(np.int64)[rows]
        g, s = group[order], start[order]
        if np.any((s[1:] < s[:-1]) & (g[1:] == g[:-1])):   # calls out of time order: by start too
            order = counted[np.lexsort((start[counted], group[counted]))]
        rows, slot, g, start = rows[order], slot[order], group[order], start[order]
        kind = call_kinds(syscall)[rows].astype(np.int64)
        end = events["end_ns"].to_numpy(np.int64)[rows]
        in_window = np.clip(np.minimum(end, self.hi[slot]) - np.maximum(start, self.lo[slot]), 0, None)
        bounds = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        # integer sums per thread of a phase (reduceat: no np.add.at per call), added to the phase
        for target, values in ((self.in_calls_ns, in_window), (self.sync_ns, np.where(kind == SYNC, in_window, 0))):
            np.add.at(target, slot[bounds], np.add.reduceat(values, bounds))
        for lo, hi in zip(bounds, np.r_[bounds[1:], len(g)]):
            self.stretches[int(keys[g[lo]])].meet(start[lo:hi], end[lo:hi], kind[lo:hi])


    def thread_pairs(self) -> np.ndarray:
        """(phase, thread id) of every thread of every phase, as the distinct columns np.unique gives."""
        pairs = np.stack([self.phase[self.thread_keys >> TID_BITS], self.thread_keys & ((1 << TID_BITS) - 1)])
        return np.unique(pairs, axis=1)

    def threads(self, i: int) -> int:
        """How many threads the phase in row i has."""
        return int(np.count_nonzero((self.thread_keys >> TID_BITS) == i))

    def off_cpu(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The off-CPU stretches of the phase in row i's threads inside its window: (nanoseconds,
        preempted, inside a call of the phase, inside an fsync of the phase)."""
        mine = self.thread_keys[(self.thread_keys >> TID_BITS) == i].tolist()
        parts = [self.stretches[k] for k in mine]
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty.astype(bool), empty.astype(bool), empty.astype(bool)
        dur = np.concatenate([p.end - p.start for p in parts])
        preempted = np.concatenate([p.state == 0 for p in parts])
        inside = np.concatenate([p.call_end >= p.mid for p in parts])
        in_sync = inside & np.concatenate([p.call_kind == SYNC for p in parts])
        return dur, preempted, inside, in_sync


def per_phase(trace, phases: pd.DataFrame, facts: DeviceFacts) -> pd.DataFrame:
    """device.per_phase(trace, phases, assigned), from the facts of all the blocks of `assigned`."""
    # device.py gathers its facts with DeviceFacts, so it imports this module: imported here
    from iowitness.analysis import device
    return device.from_facts(trace, phases, facts)
