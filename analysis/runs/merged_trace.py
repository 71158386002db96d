"""Several hosts' traces as one: each trace's events moved to the common wall clock and merged
in time order, block by block, so that phases of different hosts can be grouped, compared or
pooled as on one machine, whatever the traces' sizes.

Each trace's monotonic times are moved by the wall-clock offset it measured when recording
began (`clock_start.offset_ns`), less the earliest trace's, so times stay positive. Process
numbers of different hosts can be equal: host k's are then moved up by k << 22 (above Linux's
largest pid_max, 2^22). Op and fact-kind numbers are matched by name. The device view (BLOCK
records) is left out: each host's device is its own, and is in each host's own report.

    with merged_trace.open_merged([("A.iwt", a), ("B.iwt", b)], argv, "cluster") as merged:
        merged.trace.report()    # every host's phases on one clock, built block by block
        merged.where[k]          # how host k's times and process numbers were moved (Placement)

`a` and `b` are the hosts' traces as analysis/read/stream_events.py opens them (their `source`).
Memory: a block of each host's at a time, and the merged trace's facts; the rows of one host
that start after another host's latest are held until that host's next block comes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from iowitness.analysis.read.trace_view import TraceView
from iowitness.analysis.runs.dataset import clock_offset_ns
from iowitness.collector.format.tracereader import TraceData
from iowitness.errors import UsageError

PID_SHIFT = 22


@dataclass
class Placement:
    shift_ns: int    # added to the host's times
    lift: int        # added to its process and thread numbers


class MergedTrace(TraceView):
    """The hosts' traces as one trace without an events table: meta, facts, files and processes
    of every host on the common clock; its events are the MergedSource's blocks."""

    def __init__(self, data: TraceData, event_count: int):
        super().__init__(data)
        self._event_count = event_count

    @property
    def event_count(self) -> int:
        return self._event_count


class MergedSource:
    """Every host's events on one clock as a source of blocks (what analysis/measure/stream_full.py
    reads): the rows of each host's blocks moved (Placement, op numbers), merged in time order;
    at equal start times the earlier host's rows first."""

    straggler_count = 0   # each host's source puts its own stragglers in order

    def __init__(self, sources: list, data: TraceData, where: list[Placement], op_maps: list[np.ndarray]):
        self._sources, self.where, self._op_maps = sources, where, op_maps
        self.trace = MergedTrace(data, sum(s.event_count for s in sources))
        self.meta, self.trace_data = data.meta, data
        self.block_rows = sources[0].block_rows
        ops = [_moved_ops(op_map, s.distinct["op"]) for op_map, s in zip(op_maps, sources)]
        self._distinct = {"op": np.unique(np.concatenate(ops)),
                          "dev": np.unique(np.concatenate([s.distinct["dev"] for s in sources]))}

    @property
    def event_count(self) -> int:
        return self.trace.event_count

    def blocks(self):
        """The merged events table, block by block (a new pass each call)."""
        given = 0
        for merged in in_time_order([self._moved(k) for k in range(len(self._sources))]):
            # a merge can give several hosts' blocks at once: handed on a block's worth at a time
            for at in range(0, len(merged["start_ns"]), self.block_rows):
                raw = {name: column[at:at + self.block_rows] for name, column in merged.items()}
                index = pd.RangeIndex(given, given + len(raw["start_ns"]))
                given += len(index)
                yield self.trace.event_frame(raw, index, distinct=self._distinct)
        if not given:
            yield self.empty()

    def empty(self) -> pd.DataFrame:
        return self.trace.event_frame(self._sources[0].empty_raw(), pd.RangeIndex(0), distinct=self._distinct)

    def _moved(self, k: int):
        """Host k's raw event columns, block by block, on the common clock and numbers."""
        place, op_map = self.where[k], self._op_maps[k]
        shift = np.uint64(place.shift_ns)
        for raw in self._sources[k].raw_blocks():
            moved = dict(raw)
            moved["start_ns"] = raw["start_ns"] + shift
            if place.lift:
                for name in ("tgid", "tid"):
                    moved[name] = raw[name] + raw[name].dtype.type(place.lift)
            moved["op"] = op_map[raw["op"].astype(np.int64)].astype(raw["op"].dtype)
            yield moved

    def close(self) -> None:
        pass   # the hosts' sources are their opener's to close


