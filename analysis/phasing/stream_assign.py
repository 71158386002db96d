"""Each event's span, phase, operation, warm-up and fill (the phases' rules: analysis/phasing/phases.py),
from events that come block by block, with memory per fd, stream, span and phase.

    with stream_assign.assign(source, outside) as assigned:     # source: anything with .blocks()
        for events_block, assigned_block in assigned.blocks():    # a new pass each call
            ...

Three steps, because two of the rules look at a whole stream before any of its
phases can be named: a stream is "mixed" by its run count over the whole trace, and phases
are numbered by the time of their first call.

1. One pass over the events (analysis/phasing/stream_walk.py): each event's stream and what it is
   (a data call, the start of a direction run, a warm-up or buffer-fill candidate) go to a
   temporary file; per stream, its counts; per run, where it starts.
2. Over the runs alone: which streams are mixed, hence which runs start a phase, and the
   phases' numbers.
3. Per block asked for: each call's phase from its stream's state;
   kept in a file on the first whole pass, read from it on the later ones.

Per-event intermediates live in files (np.memmap windows of one block), never in memory.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import operations
from iowitness.analysis.phasing.phases import (
    MIXED_RUN_LENGTH,
    OPERATIONS,
    PATTERN_SHARE,
    stable_order,
)
from iowitness.analysis.phasing.stream_walk import (
    CODE,
    DATA,
    FILL,
    FIRST,
    IS_READ,
    RUN,
    WARM,
    Column,
    Walk,
)


class Assigned:
    """The result of `assign`: per-event results by block (`blocks()`), over temporary files
    removed by `close()` (or on leaving a `with`)."""

    def __init__(self, source, walk: Walk, folder: tempfile.TemporaryDirectory):
        self._source, self._walk, self._folder = source, walk, folder
        self.event_count = walk.events
        streams = walk.streams
        runs, calls = streams.get("runs"), streams.get("calls")
        reads, fills = streams.get("reads").astype(np.float64), streams.get("fills").astype(np.float64)
        # the phases' rules compare float64 counts
        self._mixed = (runs > 2) & (calls < MIXED_RUN_LENGTH * runs)
        self._writing = self._mixed & (reads > 0) & (fills >= PATTERN_SHARE * reads)
        self._stream_span = streams.get("span")
        self._number_phases()
        self._phase_file = Column(os.path.join(walk.folder, "phase.i4"), np.int32)
        self._phase_known = False

    def _number_phases(self) -> None:
        """Which runs start a phase (every run of a plain stream, the first of a mixed one), and
        each phase's number: by the time of its first call, ties in stream order (stream by
        stream in order of first appearance, time order within one), as the assignment's
        stable argsort over its stream-ordered phases gives."""
        walk = self._walk
        first_data = walk.streams.get("first_data")
        keep_pos, keep_start, keep_stream = [], [], []
        for pos, start, stream in walk.runs.blocks():
            kept = ~self._mixed[stream] | (pos == first_data[stream])
            keep_pos.append(pos[kept])
            keep_start.append(start[kept])
            keep_stream.append(stream[kept])
        pos = np.concatenate(keep_pos) if keep_pos else np.empty(0, np.int64)
        start = np.concatenate(keep_start) if keep_start else np.empty(0, walk.start_dtype)
        stream = np.concatenate(keep_stream) if keep_stream else np.empty(0, np.int64)
        self.phase_count = len(pos)
        self._number = np.empty(len(pos), dtype=np.int64)
        self._number[np.lexsort((pos, stream, start))] = np.arange(1, len(pos) + 1)
        # per phase number: the start of the call that numbers it and the start of its stream's
        # first event (its place among the streams: a run over several hosts numbers its pooled
        # phases by these, ties included: analysis/runs/pooled_hosts.py)
        self.phase_keys_ns = np.zeros((len(pos) + 1, 2), dtype=np.int64)
        self.phase_keys_ns[self._number, 0] = start.astype(np.int64)
        self.phase_keys_ns[self._number, 1] = walk.streams.get("first_ns")[stream]
        # a stream's first data call always starts a phase: its first phase, for the calls before it
        self._first_phase = np.full(len(first_data), -1, dtype=np.int64)
        firsts = pos == first_data[stream]
        self._first_phase[stream[firsts]] = np.flatnonzero(firsts)
        # a call of a thread with no data call in its span takes the span's phase before it,
        # else the first phase of the span: that of its first stream with data calls
        spans = walk.span_count
        self._span_head = np.full(spans, -1, dtype=np.int64)
        with_data = np.flatnonzero(first_data >= 0)
        head_stream = np.full(spans, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(head_stream, self._stream_span[with_data], with_data)
        has = head_stream < np.iinfo(np.int64).max
        self._span_head[has] = self._first_phase[head_stream[has]]
        self._join_stretches()

    def _join_stretches(self) -> None:
        """Successive open..close stretches of one file by one thread with one shape are one
        phase (operations.joined): each joined stream's phase takes its chain head's number,
        and the phases are numbered again 1.. in the same order."""
        streams = self._walk.streams
        S = {name: streams.get(name) for name in ("tgid", "tid", "file", "first_data", "l1_pos", "calls", "reads",
                                                  "bytes", "positioned", "runs")}
        eligible = (S["runs"] == 1) & (S["calls"] > 0) & ~self._mixed & (self._first_phase >= 0)
        head = operations.joined(S, eligible)
        moved = np.flatnonzero(head != np.arange(len(head)))
        if not len(moved):
            return
        target = np.arange(self.phase_count, dtype=np.int64)
        target[self._first_phase[moved]] = self._first_phase[head[moved]]
        kept = target == np.arange(self.phase_count)
        renumbered = np.zeros(self.phase_count + 1, dtype=np.int64)
        numbers_kept = np.sort(self._number[kept])
        renumbered[numbers_kept] = np.arange(1, int(kept.sum()) + 1)
        self.phase_keys_ns = np.r_[np.zeros((1, 2), np.int64), self.phase_keys_ns[numbers_kept]]
        self._number = renumbered[self._number[target]]
        self.phase_count = int(kept.sum())

    def blocks(self):
        """(events block, assigned block) per block of the source, in order; a new pass each call."""
        walk = self._walk
        if walk.folder is None:
            raise ValueError("stream_assign: blocks() after close()")
        current = np.full(len(self._mixed), -1, dtype=np.int64)   # per stream: its latest phase
        span_last = np.full(walk.span_count, -1, dtype=np.int64)  # per span: its latest phase
        phases_so_far, at = 0, 0
        # each event's phase is worked out on the first whole pass and kept in a file (4 bytes
        # per event): the later passes read it instead of carrying every stream's state again
        known = self._phase_known
        for block in self._source.blocks():
            m = len(block)
            if at + m > walk.events:
                raise ValueError("stream_assign: the source gave more events than on the first pass")
            stream = walk.stream_file.read(at, m).astype(np.int64)
            bits = walk.bits_file.read(at, m)
            if known:
                phase = self._phase_file.read(at, m).astype(np.int64)
            else:
                local, phases_so_far = self._phases(stream, bits, current, span_last, phases_so_far)
                phase = np.where(local >= 0, self._number[np.maximum(local, 0)] if len(self._number) else -1, -1)
                phase[(bits & CODE) != 0] = -1
                self._phase_file.write(at, phase.astype(np.int32))
            data = (bits & DATA) != 0
            operation = np.where(data, np.where(self._writing[stream], 2, np.where(
                self._mixed[stream], 3, np.where((bits & IS_READ) != 0, 1, 2))), 0).astype(np.int8)
            at += m
            yield block, pd.DataFrame({
                "span": self._stream_span[stream] if m else np.empty(0, np.int64), "phase": phase.astype(np.int64),
                "operation": pd.Categorical.from_codes(operation, OPERATIONS),
                "warmup": ((bits & WARM) != 0) & ~self._mixed[stream],
                "fill": ((bits & FILL) != 0) & self._writing[stream]}, index=block.index)
        if at != walk.events:
            raise ValueError(f"stream_assign: the source gave {at} events, {walk.events} on the first pass")
        self._phase_known = True

    def _phases(self, stream, bits, current, span_last, phases_so_far):
        """Local phase (index in run order, -1 none) per event of a block, and the phases
        started so far. `current` and `span_last` carry the streams' and spans' state on."""
        m = len(stream)
        data = (bits & DATA) != 0
        cut = data & np.where(self._mixed[stream], (bits & FIRST) != 0, (bits & (FIRST | RUN)) != 0) \
            if m else np.zeros(0, bool)
        started = np.full(m, -1, dtype=np.int64)
        cuts = np.flatnonzero(cut)
        started[cuts] = phases_so_far + np.arange(len(cuts))
        # the phase of the latest data call in the stream (data calls and the calls after them)
        nearby = _carried_forward(stream, started, current)
        # else that of the stream's first data call (calls before it)
        nearby = np.where(nearby >= 0, nearby, self._first_phase[stream])
        # else (a thread with no data call in the span) the span's phase before it, else its first
        span = self._stream_span[stream]
        before = _carried_forward(span, nearby, span_last)
        local = np.where(nearby >= 0, nearby, np.where(before >= 0, before, self._span_head[span]))
        return local, phases_so_far + len(cuts)

    def close(self) -> None:
        self._walk.close()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _carried_forward(key: np.ndarray, value: np.ndarray, state: np.ndarray) -> np.ndarray:
    """Per row: the last value >= 0 at or before it among the rows of its key (rows in time
    order), else state[key] (the key's last value in earlier blocks); state is updated.

    Only the rows without a value of their own are looked up, in the rows with one put in
    (key, row) order, so no sort of the whole block: the phases' starts are a few rows a
    block, and the second call's values are all set (stream_assign._phases)."""
    m = len(key)
    if not m:
        return np.empty(0, dtype=np.int64)
    key = key.astype(np.int64, copy=False)
    out = value.astype(np.int64)
    missing = np.flatnonzero(out < 0)
    if len(missing):
        valid = np.flatnonzero(out >= 0)
        order = stable_order(key[valid])
        by_key, row = key[valid][order], valid[order]
        wanted = key[missing]
        # key * m + row orders (key, row) pairs as one integer: rows are < m
        j = np.maximum(np.searchsorted(by_key * m + row, wanted * m + missing) - 1, 0)
        found = (by_key[j] == wanted) & (row[j] < missing) if len(row) else np.zeros(len(missing), dtype=bool)
        out[missing] = np.where(found, out[row[j]] if len(row) else 0, state[wanted])
    last = np.full(len(state), -1, dtype=np.int64)   # per key: its last row in this block
    np.maximum.at(last, key, np.arange(m))
    present = np.flatnonzero(last >= 0)
    state[present] = out[last[present]]
    return out


def assign(source, outside=None, *, folder: str | None = None) -> Assigned:
    """The assignment over `source` (anything whose .blocks() yields the events table block by
    block, a new pass each call). `outside`: None, or a callable(events_block) -> bool array,
    true for calls that are in no phase whatever they do (the benchmark's own files).
    `folder`: where the temporary files go (the system's temporary folder by default)."""
    temporary = tempfile.TemporaryDirectory(prefix="iowitness-assign-", dir=folder)
    try:
        walk = Walk(source, outside, temporary.name)
        return Assigned(source, walk, temporary)
    except BaseException:
        temporary.cleanup()
        raise


class _Frame:
    """A table held in memory as a source of one block."""

    def __init__(self, events: pd.DataFrame):
        self.events = events

    def blocks(self):
        yield self.events


def of_frame(events: pd.DataFrame, outside: np.ndarray | None = None) -> pd.DataFrame:
    """`assign` of an events table held in memory (one block): the per-event result as one table."""
    own = None if outside is None else (lambda block: np.asarray(outside, dtype=bool))
    with assign(_Frame(events), own) as assigned:
        parts = [a for _, a in assigned.blocks()]
    return parts[0]
