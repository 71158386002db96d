"""The events table's first blocks kept in memory from one pass to the next, up to a budget.

    cache = block_cache.BlockCache()            # budget: IOWITNESS_BLOCK_CACHE_BYTES
    ... the first whole pass: cache.add(frame, resume) for each block it gives, cache.finish()
    for frame in cache.frames(): ...             # a later pass: the kept blocks, not decoded again
    cache.resume                                 # then where the decoding takes over (None: nowhere)

Every command reads a trace in passes (analysis/read/stream_events.py: the phase walk, the sums,
the percentiles' passes, the extras), and each pass decoded the file again: zstd, the byte
planes, the time-order merge, the naming of syscalls, devices and paths; about a second of
CPU per 10 M events and pass. The first whole pass now keeps the frames it gives, compact,
until they fill the budget: each integer column as its offset from the block's least value
in the narrowest unsigned type that holds the block's range, a column of one value as that
value, times in order (start_ns) as their steps (4 bytes), end_ns as start_ns + latency_ns,
a categorical as its codes (28 bytes an event of report_10m.py's synthetic IOzone trace,
against 83 in the frame; 35 before the steps and the one-value columns), and the state of
the merge after the last one kept (`resume`: the next block of the file and the records held
back). A later pass gives the kept frames, made
again (fresh arrays: what a caller changes in its block never reaches the next pass), then
decodes from there: a trace that fits is decoded once; a larger one is decoded again only
past the budget. The figures are the same either way (the frames are equal to those the
decoding gives: tests/unit/test_block_cache.py holds a trace larger than the budget to the
same bytes).

Memory: at most BUDGET_BYTES (default 160 MiB: about 6 M events of that trace) on top of
what a pass holds; a report of 10 M events peaks below 1 GiB with it (docs/performance.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from iowitness import tuning

BUDGET_BYTES = tuning.count_from_env("IOWITNESS_BLOCK_CACHE_BYTES", 160 << 20, least=0)


def held_bytes(resume) -> int:
    """The bytes of the arrays a resume point holds (numpy arrays found in it, nested)."""
    if hasattr(resume, "nbytes"):
        return int(resume.nbytes)
    if isinstance(resume, dict):
        return sum(held_bytes(v) for v in resume.values())
    if isinstance(resume, (list, tuple)):
        return sum(held_bytes(v) for v in resume)
    return 0


class BlockCache:
    """The first frames of one whole pass, and where a later pass takes over (see the module's text)."""

    def __init__(self, budget: int | None = None):
        self.budget = BUDGET_BYTES if budget is None else budget
        self.ready = False        # a whole pass was recorded: frames() and resume hold
        self.recording = False
        self.resume = None        # after the kept frames: the decoding's state (None: all kept)
        self._frames: list = []
        self._full = False        # no more frame fits
        self._size = 0

    def start(self) -> bool:
        """Begin keeping a pass's frames (anew); False when one is being kept already or the
        budget holds nothing."""
        if self.recording or self.ready or self.budget <= 0:
            return False
        self._frames, self._full, self._size, self.resume = [], False, 0, None
        self.recording = True
        return True

    def add(self, frame: pd.DataFrame, resume) -> None:
        """Keep `frame` if it fits, with `resume`: the state to decode the frames after it from."""
        if not self.recording or self._full:
            return
        kept = _compact(frame)
        size = sum(a.nbytes for a in kept[1])
        if kept[0] is None or self._size + size + held_bytes(resume) > self.budget:
            self._full = True
            return
        self._frames.append(kept)
        self._size += size
        self.resume = resume

    def finish(self) -> None:
        """The recorded pass reached its end: later passes read the kept frames."""
        if self.recording:
            self.recording, self.ready = False, bool(self._frames)
            if not self._full:
                self.resume = None   # every frame is kept
            if not self.ready:
                self.resume = None

    def abandon(self) -> None:
        """The pass being recorded stopped before its end: keep nothing of it."""
        self.recording = False
        self._frames, self._size, self.resume = [], 0, None

    def frames(self):
        """The kept frames, made again from what was kept (fresh arrays each pass)."""
        for plans, arrays, index in self._frames:
            yield _restored(plans, arrays, index)

    @property
    def complete(self) -> bool:
        """Every frame of a pass is kept: nothing to decode."""
        return self.ready and self.resume is None

    def close(self) -> None:
        self.abandon()
        self.ready = False


_WIDTHS = ((1 << 8, np.uint8), (1 << 16, np.uint16), (1 << 32, np.uint32))


def _compact(frame: pd.DataFrame):
    """(plans, arrays, index) of a frame, its integer columns in fewer bytes: each as its offset
    from the block's least value in the narrowest unsigned type that holds the block's range;
    end_ns as start_ns + latency_ns when it is that; categoricals as their codes. (None, ...)
    for a frame with a column it does not know how to keep."""
    names = list(frame.columns)
    if not isinstance(frame.index, pd.RangeIndex) or len(set(names)) != len(names):
        return None, [], None
    plans, arrays = [], []
    for name in names:
        column = frame[name]
        dtype = column.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            plans.append((name, "category", dtype))
            arrays.append(column.cat.codes.to_numpy())
            continue
        if not isinstance(dtype, np.dtype) or dtype.kind not in "iufb":
            return None, [], None
        values = column.to_numpy()
        if name == "end_ns" and dtype == np.uint64 and "start_ns" in plans_of(plans) and "latency_ns" in \
                plans_of(plans) and frame["start_ns"].dtype == dtype and frame["latency_ns"].dtype == dtype and \
                np.array_equal(values, frame["start_ns"].to_numpy() + frame["latency_ns"].to_numpy()):
            plans.append((name, "end", dtype))
            continue
        if dtype.kind in "iu" and len(values):
            low, high = int(values.min()), int(values.max())
            if low == high:   # one value in the block (a process, a device, a record size): none kept
                plans.append((name, "constant", (dtype, dtype.type(low))))
                continue
            if dtype == np.uint64 and values[0] == low and values[-1] == high and len(values) < 1 << 32:
                steps = np.diff(values)   # wraps below zero: a block out of order is caught next
                if int(steps.max()) < 1 << 32 and np.all(values[1:] >= values[:-1]):
                    # times in order (start_ns): each as its step from the one before, 4 bytes
                    plans.append((name, "steps", (dtype, dtype.type(low))))
                    arrays.append(steps.astype(np.uint32))
                    continue
            width = next((w for top, w in _WIDTHS if high - low < top), None)
            if width is not None and np.dtype(width).itemsize < dtype.itemsize:
                narrow = np.subtract(values, dtype.type(low), dtype=dtype).astype(width)
                plans.append((name, "offset", (dtype, dtype.type(low))))
                arrays.append(narrow)
                continue
        plans.append((name, "plain", dtype))
        arrays.append(values.copy())   # the caller may change its block's arrays
    return plans, arrays, frame.index


def plans_of(plans: list) -> list:
    return [p[0] for p in plans]


def _restored(plans: list, arrays: list, index: pd.RangeIndex) -> pd.DataFrame:
    columns: dict[str, Any] = {}
    stored = iter(arrays)
    for name, how, extra in plans:
        if how == "end":
            columns[name] = columns["start_ns"] + columns["latency_ns"]
        elif how == "category":
            columns[name] = pd.Categorical.from_codes(next(stored), dtype=extra)
        elif how == "offset":
            dtype, low = extra
            out = np.empty(len(index), dtype)
            np.add(next(stored), low, out=out, dtype=dtype, casting="unsafe")
            columns[name] = out
        elif how == "constant":
            dtype, value = extra
            columns[name] = np.full(len(index), value, dtype)
        elif how == "steps":
            dtype, first = extra
            out = np.empty(len(index), dtype)
            out[0] = first
            np.cumsum(next(stored), dtype=dtype, out=out[1:])
            out[1:] += first
            columns[name] = out
        else:
            columns[name] = next(stored).copy()
    return pd.DataFrame(columns, index=index, copy=False)
