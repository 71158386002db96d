"""`show`'s tables from a trace read block by block: memory bounded by the block, not the trace.

    >>> with streamed.open_trace("run.iwt") as trace:    # an analysis.run.Trace without events
    ...     tables = trace.show_tables()                  # processes, files, syscalls

Each table is an aggregate: counts and byte sums are integers (exact in any order), minimum
and maximum are exact, the mean is the integer sum of nanoseconds over the count, and the
percentiles come from analysis/phasing/quantiles.py (exact, bit for bit np.percentile). Rows come in
the order the in-memory tables give them: the first appearance in time order, which is the
smallest (start time, position in the file) since the reader sorts by start time stably.
tests/unit/test_streamed_show.py holds them to the in-memory tables of
reporters/summary.py, byte for byte in the text `show` prints.

Passes over the file: one for the aggregates, then those of the percentile select (one for
each syscall's extent, two or three of histograms).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import quantiles
from iowitness.analysis.phasing.phases import FAULTS, READS, WRITES
from iowitness.analysis.read.trace_view import OPENING, TraceView
from iowitness.collector.format import tracestream

PERCENTILES = (50, 90, 99, 99.9)
DATA_SYSCALLS = set(READS) | set(WRITES)
COLUMNS = ["start_ns", "latency_ns", "op", "ret", "requested", "tgid", "tid", "dev", "ino"]


class StreamedTrace(TraceView):
    """A trace whose events are never all in memory: meta, facts, files, processes as every trace
    has them (TraceView), its events given block by block (analysis/read/stream_events.py)."""

    source = None   # the stream_events.EventSource that gives its events, when one opened it

    def __init__(self, stream: tracestream.Stream):
        super().__init__(stream.data)
        self._stream = stream

    @property
    def event_count(self) -> int:
        return self._stream.event_count

    def has_data_calls(self) -> bool:
        # a report built block by block saw every event already (analysis/measure/stream_full.py)
        known = getattr(self, "data_calls_seen", None)
        return known if known is not None else self.show_tables().has_data_calls()

    def show_tables(self) -> "Tables":
        if getattr(self, "_tables", None) is not None:
            return self._tables
        tables = Tables()
        for block in self._stream.blocks(COLUMNS):
            tables.add(self, block, block.first_row)
        tables.percentiles(lambda: ((self._codes(tables, b), b["latency_ns"])
                                    for b in self._stream.blocks(["op", "latency_ns"])), with_extent=True)
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
    # the block and off-CPU records are read block by block too (analysis/read/device_records.py)
    return StreamedTrace(tracestream.open_trace(path, block_rows, device_blocks=True))


class Tables:
    """Aggregates of `show`, fed block by block."""

    def __init__(self):
        self.names: dict[str, int] = {}           # syscall -> its number here
        self.first: dict[str, tuple] = {}         # syscall or path -> (start, position) of its first call
        self.per_name: dict[str, dict] = {}
        self.per_path: dict[str, list] = {}       # path -> [calls, read bytes, written bytes]
        self.per_pair: dict[int, int] = {}         # (tgid << 32 | tid) -> calls
        self.event_count = 0
        self.pct = None

    def syscall_codes(self, ops: dict, op: np.ndarray) -> np.ndarray:
        if not len(op):
            return np.empty(0, np.int64)
        op = op.astype(np.int64)
        present = np.flatnonzero(np.bincount(op))
        table = np.full(int(present[-1]) + 1, -1, dtype=np.int64)
        for o in present:
            table[o] = self.names.get(ops.get(int(o), f"op{o}"), -1)
        return table[op]

    def add(self, trace, block, first_row: int) -> None:
        n = len(block["start_ns"])
        self.event_count += n
        if not n:
            return
        start = block["start_ns"].view(np.int64)
        ret = block["ret"]
        requested = block["requested"].view(np.int64)
        latency = block["latency_ns"].view(np.int64)
        op = block["op"].astype(np.int64)
        # syscall numbers are small: a table per number, looked up once per distinct number
        present = np.flatnonzero(np.bincount(op))
        name_of = {int(o): trace._ops.get(int(o), f"op{o}") for o in present}
        size = int(present[-1]) + 1
        is_fault, is_read, is_write = (np.zeros(size, dtype=bool) for _ in range(3))
        for o, name in name_of.items():
            is_fault[o] = name in FAULTS
            is_read[o] = name in READS + ("fault_read",)
            is_write[o] = name in WRITES + ("fault_write",)
        for o, name in name_of.items():
            rows = np.flatnonzero(op == o)
            self._first(name, start[rows], first_row + rows)
            s = self.per_name.setdefault(name, {"calls": 0, "errors": 0, "bytes": 0, "short": 0,
                                                "lat_sum": 0, "lat_min": None, "lat_max": None})
            self.names.setdefault(name, len(self.names))
            r, q, lat = ret[rows], requested[rows], latency[rows]
            s["calls"] += len(rows)
            s["errors"] += int(np.count_nonzero(r < 0))
            if name in FAULTS:
                s["bytes"] += int(q.sum())
            elif name in DATA_SYSCALLS:
                s["bytes"] += int(r[r > 0].sum())
                s["short"] += int(np.count_nonzero((r >= 0) & (r < q)))
            s["lat_sum"] += int(lat.sum())
            low, high = int(lat.min()), int(lat.max())
            s["lat_min"] = low if s["lat_min"] is None else min(s["lat_min"], low)
            s["lat_max"] = high if s["lat_max"] is None else max(s["lat_max"], high)
        # files: bytes a call moved (a fault: what it mapped), by direction
        moved = np.where(is_fault[op], requested, np.maximum(ret, 0))
        reads, writes = is_read[op], is_write[op]
        # a call on a file no open or target named has no path: in no row (pandas drops it too)
        opening = np.zeros(size, dtype=bool)
        opening[[o for o, name in name_of.items() if name in OPENING]] = True
        paths = pd.Categorical(trace._paths(block["dev"], block["ino"], block["start_ns"],
                                            (np.where(opening[op], start + latency, 0), block["tgid"], ret)))
        codes = paths.codes.astype(np.int64)
        calls = np.bincount(codes[codes >= 0], minlength=len(paths.categories))
        for k in np.flatnonzero(calls):
            rows = np.flatnonzero(codes == k)
            p = str(paths.categories[k])
            self._first(("path", p), start[rows], first_row + rows)
            entry = self.per_path.setdefault(p, [0, 0, 0])
            entry[0] += int(calls[k])
            entry[1] += int(moved[rows][reads[rows]].sum())
            entry[2] += int(moved[rows][writes[rows]].sum())
        # processes: calls per (process, thread) pair, a handful per block
        pair_codes, pairs = pd.factorize((block["tgid"].astype(np.int64) << 32) | block["tid"].astype(np.int64))
        for pair, c in zip(pairs, np.bincount(pair_codes)):
            self.per_pair[int(pair)] = self.per_pair.get(int(pair), 0) + int(c)

    def _first(self, key, start: np.ndarray, position: np.ndarray) -> None:
        earliest = start.min()
        candidate = (int(earliest), int(position[start == earliest].min()))
        if key not in self.first or candidate < self.first[key]:
            self.first[key] = candidate

    def percentiles(self, blocks, with_extent: bool = False) -> None:
        extent = None
        if with_extent:   # counted already: the select skips its pass 0
            by_number = sorted(self.names, key=self.names.get)
            extent = tuple([self.per_name[n][key] for n in by_number] for key in ("calls", "lat_min", "lat_max"))
        self.pct = quantiles.percentiles(blocks, len(self.names), PERCENTILES, extent)

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
        if not self.per_pair:
            return pd.DataFrame(columns=["tgid", "threads", "calls", "comm"])
        threads: dict[int, int] = {}
        calls: dict[int, int] = {}
        for pair, c in self.per_pair.items():
            threads[pair >> 32] = threads.get(pair >> 32, 0) + 1
            calls[pair >> 32] = calls.get(pair >> 32, 0) + c
        tgids = sorted(threads)
        names = {int(row.tgid): row.comm for row in processes.itertuples()} if not processes.empty else {}
        return pd.DataFrame({"tgid": tgids, "threads": [threads[t] for t in tgids],
                             "calls": [calls[t] for t in tgids],
                             "comm": [names.get(t, "") for t in tgids]})

    def has_data_calls(self) -> bool:
        return any(name in READS + WRITES + FAULTS for name in self.per_name)
