"""Exact per-phase latency percentiles in memory bounded by the phases, not the calls.

    >>> exact = percentiles(lambda: blocks_of(trace), phases=300, percents=[50, 90, 99, 99.9])

`blocks` is called once per pass and yields (phase, latency_ns) pairs of integer arrays,
one block of the trace at a time; phases are numbered 0 .. phases-1 (other numbers are
ignored). The answer is, per phase, exactly what `np.percentile` (method "linear") gives on
the phase's latencies in µs (latency_ns / 1e3), bit for bit: the report's figures.

How: a radix select. A percentile of n values interpolates between two order statistics
(ranks floor(v) and floor(v)+1 of the virtual index v). Pass 0 counts each phase's values
and finds its minimum and maximum. Each later pass splits each wanted rank's current range
[lo, lo + 2^w) into 2^BITS bins by the value's high bits, counts the values of each bin over
all blocks, and keeps the bin that holds the rank; once a range is one value wide, the value
is the order statistic. Memory: 2^BITS counters per distinct range (at most 8 per phase,
fewer when ranks share a bin), never a copy of the values. Passes: 1 + ceil(w / BITS) for
the widest phase (w = bits of max - min: 2 passes for latencies spanning up to 16 ms at
BITS=12, 3 up to 68 s). Each pass re-reads the blocks; docs/performance.md has the cost.

Why not a sketch (t-digest, DDSketch): the report's p99 must be the exact order statistic
(np.quantile's, whatever the blocks' size), and the claim verdicts compare against it;
a sketch's stated error would change the JSON. Why not hold each phase's latencies: a
10-minute fio job is one phase of 200 million calls (1.6 GiB as int64 before any sort).
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

BITS = 12
BINS = 1 << BITS
# bin numbers held before counting them (8 bytes each)
FLUSH = 4 << 20

Blocks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]


def percentiles(blocks: Blocks | None, phases: int, percents, extent=None, before_last_pass=None,
                select=None, divisor: float = 1e3) -> np.ndarray:
    """(phases × len(percents)) float64 array: np.percentile(latency_ns / 1e3, percents) of
    each phase's values, NaN for a phase without any. `extent`: (count, minimum, maximum) per
    phase, when the caller counted them already (it saves pass 0). `before_last_pass`: called
    (without arguments) before the pass after which no other comes, if any does. `select`: when
    the caller holds the values sorted (analysis/phasing/latency_store.py), a function from the
    (phase, rank) rows wanted to their values, in place of the passes over `blocks`. `divisor`:
    the values' unit, 1e3 for µs from nanoseconds, 1e9 for seconds."""
    return quantiles(blocks, phases, np.true_divide(np.asarray(percents, dtype=np.float64), 100), extent,
                     before_last_pass, select, divisor)


def quantiles(blocks: Blocks | None, phases: int, q, extent=None, before_last_pass=None, select=None,
              divisor: float = 1e3) -> np.ndarray:
    """percentiles() at fractions `q` (0..1) instead of percents: np.quantile(latency_ns / 1e3,
    q) of each phase's values, bit for bit."""
    q = np.asarray(q, dtype=np.float64)
    if not phases:
        return np.full((0, len(q)), np.nan)
    count, lo, hi = (np.asarray(e, dtype=np.int64) for e in extent) if extent is not None else _extent(blocks, phases)
    n = count[:, None].astype(np.float64)
    # numpy's own formula for method "linear", in its order of operations, so that the
    # floating-point rounding is the same
    virtual = (n - 1) * q
    below = np.floor(virtual)
    gamma = virtual - below
    last = count[:, None] - 1
    previous = np.clip(below.astype(np.int64), 0, np.maximum(last, 0))
    following = np.clip(previous + 1, 0, np.maximum(last, 0))
    # at or past the last value numpy takes the last value on both sides
    at_end = virtual >= last
    previous, following = np.where(at_end, last, previous), np.where(at_end, last, following)
    # the order statistics wanted: one row per (phase, rank), shared between percentiles
    phase_of = np.repeat(np.arange(phases), previous.shape[1] * 2).reshape(phases, -1)
    ranks = np.concatenate([previous, following], axis=1)
    has = count > 0
    wanted = np.unique(np.stack([phase_of[has].ravel(), ranks[has].ravel()], axis=1), axis=0)
    values = select(wanted) if select is not None else _select(blocks, phases, wanted, lo, hi, before_last_pass)
    found = {(int(p), int(r)): v for (p, r), v in zip(wanted, values)}
    out = np.full((phases, len(q)), np.nan)
    for p in np.flatnonzero(has):
        a = np.array([found[(p, int(r))] for r in previous[p]], dtype=np.float64) / divisor
        b = np.array([found[(p, int(r))] for r in following[p]], dtype=np.float64) / divisor
        out[p] = _lerp(a, b, gamma[p])
    return out


