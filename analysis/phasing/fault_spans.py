"""The distinct bytes of a file each phase's page faults mapped: the union of their ranges.

A fault record says the range it mapped (offset, requested: probes/faults.bpf.h). Two faults of
one phase may map the same page: a read fault's fault-around maps the pages around it, and a
store on one of them later makes a write fault on it (IOzone -B's write phase: 2,571 faults over
16 MiB + 13 pages of a 16 MiB file). What a phase's faults mapped is the union of their ranges,
counted once: the file's size there.

Memory: per phase, its union as sorted disjoint ranges (one per run of mapped bytes: bounded by
the file's pages, never by the number of faults; a sequential pass is one range) and the ranges
of the blocks since its last merge, merged when they outnumber the union (and at least
MERGE_AT), so each range is sorted a bounded number of times.

    spans = FaultSpans()
    for block in blocks:
        spans.add(phase, offset, length)      # the block's faults
    spans.bytes()                             # {phase: distinct bytes mapped}
"""

from __future__ import annotations

import numpy as np

# the new ranges of a phase are merged into its union once there are this many (or as many as
# the union holds, when more): each block's few faults do not re-sort a large union
MERGE_AT = 4096


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint [start, end) ranges covering exactly the bytes of the ranges given;
    ranges that touch are joined."""
    if not len(starts):
        return starts.astype(np.int64), ends.astype(np.int64)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order].astype(np.int64), ends[order].astype(np.int64)
    reach = np.maximum.accumulate(ends)
    # a range starts a new run where it begins past everything before it
    new = np.r_[True, starts[1:] > reach[:-1]]
    first = np.flatnonzero(new)
    last = np.r_[first[1:], len(starts)] - 1
    return starts[first], reach[last]


class FaultSpans:
    """The union of each phase's fault ranges, block by block (see the module)."""

    def __init__(self) -> None:
        self._union: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._pending: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._pending_count: dict[int, int] = {}

    def add(self, phase: np.ndarray, offset: np.ndarray, length: np.ndarray) -> None:
        """One block's faults: each one's phase, file offset and bytes mapped."""
        keep = length > 0
        phase, offset, length = phase[keep], offset[keep].astype(np.int64), length[keep].astype(np.int64)
        if not len(phase):
            return
        order = np.argsort(phase, kind="stable")
        phase, start, end = phase[order], offset[order], (offset + length)[order]
        bounds = np.flatnonzero(np.r_[True, phase[1:] != phase[:-1], True])
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            p = int(phase[lo])
            new = union(start[lo:hi], end[lo:hi])
            self._pending.setdefault(p, []).append(new)
            self._pending_count[p] = self._pending_count.get(p, 0) + len(new[0])
            if self._pending_count[p] >= max(MERGE_AT, len(self._union.get(p, ((), ()))[0])):
                self._merge(p)

    def _merge(self, p: int) -> None:
        parts = self._pending.pop(p, [])
        self._pending_count.pop(p, None)
        if p in self._union:
            parts.append(self._union[p])
        self._union[p] = union(np.concatenate([s for s, _ in parts]), np.concatenate([e for _, e in parts]))

    def bytes(self) -> dict[int, int]:
        """Per phase with faults: the distinct bytes they mapped."""
        for p in list(self._pending):
            self._merge(p)
        return {p: int((ends - starts).sum()) for p, (starts, ends) in self._union.items()}
