"""Per phase, the extent of its counted data calls: how many, the first and last start, the
last end, the offset and latency ranges. The HTML report's chart bins are fixed by them
(reporters/chart_bins.py); a streamed report opened for charts gathers them in its
last pass over the blocks (analysis/measure/stream_full.py), so the charts need one pass more, not two.
"""

from __future__ import annotations

import numpy as np

_LOW, _HIGH = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def counted(calls) -> np.ndarray:
    """Rows of the counted data calls (no warm-ups, in a phase): what the charts draw."""
    return np.flatnonzero(calls.data & (calls.phase > 0))


class Extents:
    """Per phase number: its counted calls, first and last start, last end, offset and latency
    ranges (ns and bytes, int64), from blocks of calls."""

    def __init__(self, phases: int):
        n = phases + 1
        self.calls = np.zeros(n, np.int64)
        self.first_start, self.last_start = np.full(n, _LOW), np.full(n, _HIGH)
        self.last_end = np.full(n, _HIGH)
        self.offset_min, self.offset_max = np.full(n, _LOW), np.full(n, _HIGH)
        self.latency_min, self.latency_max = np.full(n, _LOW), np.full(n, _HIGH)

    def add(self, calls) -> None:
        rows = counted(calls)
        rows = rows[calls.phase[rows] < len(self.calls)]
        if not len(rows):
            return
        phase = calls.phase[rows]
        self.calls += np.bincount(phase, minlength=len(self.calls))
        for low, high, column in ((self.first_start, self.last_start, calls.start_ns),
                                  (self.offset_min, self.offset_max, calls.offset),
                                  (self.latency_min, self.latency_max, calls.latency_ns)):
            values = np.asarray(column[rows], dtype=np.int64)
            np.minimum.at(low, phase, values)
            np.maximum.at(high, phase, values)
        np.maximum.at(self.last_end, phase, np.asarray(calls.end_ns[rows], dtype=np.int64))
