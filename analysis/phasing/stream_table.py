"""The phase table from events read block by block: the one place it is computed
(phase_table.table is this over a table held in memory, as one block).

    table = stream_table.table(assigned)     # assigned.blocks(): (events_block, assigned_block) pairs

`assigned.blocks()` yields consecutive rows of the events and of stream_assign's result, in
time order, and can be called again for another pass. The per-phase sums are reduced here
block by block and the rows made from them by phase_table.phase_rows and phase_table.finish.
Every sum of nanoseconds is an integer, the same whatever the blocks. Memory: arrays per
phase, per phase and thread (the pattern's first PATTERN_SAMPLE steps of each thread, the
threads of a phase), per distinct record size of a phase, per request in flight of an
asynchronous phase; never per event.

Passes: 1. every per-phase sum, and each timed call's latency kept for the exact percentiles
(analysis/phasing/latency_store.py: in memory up to a budget, in temporary files past it);
2. what needs a phase's counts or window (the timed fsync and close; the time in other targets;
the requests in flight). (A source that does not know its phase count gets a pass 0 to count them.)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import latency_store, phase_table as pt, phases as ph
from iowitness.analysis.phasing.fault_spans import FaultSpans
from iowitness.analysis.phasing.late_calls import LateCalls
from iowitness.analysis.phasing.stream_windows import Windows, data_rows, i64
from iowitness.analysis.read import distinct
from iowitness.collector.format.traceformat import async_ops, ops_of_kind

PERCENTS = [50, 90, 99, 99.9]
I64 = np.iinfo(np.int64)


def table(assigned, rider=None) -> pd.DataFrame:
    """phase_table.table(events, assigned), from assigned.blocks() (see the module's docstring).

    `rider`: a callable given the finished table (to read, not to change) that returns something
    with .add(events, a), fed one whole pass over the blocks after pass 2
    (analysis/measure/stream_full.py: what every form shows besides the table)."""
    counted = getattr(assigned, "phase_count", None)   # stream_assign knows it: no pass for it
    slots = counted + 1 if counted is not None else 1
    for _, a in assigned.blocks() if counted is None else ():
        if len(a):
            slots = max(slots, int(a["phase"].to_numpy().max()) + 1)
    if slots < 2:
        empty = pd.DataFrame(columns=pt.COLUMNS)
        _ride_alone(assigned, rider, empty)
        return empty
    acc = _Sums(slots)
    try:
        for e, a in assigned.blocks():
            acc.add(e, a)
        s = acc.sums()
        # the percentiles from the latencies gathered in pass 1: no pass of their own
        pct = acc.latencies.percentiles(PERCENTS, (acc.t_count, acc.t_lo, acc.t_hi))
    finally:
        acc.latencies.close()
    # a first table without the latency mean and percentiles: its windows drive pass 2
    s["lat_sum"], s["percentiles"] = np.zeros(len(s["phases"])), [[np.nan] * 4] * len(s["phases"])
    rows = pt.phase_rows(s)
    late = Windows(s, rows, {name: acc.late_calls.found(name, s["phases"]) for name in LateCalls.KINDS})
    flights: list = []

    def in_flight(wanted):   # asked once: it closes the windows' depth counts
        if not flights:
            flights.append(late.in_flight(wanted))
        return flights[0]

    if late.needs_pass():   # else the timed fsync and close came with pass 1: no pass 2
        for e, a in assigned.blocks():
            late.add(e, a)
    s["lat_sum"] = s["t_sum"] / 1e3   # µs, as the minimum and maximum
    s["percentiles"] = [pct[p] for p in s["phases"]]
    finished = _finished(s, rows_of(s, late, in_flight), acc)
    # the rider is given the finished table, not a second one finished without the latency
    # mean and percentiles as before (which it never read): a finish fewer, 0.3 CPU-s at 10 M events
    _ride_alone(assigned, rider, finished)
    return finished


def rows_of(s: dict, late: Windows, in_flight) -> pd.DataFrame:
    """The phases' rows of the sums `s` with pass 2's figures."""
    rows = pt.phase_rows(s)
    rows["sync_end_ns"], rows["close_end_ns"] = late.first_after("sync"), late.first_after("close")
    pt.async_columns(rows, in_flight)
    rows["other_targets_ns"] = late.other_targets(rows)
    return rows


def _finished(s: dict, rows: pd.DataFrame, acc) -> pd.DataFrame:
    return pt.finish(rows, s, acc.cuts)


def _ride_alone(assigned, rider, table: pd.DataFrame) -> None:
    if rider is not None:
        riding = rider(table)
        for e, a in assigned.blocks():
            riding.add(e, a)


def _counted(phase: np.ndarray, size: np.ndarray, fault: np.ndarray):
    """((phase, size, fault), calls) for each distinct triple: one sort of an int64 key when the
    sizes allow it (np.unique over stacked columns sorts row by row: 1.4 s per Mi calls)."""
    if len(size) and 0 <= size.min() and size.max() < 1 << 30:
        keys, calls = distinct.unique((phase << 31) | (size << 1) | fault.astype(np.int64), return_counts=True)
        return zip(zip((keys >> 31).tolist(), ((keys >> 1) & ((1 << 30) - 1)).tolist(), (keys & 1).tolist()),
                   calls.tolist())
    keys, calls = np.unique(np.stack([phase, size, fault.astype(np.int64)]), axis=1, return_counts=True)
    return zip(map(tuple, keys.T.tolist()), calls.tolist())


def _add_at(target: np.ndarray, index: np.ndarray, values=None) -> None:
    """np.add.at(target, index, values) of an int64 `target` (values: 1 each when None; a mask:
    1 for each true one), counts by np.bincount: 5-10x faster. Other values' float64 sums by
    np.bincount are exact while every partial sum is an integer below 2^53 (said by the values'
    largest magnitude times their count), else np.add.at; signed integers go to np.add.at."""
    if values is None:
        target += np.bincount(index, minlength=len(target))[:len(target)]
        return
    values = np.asarray(values)
    if values.dtype == bool:
        target += np.bincount(index[values], minlength=len(target))[:len(target)]
        return
    # integers: np.add.at, exact, and faster than the weighted bincount in numpy 2 (2.7-4.9 ms
    # against 4.5-8.7 ms per Mi calls, with no bounds to check)
    if values.dtype.kind == "i" or (len(values) and max(abs(int(values.min())), abs(int(values.max())))
                                     * len(values) >= 1 << 53):
        np.add.at(target, index, values)
        return
    target += np.bincount(index, weights=values, minlength=len(target))[:len(target)].astype(np.int64)


class _Sums:
    """Pass 1: every figure that is a sum, a minimum, a maximum or a first value per phase."""

    SLOT = ("calls_in", "errors", "fsyncs", "fsync_ns", "openclose_ns", "all_calls_ns", "warmup_ops", "fill_ops",
            "fill_bytes", "seeks", "opens", "open_flags", "ops", "read_ops", "bytes", "read_bytes", "data_ns", "short",
            "positioned_ops", "timed", "async_ops", "faults", "fault_bytes", "major_faults",
            "steps", "sequential", "same", "backward", "t_count", "t_sum")

    def __init__(self, slots: int):
        self.slots, self.rows_seen = slots, 0
        for name in self.SLOT:
            setattr(self, name, np.zeros(slots, dtype=np.int64))
        self.first_ns, self.last_ns = np.full(slots, I64.max), np.zeros(slots, dtype=np.int64)
        self.data_first_ns, self.data_last_ns = np.full(slots, I64.max), np.full(slots, I64.min)
        self.size_min, self.size_max = np.full(slots, I64.max), np.full(slots, I64.min)
        self.lo, self.hi = np.full(slots, I64.max), np.full(slots, I64.min)
        self.t_lo, self.t_hi = np.full(slots, I64.max), np.full(slots, -1, dtype=np.int64)
        self.transfer_min = np.ones(slots, dtype=np.int64)
        self.lat_min, self.lat_max = np.full(slots, np.inf), np.full(slots, -np.inf)
        # first call of each phase, and first data call: who, where
        self.first_seen = np.zeros(slots, dtype=bool)
        self.first_tgid, self.first_tid = np.zeros(slots, np.int64), np.zeros(slots, np.int64)
        self.path = [""] * slots
        self.d_seen = np.zeros(slots, dtype=bool)
        self.tgid, self.tid = np.zeros(slots, np.int64), np.zeros(slots, np.int64)
        self.operation, self.size_first = np.zeros(slots, np.int64), np.zeros(slots, np.int64)
        self.thread_keys = np.empty(0, dtype=np.int64)           # slot << 32 | tid
        self.sizes: dict[int, dict[tuple[int, bool], int]] = {}  # phase -> (size, fault) -> calls
        # (phase, tid) -> [offset, end, sample steps, sample flags, sampled]
        self.streams: dict[tuple[int, int], list] = {}
        self.cuts: dict[str, list[int]] = {}
        self.latencies = latency_store.Latencies(slots)
        self.late_calls = LateCalls(slots)
        self.fault_spans = FaultSpans()

    def add(self, e: pd.DataFrame, a: pd.DataFrame) -> None:
        n = len(e)
        if not n:
            return
        kinds = ph.call_kinds(e["syscall"])
        slot = np.maximum(a["phase"].to_numpy(), 0)
        latency, ret = i64(e["latency_ns"].to_numpy()), e["ret"].to_numpy().astype(np.int64)
        warm = ph.uncounted(a)
        fill = a["fill"].to_numpy() if "fill" in a else np.zeros(n, dtype=bool)
        tid = e["tid"].to_numpy().astype(np.int64)
        tgid = e["tgid"].to_numpy().astype(np.int64)
        flags = e["flags"].to_numpy().astype(np.int64)

        def count(target, mask):
            _add_at(target, slot[mask])

        self.calls_in += np.bincount(slot, minlength=self.slots)
        count(self.errors, ret < 0)
        sync, close = kinds == ph.SYNC, kinds == ph.CLOSE
        opens = (kinds == ph.OPEN) | (kinds == ph.CREAT)
        count(self.fsyncs, sync)
        _add_at(self.fsync_ns, slot[sync], latency[sync])
        _add_at(self.openclose_ns, slot[opens | close], latency[opens | close])
        _add_at(self.all_calls_ns, slot, latency)
        count(self.warmup_ops, warm & ~fill)
        count(self.fill_ops, fill)
        _add_at(self.fill_bytes, slot[fill], np.maximum(ret[fill], 0))
        start, end = i64(e["start_ns"].to_numpy()), i64(e["end_ns"].to_numpy())
        np.minimum.at(self.first_ns, slot, start)
        np.maximum.at(self.last_ns, slot, end)
        count(self.seeks, ph.named(e["syscall"], ops_of_kind("seek")))
        opened = opens & (ret >= 0)
        count(self.opens, opened)
        np.bitwise_or.at(self.open_flags, slot[opened], flags[opened])
        self.thread_keys = np.union1d(self.thread_keys, distinct.unique((slot << 32) | tid))
        new, at = distinct.unique(slot, return_index=True)
        fresh = ~self.first_seen[new]
        new, at = new[fresh], at[fresh]
        self.first_seen[new] = True
        self.first_tgid[new], self.first_tid[new] = tgid[at], tid[at]
        path = e["path"]
        for p, row in zip(new, at):
            if isinstance(path.dtype, pd.CategoricalDtype):
                code = path.cat.codes.iat[row]
                self.path[p] = str(path.cat.categories[code]) if code >= 0 else ""
            else:
                self.path[p] = str(path.iat[row])
        for path_name, times in pt._truncations(e, kinds).items():
            self.cuts.setdefault(path_name, []).extend(times)
        rows = data_rows(e, a, kinds)
        self.late_calls.add(slot, kinds, start, end, rows)
        self._data(e, a, kinds, rows, slot, latency, ret, tid, tgid, flags)
        self.rows_seen += n

    def _data(self, e, a, kinds, rows, slot, latency, ret, tid, tgid, flags) -> None:
        if not len(rows):
            return
        p = slot[rows]
        fault = ph.named(e["syscall"], ph.FAULTS)[rows]
        ret, lat, tid_d = ret[rows], latency[rows], tid[rows]
        requested = i64(e["requested"].to_numpy()[rows])
        moved = np.where(fault, requested, np.maximum(ret, 0))
        is_read = kinds[rows] == ph.READ
        transfer = ph.named(e["syscall"], ph.TRANSFERS)[rows]
        size = np.where(transfer, np.maximum(ret, 0), requested)
        start, end = i64(e["start_ns"].to_numpy()[rows]), i64(e["end_ns"].to_numpy()[rows])
        offset = i64(e["offset"].to_numpy()[rows])
        for target, values in ((self.ops, None), (self.read_ops, is_read), (self.bytes, moved),
                               (self.read_bytes, np.where(is_read, moved, 0)), (self.data_ns, lat),
                               (self.short, (ret >= 0) & (ret < requested) & ~transfer & ~fault),
                               (self.positioned_ops, ph.named(e["syscall"], ph.POSITIONED)[rows]),
                               (self.timed, ~fault), (self.async_ops, ph.named(e["syscall"], async_ops())[rows]),
                               (self.faults, fault),
                               (self.major_faults, fault & ((flags[rows] & ph.FAULT_MAJOR) != 0))):
            _add_at(target, p, values)   # a mask stays one: counted by np.bincount without weights
        # what the faults mapped, each byte once (a page fault-around mapped and a store then faulted)
        self.fault_spans.add(p[fault], offset[fault], moved[fault])
        np.minimum.at(self.data_first_ns, p, start)
        np.maximum.at(self.data_last_ns, p, end)
        np.minimum.at(self.size_min, p, size)
        np.maximum.at(self.size_max, p, size)
        np.minimum.at(self.transfer_min, p, transfer.astype(np.int64))
        np.minimum.at(self.lo, p, offset)
        np.maximum.at(self.hi, p, offset + moved)
        lat_us = lat / 1e3
        np.minimum.at(self.lat_min, p, np.where(fault, np.inf, lat_us))
        np.maximum.at(self.lat_max, p, np.where(fault, -np.inf, lat_us))
        timed = ~fault
        _add_at(self.t_count, p[timed])
        _add_at(self.t_sum, p[timed], lat[timed])   # integer nanoseconds: the same in any order
        np.minimum.at(self.t_lo, p[timed], lat[timed])
        np.maximum.at(self.t_hi, p[timed], lat[timed])
        self.latencies.add(p[timed], lat[timed])
        new, at = distinct.unique(p, return_index=True)
        fresh = ~self.d_seen[new]
        new, at = new[fresh], at[fresh]
        self.d_seen[new] = True
        self.tgid[new], self.tid[new] = tgid[rows][at], tid_d[at]
        self.operation[new] = a["operation"].cat.codes.to_numpy()[rows][at]
        self.size_first[new] = size[at]
        for (phase, sz, f), c in _counted(p, size, fault):
            mine = self.sizes.setdefault(phase, {})
            mine[(sz, bool(f))] = mine.get((sz, bool(f)), 0) + c
        self._steps(p, tid_d, offset, moved)

    def _steps(self, p, tid, offset, moved) -> None:
        """The pattern's step counts, thread by thread within each phase (phase_table._pattern)."""
        # by phase, then thread: np.lexsort((tid, p)), by one stable sort of the pair when tids fit 32 bits
        order = ph.stable_order_of_few((p << 32) | tid) if len(tid) and 0 <= tid.min() and tid.max() < 1 << 32 \
            else np.lexsort((tid, p))
        p, tid, offset, end = p[order], tid[order], offset[order], (offset + moved)[order]
        prev_offset, prev_end = np.r_[0, offset[:-1]], np.r_[0, end[:-1]]
        first = ph._new_group(p, tid)
        same_stream = ~first
        starts = np.flatnonzero(first)
        bounds = np.r_[starts, len(p)]
        for g, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
            key = (int(p[lo]), int(tid[lo]))
            state = self.streams.get(key)
            if state is not None:
                prev_offset[lo], prev_end[lo], same_stream[lo] = state[0], state[1], True
            else:
                state = self.streams[key] = [0, 0, [], [], 0]
            state[0], state[1] = int(offset[hi - 1]), int(end[hi - 1])
        step = offset - prev_offset
        sequential = offset == prev_end
        for target, flags in ((self.steps, same_stream), (self.sequential, same_stream & sequential),
                              (self.same, same_stream & (step == 0)),
                              (self.backward, same_stream & (step == -moved[order]))):
            _add_at(target, p, flags)
        # the first PATTERN_SAMPLE + 1 calls of each thread of a phase: the phase's sample is
        # taken from them, thread after thread
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            state = self.streams[(int(p[lo]), int(tid[lo]))]
            room = ph.PATTERN_SAMPLE + 1 - state[4]
            if room > 0:
                take = slice(lo, min(hi, lo + room))
                state[2].append(step[take])
                state[3].append(same_stream[take])
                state[4] += take.stop - take.start

    def _sample(self, phases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        by_phase: dict[int, list[int]] = {}
        for phase, tid in sorted(self.streams):
            by_phase.setdefault(phase, []).append(tid)
        out_phase, out_step = [], []
        for phase in phases.tolist():
            steps = np.concatenate([np.concatenate(self.streams[(phase, t)][2]) for t in by_phase[phase]])
            kept = np.concatenate([np.concatenate(self.streams[(phase, t)][3]) for t in by_phase[phase]])
            steps, kept = steps[:ph.PATTERN_SAMPLE + 1], kept[:ph.PATTERN_SAMPLE + 1]
            out_step.append(steps[kept])
            out_phase.append(np.full(int(kept.sum()), phase, dtype=np.int64))
        if not out_step:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return np.concatenate(out_phase), np.concatenate(out_step).astype(np.int64)

    def _histogram(self, phases):
        def histogram(i, calls_only):
            counts: dict[int, int] = {}
            for (size, fault), c in self.sizes[int(phases[i])].items():
                if not (calls_only and fault):
                    counts[size] = counts.get(size, 0) + c
            values = np.array(sorted(counts), dtype=np.int64)
            return values, np.array([counts[v] for v in values.tolist()], dtype=np.int64)
        return histogram

    def sums(self) -> dict:
        for phase, mapped in self.fault_spans.bytes().items():
            self.fault_bytes[phase] = mapped
        present = np.flatnonzero(self.calls_in)
        present = present[present > 0]
        phases = np.flatnonzero(self.ops)
        phases = phases[phases > 0].astype(np.int64)
        threads = np.bincount(self.thread_keys >> 32, minlength=self.slots)
        s = {name: getattr(self, name)[present] for name in (
            "errors", "fsyncs", "fsync_ns", "openclose_ns", "all_calls_ns", "warmup_ops", "fill_ops",
            "fill_bytes", "first_ns", "last_ns", "seeks", "opens", "open_flags", "first_tgid", "first_tid")}
        s.update(present=present, threads=threads[present], path=[self.path[p] for p in present], phases=phases)
        for name in ("ops", "read_ops", "bytes", "read_bytes", "data_ns", "data_first_ns", "data_last_ns",
                     "tgid", "tid", "operation", "short", "positioned_ops", "size_first", "size_min", "size_max",
                     "lat_min", "lat_max", "timed", "async_ops", "faults", "fault_bytes", "major_faults", "lo", "hi",
                     "t_sum"):
            s[name] = getattr(self, name)[phases]
        s["operation"] = s["operation"].astype(np.int8)
        s["all_transfers"] = self.transfer_min[phases] == 1
        s["histogram"] = self._histogram(phases)
        counts = pd.DataFrame({name: getattr(self, name)[phases]
                               for name in ("steps", "sequential", "same", "backward")},
                              index=pd.Index(phases, name="phase"))
        s["pattern"] = pt.pattern_rule(counts, *self._sample(phases))
        return s




class _OneBlock:
    def __init__(self, events: pd.DataFrame, assigned: pd.DataFrame):
        self._pair = (events, assigned)

    def blocks(self):
        yield self._pair


def of_frame(events: pd.DataFrame, assigned: pd.DataFrame | None = None) -> pd.DataFrame:
    """`table` of an events table held in memory, as one block (its per-event phases from
    stream_assign.of_frame unless given)."""
    from iowitness.analysis.phasing import stream_assign

    return table(_OneBlock(events, stream_assign.of_frame(events) if assigned is None else assigned))
