"""`show`'s tables from a trace read block by block: memory bounded by the block, not the trace.

    >>> with streamed.open_trace("run.iwt") as trace:    # an analysis.run.Trace without events
    ...     tables = trace.show_tables()                  # processes, files, syscalls

Each table is an aggregate: counts and byte sums are integers (exact in any order), minimum
and maximum are exact, the mean is the integer sum of nanoseconds over the count, and the
percentiles come from analysis/quantiles.py (exact, bit for bit np.percentile). Rows come in
the order the in-memory tables give them: the first appearance in time order, which is the
smallest (start time, position in the file) since the reader sorts by start time stably.
tests/unit/test_streamed_show.py holds them to the in-memory tables of
analysis/reporters/summary.py, byte for byte in the text `show` prints.

Passes over the file: one for the aggregates, then those of the percentile select (one for
each syscall's extent, two or three of histograms).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis import quantiles
from iowitness.analysis.phases import FAULTS, READS, WRITES
from iowitness.analysis.run import Trace
from iowitness.collector import tracestream

PERCENTILES = (50, 90, 99, 99.9)
DATA_SYSCALLS = set(READS) | set(WRITES)
COLUMNS = ["start_ns", "latency_ns", "op", "ret", "requested", "tgid", "tid", "dev", "ino"]


class StreamedTrace(Trace):
    """A Trace whose events are never all in memory: meta, facts, files, processes as usual;
    `events` refuses (a caller that needs every event must load the trace)."""

    def __init__(self, stream: tracestream.Stream):
        super().__init__(stream.data)
        self._stream = stream

    @property
    def event_count(self) -> int:
        return self._stream.event_count

    @property
    def events(self):
        raise RuntimeError("a streamed trace has no events table: use iowitness.analysis.run.load")

    def has_data_calls(self) -> bool:
        return self.show_tables().has_data_calls()

    def show_tables(self) -> "Tables":
        if getattr(self, "_tables", None) is not None:
            return self._tables
        tables = Tables()
        for block in self._stream.blocks(COLUMNS):
            tables.add(self, block, block.first_row)
        tables.percentiles(lambda: ((self._codes(tables, b), b["latency_ns"])
                                    for b in self._stream.blocks(["op", "latency_ns"])))
        self._tables = tables
        return tables

    def _codes(self, tables: "Tables", block) -> np.ndarray:
        return tables.syscall_codes(self._ops, block["op"])

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> "StreamedTrace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_trace(path, block_rows: int = tracestream.BLOCK_ROWS) -> StreamedTrace:
    return StreamedTrace(tracestream.open_trace(path, block_rows))


class Tables:
    """Aggregates of `show`, fed block by block."""

    def __init__(self):
        self.names: dict[str, int] = {}           # syscall -> its number here
        self.first: dict[str, tuple] = {}         # syscall or path -> (start, position) of its first call
        self.per_name: dict[str, dict] = {}
        self.per_path: dict[str, list] = {}       # path -> [calls, read bytes, written bytes]
        self.per_tgid: dict[int, int] = {}
        self.threads: set = set()
        self.event_count = 0
        self.pct = None

    def syscall_codes(self, ops: dict, op: np.ndarray) -> np.ndarray:
        distinct, inverse = np.unique(op, return_inverse=True)
        table = np.array([self.names.get(ops.get(int(o), f"op{o}"), -1) for o in distinct], dtype=np.int64)
        return table[inverse.ravel()] if len(op) else np.empty(0, np.int64)

    def add(self, trace, block, first_row: int) -> None:
        n = len(block["start_ns"])
        self.event_count += n
        if not n:
            return
        start = block["start_ns"].astype(np.int64)
        position = first_row + np.arange(n, dtype=np.int64)
        ret = block["ret"].astype(np.int64)
        requested = block["requested"].view(np.int64)
        latency = block["latency_ns"].astype(np.int64)
        ops = trace._ops
        distinct, inverse = np.unique(block["op"], return_inverse=True)
        inverse = inverse.ravel()
        for k, op in enumerate(distinct):
            name = ops.get(int(op), f"op{op}")
            rows = np.flatnonzero(inverse == k)
            self._first(name, start[rows], position[rows])
            s = self.per_name.setdefault(name, {"calls": 0, "errors": 0, "bytes": 0, "short": 0,
                                                "lat_sum": 0, "lat_min": None, "lat_max": None})
            self.names.setdefault(name, len(self.names))
            r, q, lat = ret[rows], requested[rows], latency[rows]
            s["calls"] += len(rows)
            s["errors"] += int((r < 0).sum())
            if name in FAULTS:
                s["bytes"] += int(q.sum())
            elif name in DATA_SYSCALLS:
                s["bytes"] += int(r[r > 0].sum())
                s["short"] += int(((r >= 0) & (r < q)).sum())
            s["lat_sum"] += int(lat.sum())
            s["lat_min"] = int(lat.min()) if s["lat_min"] is None else min(s["lat_min"], int(lat.min()))
            s["lat_max"] = int(lat.max()) if s["lat_max"] is None else max(s["lat_max"], int(lat.max()))
        # files: bytes a call moved (a fault: what it mapped), by direction
        names = np.array([ops.get(int(o), f"op{o}") for o in distinct], dtype=object)[inverse]
        is_fault = np.isin(names, FAULTS)
        moved = np.where(is_fault, requested, np.maximum(ret, 0))
        reads = np.isin(names, READS + ("fault_read",))
        writes = np.isin(names, WRITES + ("fault_write",))
        paths = trace._paths(block["dev"], block["ino"], block["start_ns"])
        # a call on a file no open or target named has no path: in no row (pandas drops it too)
        paths = pd.Categorical(paths)
        codes = paths.codes.astype(np.int64)
        calls = np.bincount(codes[codes >= 0], minlength=len(paths.categories))
        for k in np.flatnonzero(calls):
            p = str(paths.categories[k])
            rows = np.flatnonzero(codes == k)
            self._first(("path", p), start[rows], position[rows])
            entry = self.per_path.setdefault(p, [0, 0, 0])
            entry[0] += int(calls[k])
            entry[1] += int(moved[rows][reads[rows]].sum())
            entry[2] += int(moved[rows][writes[rows]].sum())
        tgid = block["tgid"].astype(np.int64)
        t_distinct, t_counts = np.unique(tgid, return_counts=True)
        for t, c in zip(t_distinct, t_counts):
            self.per_tgid[int(t)] = self.per_tgid.get(int(t), 0) + int(c)
        pairs = np.unique((tgid << 32) | block["tid"].astype(np.int64))
        self.threads.update(int(p) for p in pairs)

    def _first(self, key, start: np.ndarray, position: np.ndarray) -> None:
        at = np.lexsort((position, start))[0]
        candidate = (int(start[at]), int(position[at]))
        if key not in self.first or candidate < self.first[key]:
            self.first[key] = candidate

    def percentiles(self, blocks) -> None:
        self.pct = quantiles.percentiles(blocks, len(self.names), PERCENTILES)

    def syscall_table(self) -> pd.DataFrame:
        rows = []
        for name in sorted(self.per_name, key=lambda n: self.first[n]):
            s = self.per_name[name]
            fault = name in FAULTS   # the kernel marks a fault's entry only: no latency to show
            row = {"syscall": name, "calls": s["calls"], "errors": s["errors"], "bytes": s["bytes"],
                   "short": s["short"],
                   "min_us": np.nan if fault else s["lat_min"] / 1e3,
                   "mean_us": np.nan if fault else s["lat_sum"] / s["calls"] / 1e3}
            for p, value in zip(PERCENTILES, self.pct[self.names[name]]):
                row[f"p{p:g}_us"] = np.nan if fault else value
            row["max_us"] = np.nan if fault else s["lat_max"] / 1e3
            rows.append(row)
        table = pd.DataFrame(rows)
        return table.sort_values("calls", ascending=False, kind="stable").reset_index(drop=True) if rows else table

    def file_table(self) -> pd.DataFrame:
        if not self.per_path:
            return pd.DataFrame(columns=["path", "calls", "read_bytes", "written_bytes"])
        order = sorted(self.per_path, key=lambda p: self.first[("path", p)])
        return pd.DataFrame({"path": order, "calls": [self.per_path[p][0] for p in order],
                             "read_bytes": [self.per_path[p][1] for p in order],
                             "written_bytes": [self.per_path[p][2] for p in order]})

    def process_table(self, processes: pd.DataFrame) -> pd.DataFrame:
        if not self.per_tgid:
            return pd.DataFrame(columns=["tgid", "threads", "calls", "comm"])
        tgids = sorted(self.per_tgid)
        threads: dict[int, int] = {}
        for pair in self.threads:
            threads[pair >> 32] = threads.get(pair >> 32, 0) + 1
        names = {int(row.tgid): row.comm for row in processes.itertuples()} if not processes.empty else {}
        return pd.DataFrame({"tgid": tgids, "threads": [threads[t] for t in tgids],
                             "calls": [self.per_tgid[t] for t in tgids],
                             "comm": [names.get(t, "") for t in tgids]})

    def has_data_calls(self) -> bool:
        return any(name in READS + WRITES + FAULTS for name in self.per_name)
