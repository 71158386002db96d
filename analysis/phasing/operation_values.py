"""A latency claim's value per operation (whole nanoseconds, read as seconds), in memory up to a
budget and in a temporary file past it: the exact statistics a claim's band reads, without the
values held in memory (fio's requests over several hosts: 8 bytes each, per host and pooled).

    values = OperationValues()            # budget: IOWITNESS_OPERATION_BYTES
    values.add(ns)                        # int64 per block, in the operations' order
    values.set(index, ns)                 # a value known only later (latency.ThreadGaps)
    values.finish()
    later = values.tail(k)                # without the first k (fio's ramp)
    len(later), later.mean(), later.std(ddof=1), later.at([0, 17, len(later) - 1])

Every figure is numpy's over the array of seconds (`ns / 1e9`) bit for bit, whether the values
are in memory or in the file: the mean and the standard deviation are numpy's pairwise sums
rebuilt over the file's chunks (each chunk a node of numpy's own split of the whole array, so
the same additions in the same order: a float mean over a different order changes the JSON's
last digits), the order statistics are those a band reads, found together (fetch) by one
partition of a copy in memory, or by analysis/phasing/quantiles.py's radix select over the file
(2 or 3 passes of it for latencies up to 16 ms or 68 s), never a sorted copy of them all.

Memory: at most the budget (default 64 MiB: 8 Mi operations) while held, and a copy of it while
its order statistics are found; past it a chunk of 4 Mi values (32 MiB) at a time and 8 bytes an
operation on disk in $TMPDIR (a file with no name, gone when the process ends however it ends).
"""

from __future__ import annotations

import io
import os
import tempfile

import numpy as np

from iowitness import tuning
from iowitness.analysis.phasing import quantiles
from iowitness.errors import OutputError

BUDGET_BYTES = tuning.count_from_env("IOWITNESS_OPERATION_BYTES", 64 << 20, least=0)
# values per chunk read back from the file (32 MiB): each a node of numpy's pairwise split of the
# whole array, summed by numpy itself (_pairwise)
CHUNK = 4 << 20