def select(blocks: Blocks, phases: int, wanted: np.ndarray, extent) -> np.ndarray:
    """The value of rank wanted[i, 1] (from 0) among phase wanted[i, 0]'s values, for each i: the
    radix select's order statistics themselves. `extent`: (count, minimum, maximum) per phase."""
    _, lo, hi = (np.asarray(e, dtype=np.int64) for e in extent)
    return _select(blocks, phases, wanted, lo, hi)


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """numpy's interpolation between two order statistics, in its order of operations
    (from b's side when t >= 0.5, for monotonicity)."""
    diff = b - a
    out = a + diff * t
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


def _extent(blocks: Blocks, phases: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pass 0: per phase, how many values, the smallest and the largest."""
    count = np.zeros(phases, dtype=np.int64)
    lo = np.full(phases, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(phases, -1, dtype=np.int64)
    for phase, value in blocks():
        phase, value = _kept(phase, value, phases)
        count += np.bincount(phase, minlength=phases)
        np.minimum.at(lo, phase, value)
        np.maximum.at(hi, phase, value)
    return count, lo, hi


def _kept(phase: np.ndarray, value: np.ndarray, phases: int) -> tuple[np.ndarray, np.ndarray]:
    phase = np.asarray(phase, dtype=np.int64)
    value = np.asarray(value).view(np.int64) if np.asarray(value).dtype == np.uint64 else np.asarray(value, np.int64)
    keep = (phase >= 0) & (phase < phases)
    return (phase, value) if keep.all() else (phase[keep], value[keep])


def _select(blocks: Blocks, phases: int, wanted: np.ndarray, lo: np.ndarray, hi: np.ndarray,
            before_last_pass=None) -> np.ndarray:
    """The value of rank wanted[i, 1] among phase wanted[i, 0]'s values, for each i."""
    phase, rank = wanted[:, 0], wanted[:, 1].copy()
    start = lo[phase].copy()
    # width in bits of each target's range [start, start + 2^width)
    width = np.array([int(w).bit_length() for w in hi[phase] - lo[phase]], dtype=np.int64)
    while (width > 0).any():
        shift = np.maximum(width - BITS, 0)
        active = np.flatnonzero(width > 0)
        # targets narrowed to the same range count the same bins: one histogram per range
        ranges, slot_of = np.unique(np.stack([phase[active], start[active], width[active]], axis=1),
                                    axis=0, return_inverse=True)
        slot_of = slot_of.ravel()
        if before_last_pass is not None and not shift[active].any():   # every range one value wide after it
            before_last_pass()
        counts = _histograms(blocks, phases, ranges)
        for target, slot in zip(active, slot_of):
            cum = np.cumsum(counts[slot])
            b = int(np.searchsorted(cum, rank[target], side="right"))
            rank[target] -= int(cum[b - 1]) if b else 0
            start[target] += b << int(shift[target])
            width[target] = shift[target]
    return start


def _histograms(blocks: Blocks, phases: int, ranges: np.ndarray) -> np.ndarray:
    """One pass: per range (phase, start, width), the count of its values in each of its bins."""
    counts = np.zeros(len(ranges) * BINS, dtype=np.int64)
    # a phase has at most a few ranges: the k-th range of each phase is looked up by table
    order = np.lexsort((ranges[:, 1], ranges[:, 0]))
    k_of = np.zeros(len(ranges), dtype=np.int64)
    first = np.r_[True, ranges[order][1:, 0] != ranges[order][:-1, 0]] if len(ranges) else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    k_of[order] = np.arange(len(order)) - group_start
    by_phase = np.unique(ranges[:, 0]) if len(ranges) else np.empty(0, np.int64)
    k_count = int(k_of.max()) + 1 if len(ranges) else 0
    if len(by_phase) < k_count:   # a few phases with many ranks each (a curve of 401 quantiles)
        return _histograms_by_phase(blocks, phases, ranges, by_phase, counts)
    # per k: for each phase, its k-th range's slot, start, width and shift (-1: none), so that
    # a block is looked up with one-dimensional gathers
    tables = []
    for k in range(k_count):
        mine = np.flatnonzero(k_of == k)
        slot = np.full(phases, -1, dtype=np.int64)
        begin, size = np.zeros(phases, dtype=np.int64), np.zeros(phases, dtype=np.int64)
        slot[ranges[mine, 0]] = mine
        begin[ranges[mine, 0]] = ranges[mine, 1]
        size[ranges[mine, 0]] = np.int64(1) << ranges[mine, 2]
        shift = np.maximum(ranges[:, 2] - BITS, 0)
        tables.append((slot, begin, size, np.where(slot >= 0, shift[np.maximum(slot, 0)], 0)))

    def bins_of(phase: np.ndarray, value: np.ndarray):
        for slot, begin, size, shift in tables:
            offset = value - begin[phase]
            # phases without a k-th range have size 0: no value is inside
            inside = np.flatnonzero((offset >= 0) & (offset < size[phase]))
            p = phase[inside]
            yield slot[p] * BINS + (offset[inside] >> shift[p])
    return _counted(blocks, phases, bins_of, counts).reshape(len(ranges), BINS)


def _counted(blocks: Blocks, phases: int, bins_of, counts: np.ndarray) -> np.ndarray:
    """`counts` plus, over one pass, a count of each bin number bins_of(phase, value) yields."""
    pending, held = [], 0
    for phase, value in blocks():
        for found in bins_of(*_kept(phase, value, phases)):
            pending.append(found)
            held += len(found)
        # a bincount costs its whole length: counted over many blocks at once, not per block
        if held >= FLUSH:
            counts += np.bincount(np.concatenate(pending), minlength=len(counts))
            pending, held = [], 0
    if pending:
        counts += np.bincount(np.concatenate(pending), minlength=len(counts))
    return counts


def _histograms_by_phase(blocks: Blocks, phases: int, ranges: np.ndarray, by_phase: np.ndarray,
                         counts: np.ndarray) -> np.ndarray:
    """_histograms looked up phase by phase: the ranges of one phase have one width and never
    overlap (each is a bin of the same split of the phase's extent), so a value's range is
    found by one binary search among its phase's starts."""
    order = np.lexsort((ranges[:, 1], ranges[:, 0]))
    mine = {int(p): order[ranges[order, 0] == p] for p in by_phase}

    def bins_of(phase: np.ndarray, value: np.ndarray):
        for p, slots in mine.items():
            v = value[phase == p]
            starts, width = ranges[slots, 1], int(ranges[slots[0], 2])
            at = np.searchsorted(starts, v, side="right") - 1
            offset = v - starts[np.maximum(at, 0)]
            inside = np.flatnonzero((at >= 0) & (offset < (np.int64(1) << width)))
            yield slots[at[inside]] * BINS + (offset[inside] >> max(width - BITS, 0))
    return _counted(blocks, phases, bins_of, counts).reshape(len(ranges), BINS)
