"""The events table block by block: the rows of `load(path).events`, in its order, without it.

    >>> with stream_events.open_events("run.iwt") as source:
    ...     source.meta, source.trace_data, source.event_count   # as the reader gives them
    ...     for block in source.blocks():                        # a new pass each call
    ...         block    # a DataFrame: the next rows of load(path).events, index = their row numbers

`pd.concat(source.blocks())` equals `load(path).events` exactly: the same columns, dtypes,
categories (the trace's, in every block), index and order (tests/unit/test_stream_events.py).

The order is the hard part. The reader sorts the events by start time, stably, when the
records are out of order (collector/format/tracereader.py TraceData), and they are: a record is
written when its call returns, so a 2 s fsync's record comes after 2 s of later-starting
calls. The file is read in blocks (collector/format/tracestream.py); with P(j) the largest start
time in blocks 0..j, a record of block j that starts before P(j - 2) is a *straggler*: it
belongs before records two blocks or more ahead of it. A first pass (at open) finds the
stragglers and keeps their rows in memory, sorted, and notes for each block the earliest
start L(j) of a non-straggler in the blocks after it (at least P(j - 1)). Once block j is
read, no record still to come belongs before (L(j), the next block's first row): the held
records and the stragglers before that bound are merged and given out. What stays held is
part of block j only (in a trace in time order, nothing).

Memory (scripts/bench/stream_events.py): one block decoded, the block being given and the
one the caller still holds (about 210 bytes an event of a block: ~330 MiB at 1 Mi rows, for
10 M or 200 M events alike), the stragglers (few: calls that outlast a block's worth of
other calls; every record, in a file in no time order at all), and the trace's distinct
syscalls and devices; never a per-event array. Time: opening checks the file
(tracestream) and makes the first pass; each pass of blocks() decodes the file once more.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.read.block_cache import BlockCache
from iowitness.analysis.read.streamed import StreamedTrace
from iowitness.collector.format import tracestream

BLOCK_ROWS = tracestream.BLOCK_ROWS


class EventSource:
    """A trace's events, re-readable block by block in time order (see the module's text)."""

    def __init__(self, stream: tracestream.Stream, block_rows: int):
        self.block_rows = block_rows
        self._stream = stream
        # a Trace without events: files, processes and the naming of paths, from meta and facts
        self.trace = StreamedTrace(stream)
        self.trace.source = self   # a run over several hosts merges the hosts' sources (analysis/runs/merged_trace.py)
        self.meta, self.trace_data = stream.data.meta, stream.data
        self._order = _Order(stream, block_rows)
        # the first whole pass keeps its first blocks (up to a budget): the later ones give them
        # again instead of decoding the file again (analysis/read/block_cache.py)
        self._cache = BlockCache()

    @property
    def event_count(self) -> int:
        return self._stream.event_count

    @property
    def straggler_count(self) -> int:
        """Records kept in memory because they are far out of time order (see the module's text)."""
        return len(self._order.late_start)

    def blocks(self):
        """The events table, block by block (about block_rows rows each, some fewer)."""
        cache, given, state = self._cache, 0, None
        if cache.ready:
            for frame in cache.frames():
                given += len(frame)
                yield frame
            if cache.resume is None:
                return
            state, given = cache.resume
        recording = cache.start()
        order = self._order
        try:
            for raw, after in order.merged(self._stream, state):
                index = pd.RangeIndex(given, given + len(raw["start_ns"]))
                given += len(index)
                frame = self.trace.event_frame(raw, index, distinct=order.distinct)
                if recording:
                    cache.add(frame, (after, given))
                yield frame
            if recording and given:
                cache.finish()
        finally:
            if recording and cache.recording:
                cache.abandon()   # a pass left before its end (or without events) keeps nothing
        if not given:   # no event: one empty block, so that the table's columns are still known
            yield self.empty()

    def empty(self) -> pd.DataFrame:
        """The events table without a row: its columns, and the trace's categories (those of
        every block), known before any block is read."""
        return self.trace.event_frame(self.empty_raw(), pd.RangeIndex(0), distinct=self._order.distinct)

    def raw_blocks(self):
        """The event columns as the reader decodes them (numbers, not yet named), in the order
        of blocks(), block by block: for a reader that moves them first (a run over several
        hosts on one clock, analysis/runs/merged_trace.py)."""
        for raw, _ in self._order.merged(self._stream):
            yield raw

    def empty_raw(self) -> dict:
        return self._order.empty(self._stream)

    @property
    def distinct(self) -> dict:
        """The trace's distinct op and dev numbers, sorted (what each block's categories are)."""
        return self._order.distinct

    @property
    def processes(self) -> set[int]:
        """The process numbers (tgid) of the trace's events: a pass over that column alone."""
        found: set[int] = set()
        for block in self._stream.blocks(["tgid"], block_rows=self.block_rows):
            found.update(pd.unique(block["tgid"]).tolist())
        return found

    def close(self) -> None:
        self._cache.close()
        self.trace.close()

    def __enter__(self) -> "EventSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_events(path, block_rows: int = BLOCK_ROWS) -> EventSource:
    """Map a .iwt file, check it (BadTrace as `tracereader.read` raises it) and find its
    stragglers: one pass over the file."""
    # the block and off-CPU records are read block by block too (analysis/read/device_records.py)
    stream = tracestream.open_trace(path, block_rows, device_blocks=True)
    try:
        return EventSource(stream, block_rows)
    except BaseException:
        stream.close()
        raise


class _Order:
    """Where each block starts, the largest start time up to each block, and the stragglers."""

    def __init__(self, stream: tracestream.Stream, block_rows: int):
        self.block_rows = block_rows
        self.firsts: list[int] = []      # first row (file order) of each block
        self.tops: list[int] = []        # P(j): the largest start time in blocks 0..j
        ops, devs, late, floors = [], [], [], []
        late_rows: dict[int, np.ndarray] = {}   # block -> its stragglers' rows in it
        # the columns this pass needs; a block with stragglers is read whole afterwards
        for j, block in enumerate(stream.blocks(["start_ns", "op", "dev"], block_rows=block_rows)):
            start = block["start_ns"]
            self.firsts.append(block.first_row)
            # a block of empty chunks (a writer never makes one, but the format allows it)
            self.tops.append(max(self.tops[-1] if self.tops else 0, int(start.max()) if len(start) else 0))
            ops.append(pd.unique(block["op"]))
            devs.append(pd.unique(block["dev"]))
            rows = np.flatnonzero(start < self.tops[j - 2]) if j >= 2 else ()
            floors.append(None if not len(start) else int(start.min()) if not len(rows) else
                          int(start[start >= self.tops[j - 2]].min()) if len(rows) < len(start) else None)
            if len(rows):
                late_rows[j] = rows
        for j, block in enumerate(stream.blocks(block_rows=block_rows) if late_rows else ()):
            if j in late_rows:
                rows = late_rows[j]
                late.append({name: column[rows] for name, column in block.items()})
                late[-1]["row"] = block.first_row + rows
        # bounds[j]: the earliest start of a record that is not a straggler, in the blocks
        # after j (None when there is none): no record still to come once block j is read
        # belongs before (bounds[j], firsts[j + 1]), stragglers aside
        self.bounds, low = [], None
        for floor in reversed(floors):
            self.bounds.append(low)
            low = floor if low is None else low if floor is None else min(low, floor)
        self.bounds.reverse()
        dtype = stream.data.event_dtype
        # the trace's distinct values, sorted as analysis/read/run.py _categorical names them
        self.distinct = {"op": np.unique(np.concatenate(ops or [np.empty(0, dtype["op"])])),
                         "dev": np.unique(np.concatenate(devs or [np.empty(0, dtype["dev"])]))}
        if late:
            late = {name: np.concatenate([part[name] for part in late]) for name in late[0]}
            # lexsort's last key sorts first: by start, then by row (the reader's stable sort)
            order = np.lexsort((late["row"], late["start_ns"]))
            late = {name: column[order] for name, column in late.items()}
        self.late = late or {}
        self.late_start = self.late.get("start_ns", np.empty(0, np.uint64))
        self.late_row = self.late.get("row", np.empty(0, np.int64))

    def merged(self, stream: tracestream.Stream, state=None):
        """The raw event columns in time order, block by block (only non-empty blocks), each
        with the state to go on from after it (analysis/read/block_cache.py); `state`: one such,
        to begin there instead of at the first block."""
        first, held, taken = state or (0, [], 0)
        held = list(held)   # a state given out is never changed
        for j, block in enumerate(stream.blocks(block_rows=self.block_rows, skip=first), start=first):
            if block.first_row != self.firsts[j]:
                raise RuntimeError("the trace's blocks changed between two passes")
            held.append(self._kept(block, self.tops[j - 2] if j >= 2 else None))
            del block
            low = self.bounds[j]
            out, held, taken = self._give(held, taken, None if low is None else (low, self.firsts[j + 1]))
            if len(out["start_ns"]):
                yield out, (j + 1, list(held), taken)

    @staticmethod
    def _kept(block: tracestream.Block, floor) -> dict:
        """The block's records that are not stragglers (those starting at or after `floor`),
        with their rows in the file; the block's own arrays when it has no straggler."""
        rows = np.arange(block.first_row, block.first_row + len(block))
        kept = None if floor is None else block["start_ns"] >= floor
        if kept is None or kept.all():
            piece = dict(block)
        else:
            piece = {name: column[kept] for name, column in block.items()}
            rows = rows[kept]
        piece["row"] = rows
        return piece

    def _give(self, held: list, taken: int, bound):
        """The held records and stragglers that come before `bound` (start time, row), in
        order; the held pieces left; the stragglers given so far. bound None: everything.

        Held records are pieces of blocks, in row order: a piece given or kept whole is not
        copied (in a trace in time order, the whole previous block goes and this one stays)."""
        if bound is None:
            given, left, upto = held, [], len(self.late_start)
        else:
            top, row = bound
            lo = int(np.searchsorted(self.late_start, top, side="left"))
            hi = int(np.searchsorted(self.late_start, top, side="right"))
            upto = lo + int(np.searchsorted(self.late_row[lo:hi], row, side="left"))
            given, left = [], []
            for piece in held:
                ready = piece["start_ns"] <= top
                if ready.all():
                    given.append(piece)
                elif not ready.any():
                    left.append(piece)
                else:
                    given.append({name: column[ready] for name, column in piece.items()})
                    left.append({name: column[~ready] for name, column in piece.items()})
        parts = [p for p in given if len(p["row"])]
        if upto > taken:
            parts.append({name: column[taken:upto] for name, column in self.late.items()})
        if not parts:
            return {"start_ns": ()}, left, upto
        out = parts[0] if len(parts) == 1 else {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        start = out["start_ns"]
        if len(parts) > 1 and upto > taken:
            order = np.lexsort((out["row"], start))   # the last key sorts first
        elif len(start) > 1 and np.any(start[1:] < start[:-1]):
            order = np.argsort(start, kind="stable")   # held records alone: in row order already
        else:
            order = None
        out = {name: column for name, column in out.items() if name != "row"}
        if order is not None:
            out = {name: column[order] for name, column in out.items()}
        return out, left, upto

    def empty(self, stream: tracestream.Stream) -> dict:
        dtype = stream.data.event_dtype
        return {name: np.empty((0, *dtype.fields[name][0].shape), dtype.fields[name][0].base)
                for name in dtype.names if not name.startswith("pad")}


class LoadedSource:
    """A loaded trace's events (analysis/read/run.py Trace) as a source of blocks: what the block
    pipeline reads when the events are in memory already (the Python API's `trace.report()`).
    Slices of the events
    table, no copy; `pd.concat(blocks())` is `trace.events`."""

    straggler_count = 0   # the events table is in time order already

    def __init__(self, trace, block_rows: int = BLOCK_ROWS):
        self.trace, self.block_rows = trace, block_rows
        self.meta, self.trace_data = trace.meta, getattr(trace, "_data", None)

    @property
    def event_count(self) -> int:
        return len(self.trace.events)

    def blocks(self):
        events = self.trace.events
        if not len(events):
            yield self.empty()
            return
        for at in range(0, len(events), self.block_rows):
            yield pd.DataFrame(events.iloc[at:at + self.block_rows])

    def empty(self) -> pd.DataFrame:
        return pd.DataFrame(self.trace.events.iloc[:0])

    def close(self) -> None:
        pass

    def __enter__(self) -> "LoadedSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