class OperationValues:
    """The values of one question (see the module's text); `start`: the first one a tail keeps."""

    def __init__(self, budget: int | None = None):
        self.budget = BUDGET_BYTES if budget is None else budget
        self._parts: list[np.ndarray] = []   # held in memory, in order, after the file's values
        self._held = 0                       # values in _parts
        self._file: io.FileIO | None = None
        self._written = 0                    # values in the file
        self._memory: np.ndarray | None = None   # once finished in memory: all of them
        self._ranks: dict[int, int] = {}     # order statistics found, by rank
        self.start = 0
        self.total = 0

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def __len__(self) -> int:
        return self.total - self.start

    def add(self, ns: np.ndarray) -> None:
        ns = np.asarray(ns, dtype=np.int64)
        if not len(ns):
            return
        self.total += len(ns)
        if not self.spilled and 8 * (self._held + len(ns)) <= self.budget:
            self._parts.append(ns)   # the caller's own array (a block's selection), kept as it is
            self._held += len(ns)
            return
        try:
            if self._file is None:
                # no name: removed when closed, and by the kernel when the process ends on an error
                self._file = tempfile.TemporaryFile(prefix="iowitness-values-", buffering=0)
            for part in self._parts + [ns]:
                _write_at(self._file.fileno(), np.ascontiguousarray(part).tobytes(), 8 * self._written)
                self._written += len(part)
        except OSError as exc:
            raise OutputError(f"judging a latency claim: cannot write its operations' temporary file in "
                              f"{tempfile.gettempdir()} ({exc.strerror or exc}): it needs 8 bytes per operation "
                              "there; point TMPDIR at a file system with room") from None
        self._parts, self._held = [], 0

    def set(self, index: int, ns: int) -> None:
        """The value at `index` (from the first added) is `ns`."""
        if index < self._written:
            assert self._file is not None
            _write_at(self._file.fileno(), np.int64(ns).tobytes(), 8 * index)
            return
        at = index - self._written
        for part in self._parts:
            if at < len(part):
                part[at] = ns
                return
            at -= len(part)
        raise IndexError(index)

    def finish(self) -> OperationValues:
        if not self.spilled:
            self._memory = np.concatenate(self._parts) if self._parts else np.empty(0, np.int64)
            self._parts = []
        return self

    def tail(self, k: int) -> OperationValues:
        """The same values without the first k (a view: nothing copied)."""
        if not k:
            return self
        other = OperationValues(self.budget)
        other._file, other._written, other.total = self._file, self._written, self.total
        other._memory = self._memory
        other.start = min(self.start + k, self.total)
        return other

    def ns_at(self, at: int, n: int) -> np.ndarray:
        """n values (ns) in order from the at-th of those kept (a tail's first is 0)."""
        return self._read(self.start + at, n)

    def _read(self, at: int, n: int) -> np.ndarray:
        """n values (ns) from position `at` (counted from the first added)."""
        if self._memory is not None:
            return self._memory[at:at + n]
        assert self._file is not None
        out = np.empty(n, np.int64)
        view, done = out.data.cast("B"), 0
        while done < 8 * n:
            got = os.preadv(self._file.fileno(), [view[done:]], 8 * at + done)
            if not got:
                raise OSError(f"a temporary file of operation values ended early ({done} of {8 * n} bytes)")
            done += got
        return out

    def _chunks(self):
        for at in range(self.start, self.total, CHUNK):
            yield self._read(at, min(CHUNK, self.total - at))

    def _pairwise(self, leaf, at: int, n: int) -> np.float64:
        """np.add.reduce of leaf(seconds) over the values [at, at + n): numpy's pairwise summation
        split (n2 = n / 2 rounded down to a multiple of 8) down to nodes of a chunk, each summed by
        numpy itself."""
        if n <= CHUNK:
            return np.add.reduce(leaf(self._read(at, n) / 1e9))
        half = n // 2
        half -= half % 8
        return self._pairwise(leaf, at, half) + self._pairwise(leaf, at + half, n - half)

    def mean(self) -> float:
        """np.mean of the values in seconds."""
        if self._memory is not None:
            return float((self._memory[self.start:] / 1e9).mean())
        return float(self._pairwise(lambda x: x, self.start, len(self)) / len(self))

    def std(self, ddof: int) -> float:
        """np.std(ddof=ddof) of the values in seconds: numpy's two passes (_methods._var)."""
        if self._memory is not None:
            return float((self._memory[self.start:] / 1e9).std(ddof=ddof))
        n = len(self)
        mean = np.true_divide(np.array([self._pairwise(lambda x: x, self.start, n)]), n)
        squares = self._pairwise(lambda x: np.square(np.subtract(x, mean)), self.start, n)
        return float(np.sqrt(squares / max(n - ddof, 0)))

    def at(self, ranks) -> np.ndarray:
        """The values (seconds) at these ranks (from 0) of the values sorted."""
        return self.at_ns(ranks) / 1e9

    def at_ns(self, ranks) -> np.ndarray:
        """at() in nanoseconds."""
        ranks = np.asarray(ranks, dtype=np.int64)
        self.fetch(ranks)
        return np.array([self._ranks[int(r)] for r in ranks], dtype=np.int64)

    def fetch(self, ranks) -> None:
        """Find these order statistics at once, for at() to give without a pass or a sort of its
        own: in memory, one partition of a copy at them (freed after); in the file, one radix
        select (a few passes over it)."""
        wanted = sorted({int(r) for r in ranks} - self._ranks.keys())
        if not wanted:
            return
        if self._memory is not None:
            ordered = self._memory[self.start:].copy()
            ordered.partition(wanted)
            self._ranks.update(zip(wanted, (int(v) for v in ordered[wanted])))
            return
        n = len(self)
        low, high = np.iinfo(np.int64).max, np.iinfo(np.int64).min
        for chunk in self._chunks():
            low, high = min(low, int(chunk.min())), max(high, int(chunk.max()))
        found = quantiles.select(lambda: ((np.zeros(len(c), np.int64), c) for c in self._chunks()), 1,
                                 np.array([[0, r] for r in wanted], dtype=np.int64),
                                 (np.array([n]), np.array([low]), np.array([high])))
        self._ranks.update(zip(wanted, (int(v) for v in found)))


def _write_at(fd: int, data: bytes, offset: int) -> None:
    """All of `data` at `offset` (a write may take only part of it)."""
    done = 0
    while done < len(data):
        done += os.pwrite(fd, data[done:], offset + done)
