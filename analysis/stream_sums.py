"""Float sums fed in order, bit for bit the sum the in-memory path takes over the whole array.

The phase table's lat_mean_us is `np.add.reduceat` over a phase's latencies in µs: a float
sum, whose rounding depends on how numpy adds. reduceat takes the segment's first value and
adds numpy's pairwise sum of the rest (numpy/_core/src/umath/loops_utils.h.src
pairwise_sum: below 8 values one by one from 0.0; up to 128 values 8 accumulators, combined
((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the tail one by one; above, split at half rounded
down to a multiple of 8, each half summed so, the two added). The tree depends only on the
count, known after a first pass, so `PairwiseSum(count)` walks it as the values arrive:
memory one partial leaf (< 128 values) and one value per level of the tree.
"""

from __future__ import annotations

import numpy as np

LEAF = 128   # numpy's PW_BLOCKSIZE


def _leaf_sums(values: np.ndarray) -> np.ndarray:
    """numpy's pairwise_sum of each row of `values` (rows of one length, at most LEAF)."""
    m, n = values.shape
    if n < 8:
        out = np.zeros(m)
        for i in range(n):
            out += values[:, i]
        return out
    r = values[:, :8].copy()
    whole = n - n % 8
    for i in range(8, whole, 8):
        r += values[:, i:i + 8]
    out = ((r[:, 0] + r[:, 1]) + (r[:, 2] + r[:, 3])) + ((r[:, 4] + r[:, 5]) + (r[:, 6] + r[:, 7]))
    for i in range(whole, n):
        out += values[:, i]
    return out


class PairwiseSum:
    """np.add.reduceat(values, [0])[0] of `count` values given in order, in pieces."""

    def __init__(self, count: int):
        self.count, self.seen = count, 0
        self.first = None
        self.buffer = np.empty(0)
        self.stack: list[list] = []    # internal nodes on the path to the next leaf: [size, left size, left done]
        self.values: list[float] = []  # sums of finished subtrees whose parent is not finished
        self.next = self._descend(count - 1) if count > 1 else None

    def _descend(self, n: int) -> int:
        while n > LEAF:
            half = n // 2
            half -= half % 8
            self.stack.append([n, half, False])
            n = half
        return n

    def _climb(self) -> int:
        """After a leaf: how many finished nodes its value completes (each adds two values)."""
        adds = 0
        while self.stack:
            node = self.stack[-1]
            if not node[2]:
                node[2] = True
                self.next = self._descend(node[0] - node[1])
                return adds
            self.stack.pop()
            adds += 1
        self.next = None
        return adds

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64)
        self.seen += len(values)
        if self.first is None and len(values):
            self.first, values = values[0], values[1:]
        buf = np.concatenate([self.buffer, values]) if len(self.buffer) else values
        leaves, pos = [], 0   # (start, size, adds after it)
        while self.next is not None and pos + self.next <= len(buf):
            size = self.next
            leaves.append((pos, size, self._climb()))
            pos += size
        self.buffer = buf[pos:].copy()
        if not leaves:
            return
        starts = np.array([a for a, _, _ in leaves], dtype=np.int64)
        sizes = np.array([b for _, b, _ in leaves], dtype=np.int64)
        sums = np.empty(len(leaves))
        for size in np.unique(sizes):
            mine = np.flatnonzero(sizes == size)
            sums[mine] = _leaf_sums(buf[starts[mine, None] + np.arange(size)])
        for value, (_, _, adds) in zip(sums.tolist(), leaves):
            self.values.append(value)
            for _ in range(adds):
                right = self.values.pop()
                self.values[-1] = self.values[-1] + right

    def total(self) -> float:
        if self.seen != self.count:
            raise ValueError(f"PairwiseSum: {self.seen} values given, {self.count} announced")
        if self.count == 1:
            return float(self.first)
        return float(self.first + self.values[0])
