"""Several hosts' traces as one: each trace's events moved to the common wall clock, then
sorted, so that phases of different hosts can be grouped, compared or pooled as on one machine.

Each trace's monotonic times are moved by the wall-clock offset it measured when recording
began (`clock_start.offset_ns`), less the earliest trace's, so times stay positive. Process
numbers of different hosts can be equal: host k's are then moved up by k << 22 (above Linux's
largest pid_max, 2^22). Op and fact-kind numbers are matched by name. The device view (BLOCK
records) is left out: each host's device is its own, and is in each host's own report.

Example: `merged([a, b], argv, "cluster")` is a Trace with both hosts' events; `where[k]` says
how host k's times and process numbers were moved (Placement), to find its phases again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from iowitness.analysis.read.run import Trace
from iowitness.analysis.runs.dataset import clock_offset_ns
from iowitness.collector.format.tracereader import TraceData
from iowitness.errors import UsageError

PID_SHIFT = 22


@dataclass
class Placement:
    shift_ns: int    # added to the host's times
    lift: int        # added to its process and thread numbers


def merged(traces: list[tuple[str, Trace]], argv: list[str], mode: str) -> tuple[Trace, list[Placement]]:
    """One trace of all the (path, trace) pairs' events on the common clock, with `argv` as
    its command and `mode` as its recording mode, and where each trace's events went."""
    datas = [t._data for _, t in traces]
    names = [set(d.columns) for d in datas]
    if any(n != names[0] for n in names):
        raise UsageError("the hosts' traces were recorded by different iowitness versions (their events have "
                         "different fields): record every host with one version")
    offsets = [clock_offset_ns(t.meta) for _, t in traces]
    if any(o is None for o in offsets):
        missing = [p for (p, _), o in zip(traces, offsets) if o is None]
        raise UsageError(f"{', '.join(missing)}: the trace has no wall-clock offset (clock_start), so it cannot be "
                         "put on one clock with the others")
    base = min(offsets)
    pids = [set(np.unique(d.columns["tgid"]).tolist()) for d in datas]
    collide = any(pids[i] & pids[j] for i in range(len(pids)) for j in range(i))
    op_number = {name: number for number, name in datas[0].ops.items()}
    kind_number = {name: number for number, name in datas[0].meta_kinds.items()}
    columns = {name: [] for name in datas[0].columns}
    facts, where = [], []
    for k, (data, offset) in enumerate(zip(datas, offsets)):
        shift = np.uint64(offset - base)
        lift = (k << PID_SHIFT) if collide else 0
        where.append(Placement(int(offset - base), lift))
        op_map = _renumber(data.ops, op_number)
        for name, column in data.columns.items():
            if name == "start_ns":
                column = column + shift
            elif name in ("tgid", "tid"):
                column = column + column.dtype.type(lift)
            elif name == "op":
                column = op_map[column.astype(np.int64)].astype(column.dtype)
            columns[name].append(column)
        f = data.facts.copy()
        f["ts_ns"] += np.uint64(shift)
        f["kind"] = _renumber(data.meta_kinds, kind_number)[f["kind"].astype(np.int64)].astype(f["kind"].dtype)
        if lift:
            f["tgid"] += f["tgid"].dtype.type(lift)
            f["parent_tgid"] += f["parent_tgid"].dtype.type(lift)
        facts.append(f)
    counters: dict = {}
    for data in datas:
        for name, value in data.counters.items():
            if isinstance(value, int):
                counters[name] = counters.get(name, 0) + value
    meta = dict(datas[0].meta)
    # the benchmark as the command line says (report.benchmark_of), not as the first host recorded it
    meta.update(command=argv, benchmark=None, mode=mode,
                attached=[], clock_start={"offset_ns": base, "monotonic_ns": 0, "realtime_ns": base},
                targets=[t for d in datas for t in d.meta.get("targets") or []],
                files=[f for d in datas for f in d.meta.get("files") or []])
    data = TraceData(meta, {name: np.concatenate(parts) for name, parts in columns.items()}, datas[0].event_dtype,
                     np.concatenate(facts), {n: name for name, n in op_number.items()},
                     {n: name for name, n in kind_number.items()}, {"stdout": "", "stderr": ""}, counters)
    return Trace(data), where


def _renumber(numbers: dict, into: dict) -> np.ndarray:
    """A table from one trace's numbers (ops, fact kinds) to the merged trace's, by name;
    names the first trace did not have get new numbers."""
    table = np.arange(max(list(numbers) + [0]) + 1, dtype=np.int64)
    for number, name in numbers.items():
        if name not in into:
            into[name] = max(list(into.values()) + [0]) + 1
        table[number] = into[name]
    return table


def phases_of(trace: Trace, place: Placement, host_rows: pd.DataFrame) -> pd.DataFrame:
    """The merged trace's phases that are `host_rows` (phases of the host placed by `place`):
    the same thread and the same first data call, moved as the host's events were."""
    table = trace.report().phases
    keys = set(zip((host_rows["tid"].astype(np.int64) + place.lift).tolist(),
                   (host_rows["data_first_ns"].astype(np.int64) + place.shift_ns).tolist()))
    mine = [(int(t), int(f)) in keys for t, f in zip(table["tid"], table["data_first_ns"])]
    return table[np.array(mine, dtype=bool)] if len(table) else table