def in_time_order(hosts: list) -> Iterator[dict]:
    """Merge the hosts' raw blocks (each host's in time order) into one stream in time order.
    A row is given once no host can still bring an earlier one: rows starting before the
    smallest last start among the hosts not yet read to the end. A host whose pending rows all
    reach that bound is read on (its next block may start at the same time: those rows come
    before a later host's of that time)."""
    pending: list = [None] * len(hosts)
    done = [False] * len(hosts)
    while True:
        for k, blocks in enumerate(hosts):
            while not done[k] and (pending[k] is None or not len(pending[k]["start_ns"])):
                pending[k] = next(blocks, None)
                done[k] = pending[k] is None
        reading = [k for k in range(len(hosts)) if not done[k]]
        if not reading:
            bound = None
        else:
            bound = min(int(pending[k]["start_ns"][-1]) for k in reading)
        parts, stuck = [], []
        for k, rows in enumerate(pending):
            if rows is None or not len(rows["start_ns"]):
                continue
            cut = len(rows["start_ns"]) if bound is None else int(np.searchsorted(rows["start_ns"], bound, "left"))
            if cut:
                parts.append({name: column[:cut] for name, column in rows.items()})
                pending[k] = {name: column[cut:] for name, column in rows.items()}
            if bound is not None and not done[k] and int(rows["start_ns"][-1]) == bound:
                stuck.append(k)
        if parts:
            out = parts[0] if len(parts) == 1 else {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
            if len(parts) > 1:   # stable: at equal start times, the parts' (the hosts') order
                order = np.argsort(out["start_ns"], kind="stable")
                out = {name: column[order] for name, column in out.items()}
            yield out
        if bound is None:
            return
        for k in stuck:   # its rows at the bound wait for those of its next block at the bound
            more = next(hosts[k], None)
            if more is None:
                done[k] = True
            elif len(more["start_ns"]):
                pending[k] = {name: np.concatenate([pending[k][name], more[name]]) for name in more}


def _moved_ops(op_map: np.ndarray, ops: np.ndarray) -> np.ndarray:
    return op_map[ops.astype(np.int64)].astype(ops.dtype) if len(ops) else ops


@contextmanager
def open_merged(traces: list, argv: list[str], mode: str, stretches: bool = True):
    """The (path, trace) pairs (traces opened block by block: analysis/read/stream_events.py) as
    one MergedSource on the common clock, with `argv` as its command and `mode` as its recording
    mode; its report is built block by block when first asked for (trace.report()) and valid
    until the `with` ends. `stretches`: as stream_full.open_report's (False: no stretch table)."""
    from iowitness.analysis.measure import stream_full

    sources = [t.source for _, t in traces]
    data, where, op_maps = merged_data([(p, s.trace_data) for (p, _), s in zip(traces, sources)],
                                       [s.processes for s in sources], argv, mode)
    merged = MergedSource(sources, data, where, op_maps)
    with stream_full.report_of(merged, "", stretches=stretches):
        yield merged


def merged_data(datas: list[tuple[str, TraceData]], processes: list[set[int]], argv: list[str], mode: str
                ) -> tuple[TraceData, list[Placement], list[np.ndarray]]:
    """What the merged trace holds besides its events (meta, facts, op and kind names, counters),
    where each host went, and each host's table from its op numbers to the merged ones.
    `processes`: each host's process numbers in its events (two hosts' may be equal)."""
    names = [list(d.event_dtype.names or ()) for _, d in datas]
    if any(n != names[0] for n in names):
        raise UsageError("the hosts' traces were recorded by different iowitness versions (their events have "
                         "different fields): record every host with one version")
    offsets = [clock_offset_ns(d.meta) for _, d in datas]
    if any(o is None for o in offsets):
        missing = [p for (p, _), o in zip(datas, offsets) if o is None]
        raise UsageError(f"{', '.join(missing)}: the trace has no wall-clock offset (clock_start), so it cannot be "
                         "put on one clock with the others")
    base = min(o for o in offsets if o is not None)
    collide = any(processes[i] & processes[j] for i in range(len(processes)) for j in range(i))
    first = datas[0][1]
    op_number = {name: number for number, name in first.ops.items()}
    kind_number = {name: number for number, name in first.meta_kinds.items()}
    facts, where, op_maps = [], [], []
    for k, ((_, data), offset) in enumerate(zip(datas, offsets)):
        shift = int(offset or 0) - base
        lift = (k << PID_SHIFT) if collide else 0
        where.append(Placement(shift, lift))
        op_maps.append(_renumber(data.ops, op_number))
        f = data.facts.copy()
        f["ts_ns"] += np.uint64(shift)
        f["kind"] = _renumber(data.meta_kinds, kind_number)[f["kind"].astype(np.int64)].astype(f["kind"].dtype)
        if lift:
            f["tgid"] += f["tgid"].dtype.type(lift)
            f["parent_tgid"] += f["parent_tgid"].dtype.type(lift)
        facts.append(f)
    counters: dict = {}
    for _, data in datas:
        for name, value in data.counters.items():
            if isinstance(value, int):
                counters[name] = counters.get(name, 0) + value
    meta = dict(first.meta)
    # the benchmark as the command line says (report.benchmark_of), not as the first host recorded it
    meta.update(command=argv, benchmark=None, mode=mode,
                attached=[], clock_start={"offset_ns": base, "monotonic_ns": 0, "realtime_ns": base},
                targets=[t for _, d in datas for t in d.meta.get("targets") or []],
                files=[f for _, d in datas for f in d.meta.get("files") or []])
    no_events = {name: np.empty((0, *first.event_dtype.fields[name][0].shape), first.event_dtype.fields[name][0].base)
                 for name in names[0] if not name.startswith("pad")}
    data = TraceData(meta, no_events, first.event_dtype, np.concatenate(facts),
                     {n: name for name, n in op_number.items()}, {n: name for name, n in kind_number.items()},
                     {"stdout": "", "stderr": ""}, counters)
    return data, where, op_maps


def _renumber(numbers: dict, into: dict) -> np.ndarray:
    """A table from one trace's numbers (ops, fact kinds) to the merged trace's, by name;
    names the first trace did not have get new numbers."""
    table = np.arange(max(list(numbers) + [0]) + 1, dtype=np.int64)
    for number, name in numbers.items():
        if name not in into:
            into[name] = max(list(into.values()) + [0]) + 1
        table[number] = into[name]
    return table


def phases_of(trace, place: Placement, host_rows: pd.DataFrame) -> pd.DataFrame:
    """The merged trace's phases that are `host_rows` (phases of the host placed by `place`):
    the same thread and the same first data call, moved as the host's events were."""
    table = trace.report().phases
    keys = set(zip((host_rows["tid"].astype(np.int64) + place.lift).tolist(),
                   (host_rows["data_first_ns"].astype(np.int64) + place.shift_ns).tolist()))
    mine = [(int(t), int(f)) in keys for t, f in zip(table["tid"], table["data_first_ns"])]
    return table[np.array(mine, dtype=bool)] if len(table) else table
