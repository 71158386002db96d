"""The timed calls' latencies of each phase, gathered during the sums pass, for the exact
percentiles: no pass over the trace of their own.

    store = latency_store.Latencies(slots)       # budget: IOWITNESS_LATENCY_BYTES
    store.add(phase, latency_ns)                  # per block of the sums pass (int64 arrays)
    store.percentiles([50, 90, 99, 99.9], extent) # as quantiles.percentiles gives them, bit for bit
    store.close()

Each call is kept as one int64, phase << 40 | latency_ns (8 bytes a timed call), while they
fit in the budget (default 192 MiB: 24 Mi calls): the percentiles are then one sort of them,
and a rank of a phase is an index into it. Past the budget (or a latency of 2^40 ns = 18
minutes, or 2^23 phases, which the key cannot hold) the calls go to two temporary files
(12 bytes a call) and the percentiles are analysis/phasing/quantiles.py's radix select over
those files: passes over flat arrays, not over the trace (no decoding, no phase walk).

Memory: at most the budget, plus one copy of it while it is sorted; on disk past it,
12 bytes a timed call (200 M calls: 2.4 GB in $TMPDIR).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from iowitness import tuning
from iowitness.analysis.phasing import quantiles

BUDGET_BYTES = tuning.count_from_env("IOWITNESS_LATENCY_BYTES", 192 << 20, least=0)
SHIFT = 40
LOW = (np.int64(1) << SHIFT) - 1
# values per chunk read back from the files
CHUNK = 4 << 20


class Latencies:
    """Per phase (0 .. slots-1), the latencies of its timed calls (see the module's text)."""

    def __init__(self, slots: int, budget: int | None = None):
        self.slots = slots
        self.budget = BUDGET_BYTES if budget is None else budget
        self._keys: list[np.ndarray] = []
        self._held = 0
        self._folder: tempfile.TemporaryDirectory | None = None
        self._files: tuple = ()
        self.count = 0
        self._fits = slots <= 1 << (62 - SHIFT)

    @property
    def spilled(self) -> bool:
        return self._folder is not None

    def add(self, phase: np.ndarray, latency: np.ndarray) -> None:
        phase = np.asarray(phase, dtype=np.int64)
        latency = np.asarray(latency, dtype=np.int64)
        if not len(phase):
            return
        self.count += len(phase)
        if not self.spilled and self._fits and int(latency.min()) >= 0 and int(latency.max()) <= LOW \
                and self._held + 8 * len(phase) <= self.budget:
            self._keys.append((phase << SHIFT) | latency)
            self._held += 8 * len(phase)
            return
        if not self.spilled:
            self._spill()
        self._write(phase, latency)

    def _spill(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="iowitness-latency-")
        names = (os.path.join(self._folder.name, "phase.i4"), os.path.join(self._folder.name, "latency.i8"))
        self._files = tuple(open(name, "wb+") for name in names)
        keys, self._keys, self._held = self._keys, [], 0
        for k in keys:
            self._write(k >> SHIFT, k & LOW)

    def _write(self, phase: np.ndarray, latency: np.ndarray) -> None:
        phase.astype(np.int32).tofile(self._files[0])
        latency.tofile(self._files[1])

    def _chunks(self):
        for f in self._files:
            f.flush()
        phase_f, latency_f = self._files
        for at in range(0, self.count, CHUNK):
            n = min(CHUNK, self.count - at)
            phase_f.seek(4 * at)
            latency_f.seek(8 * at)
            yield (np.fromfile(phase_f, dtype=np.int32, count=n).astype(np.int64),
                   np.fromfile(latency_f, dtype=np.int64, count=n))

    def percentiles(self, percents, extent) -> np.ndarray:
        """quantiles.percentiles of the calls added, at `percents`; `extent`: (count, minimum,
        maximum) per phase of the same calls."""
        if self.spilled:
            return quantiles.percentiles(self._chunks, self.slots, percents, extent=extent)
        keys = np.concatenate(self._keys) if self._keys else np.empty(0, np.int64)
        self._keys = []
        count = np.asarray(extent[0], dtype=np.int64)
        start = np.r_[0, np.cumsum(count)[:-1]]

        def select(wanted: np.ndarray) -> np.ndarray:
            # the keys sort by phase, then latency: a phase's r-th latency is at its start + r in
            # the sorted keys, which a partition at those places puts there without sorting the
            # rest (0.25-0.38 s against 0.63 s for 10 M keys and 100-2,300 places)
            places = start[wanted[:, 0]] + wanted[:, 1]
            if len(places):
                keys.partition(np.unique(places))
            return keys[places] & LOW
        return quantiles.percentiles(None, self.slots, percents, extent=extent, select=select)

    def close(self) -> None:
        self._keys = []
        for f in self._files:
            f.close()
        self._files = ()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
