"""Rebuild the phases of a benchmark from its events alone.

A span is an open-to-close stretch of one file in one process (a file opened before tracing
starts a span at its first call). Within a span, the data calls of each thread are cut where
the direction changes (read ↔ write); a thread that alternates all the time (fio randrw) is
one "mixed" phase instead of hundreds of tiny ones. Every other call of the span (lseek,
fsync, open, close, ...) belongs to the phase of the data call before it in the same thread,
or to the next one when it comes before any data call.

The phase table (one row per phase) is analysis/phasing/phase_table.py. Everything is vectorised over
the event table: syscall names are looked up once per category, never per row, and the only
Python loops run over phases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.read import distinct
from iowitness.collector.format.traceformat import async_ops, ops_of_kind
from iowitness.probes.layout import layout

# an io_uring request on a registered file (probes/events.h): its fd is the table index
URING_FIXED_FILE = layout().constants["IOW_URING_FIXED_FILE"]
URING_OPS = tuple(name for name in async_ops() if name.startswith("uring_"))
FAULT_MAJOR = layout().constants["IOW_FAULT_MAJOR"]
PROT_EXEC = 0x4   # mmap's prot bit, in the low bits of an mmap record's flags (IOW_MMAP_PROT_MASK)
# registered files no traced open named get fds from here down: never a real fd
FIXED_FD_BASE = -1000

# what counts as a read, a write, ...: the table of operation kinds in probes/events.h
READS, WRITES, OPENS, SYNCS, FAULTS = (ops_of_kind(k) for k in ("read", "write", "open", "sync", "fault"))

# faults and calls on a mapping (fd -1 in the record) join the description of the fd the
# file was mapped from; a mapping made before tracing began gets one of these
MAPPED_FD_BASE = -100_000
ON_MAPPINGS = FAULTS + ("munmap", "msync", "madvise")

# the calls that move data between two files (one record per target side, probes/events.h)
TRANSFERS = tuple(name for name in READS + WRITES if name.startswith(("copy_file_range_", "sendfile_", "splice_")))

# the data calls that carry their own offset
POSITIONED = tuple(name for name in READS + WRITES if name.startswith("p"))

# what a call is, as a small integer per event; creat and ftruncate are singled out of their
# kinds (open, resize) because each empties a file
OTHER, READ, WRITE, OPEN, CLOSE, SYNC, CREAT, FTRUNCATE = range(8)
_KIND_OF = {**{n: READ for n in READS}, **{n: WRITE for n in WRITES}, **{n: OPEN for n in OPENS},
            "fault_read": READ, "fault_write": WRITE,
            **{n: CLOSE for n in ops_of_kind("close")}, **{n: SYNC for n in SYNCS},
            "creat": CREAT, "ftruncate": FTRUNCATE}

# an alternating thread is "mixed" when its direction runs average fewer calls than this
MIXED_RUN_LENGTH = 8
# a pattern names a phase when this share of its steps follows it
PATTERN_SHARE = 0.75
# IOzone's own rule of thumb, and the seed study's 1 ms tests: below these a phase cannot be timed
SHORT_SECONDS = 0.010
SHORT_OPS = 100

O_APPEND, O_SYNC, O_DSYNC, O_DIRECT, O_TRUNC = 0o2000, 0o4010000, 0o10000, 0o40000, 0o1000
OPERATIONS = ["", "read", "write", "mixed"]
# stride detection looks at this many steps of a phase at most: a stride repeats
PATTERN_SAMPLE = 2000


def _per_category(syscall: pd.Series, value_of, missing, dtype) -> np.ndarray:
    """value_of(name) per event, looked up once per category, never per row."""
    cat = syscall if isinstance(syscall.dtype, pd.CategoricalDtype) else syscall.astype("category")
    table = np.array([value_of(str(c)) for c in cat.cat.categories] + [missing], dtype=dtype)
    return table[cat.cat.codes.to_numpy()]


def call_kinds(syscall: pd.Series) -> np.ndarray:
    """OTHER/READ/WRITE/OPEN/CREAT/CLOSE/SYNC/FTRUNCATE per event."""
    return _per_category(syscall, lambda name: _KIND_OF.get(name, OTHER), OTHER, np.int8)


def named(syscall: pd.Series, names) -> np.ndarray:
    """Per event: whether its syscall is one of `names`."""
    return _per_category(syscall, lambda name: name in names, False, bool)


def lookup(per_phase: pd.Series, phase: np.ndarray) -> np.ndarray:
    """A per-phase figure (indexed by phase number) for each row's phase, NaN where a phase has
    none: an array indexed by phase, not a pandas reindex of millions of rows."""
    size = max(int(phase.max(initial=0)), int(per_phase.index.max()) if len(per_phase) else 0) + 1
    table = np.full(size, np.nan)
    table[per_phase.index.to_numpy(np.int64)] = per_phase.to_numpy(np.float64)
    return table[np.maximum(phase, 0)] if len(phase) else np.empty(0)


def _is_data(kind: np.ndarray) -> np.ndarray:
    return (kind == READ) | (kind == WRITE)


def _new_group(*keys: np.ndarray) -> np.ndarray:
    """True where any key differs from the row before (rows already ordered by the keys)."""
    change = np.zeros(len(keys[0]), dtype=bool)
    if len(change):
        change[0] = True
        for k in keys:
            change[1:] |= k[1:] != k[:-1]
    return change


def stable_order(keys: np.ndarray) -> np.ndarray:
    """Stable argsort; numpy sorts 16-bit keys by radix in linear time, so small key ranges go there."""
    if len(keys) and keys.min() >= 0 and keys.max() < 2 ** 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    return np.argsort(keys, kind="stable")


def stable_order_of_few(keys: np.ndarray) -> np.ndarray:
    """stable_order of integer keys with few distinct values however large (a block's fds,
    streams, threads of a phase): by each key's rank among them, a radix sort below 2^16 of
    them, where sorting the keys themselves compares them (np.lexsort of two columns more)."""
    return stable_order(distinct.unique(keys, return_inverse=True)[1])


def _codes(values: np.ndarray) -> np.ndarray:
    return pd.factorize(values)[0].astype(np.int64)


def _streams(span: np.ndarray, by_span: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stream key per row (one per span and thread) and the rows in stream order (time order
    within a stream). `by_span` is the rows in span order already, which is the answer when
    every span has one thread: the common case, saving a factorize and a sort."""
    spans = int(span.max()) + 1 if len(span) else 0
    lowest, highest = np.full(spans, np.iinfo(np.int64).max), np.full(spans, -1, dtype=np.int64)
    np.minimum.at(lowest, span, tid)
    np.maximum.at(highest, span, tid)
    if np.array_equal(lowest, highest):
        return span, by_span
    stream = _codes((span << 32) | tid)
    return stream, stable_order(stream)


F_DUPFD, F_DUPFD_CLOEXEC = 0, 1030   # the fcntl commands that make a new fd, as dup does


def _spans(events: pd.DataFrame, kind: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per event, its open file description: (span numbers from 0, rows in span order).

    A process's fd names one description from the call that made it (an open, a dup, an fcntl
    F_DUPFD) to its close; a dup'd fd names the description of the fd it copies, so both are
    one span. Two opens of one file in one process are two spans, each open or close a
    boundary. Calls on an fd no traced call made (opened before tracing, or inherited from a
    parent) form a span of their own from their first call.
    """
    n = len(events)
    tgid = events["tgid"].to_numpy(np.int64)
    fd = _description_fds(events, kind, ok)
    ret = events["ret"].to_numpy(np.int64)
    dups = named(events["syscall"], ops_of_kind("dup"))
    fcntl = named(events["syscall"], ops_of_kind("fcntl"))
    copies = np.flatnonzero(ok & (dups | (fcntl & np.isin(events["flags"].to_numpy(np.int64),
                                                          [F_DUPFD, F_DUPFD_CLOEXEC]))))
    # a copy names a second fd: a row of its own on that fd's key, just after the copy
    key = np.r_[(tgid << 32) | (fd & 0xFFFFFFFF), (tgid[copies] << 32) | (ret[copies] & 0xFFFFFFFF)]
    del tgid, fd, ret, dups, fcntl
    if not len(copies):
        order = stable_order(key)   # rows are in time order already: a stable sort keeps it per key
    else:
        when = np.r_[np.arange(n, dtype=np.int64) * 2, copies * 2 + 1]
        order = np.lexsort((when, key))
        del when
    first_of_key = _new_group(key[order])
    del key
    is_copy = order >= n
    made = np.zeros(len(order), dtype=bool)
    made[~is_copy] = (((kind == OPEN) | (kind == CREAT)) & ok)[order[~is_copy]]
    segment = np.cumsum(first_of_key | made | is_copy) - 1
    del first_of_key, made
    # each segment is a description, but a copy's is the one it copies: resolved in time order,
    # so a copy of a copy finds its source resolved already
    description = np.arange(int(segment[-1]) + 1 if len(segment) else 0)
    segment_of = np.empty(len(order), dtype=np.int64)
    segment_of[order] = segment
    for c, at in zip(copies, np.flatnonzero(is_copy)[np.argsort(order[is_copy])]):
        description[segment[at]] = description[segment_of[c]]
    span_of_row = description[segment_of[:n]]
    del segment_of, segment, order
    span = _codes(span_of_row)   # numbered in order of first call
    del span_of_row
    by_span = stable_order(span)
    return span, by_span


def _description_fds(events: pd.DataFrame, kind: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Per event, the fd that names its open file description. An io_uring request on a
    registered file names it by its index in the ring's table, not by an fd (fio
    --registerfiles): it takes the fd of the last open of the same file by its process
    before it, or, with none, a negative number of its own that no real fd has."""
    fd = events["fd"].to_numpy(np.int64)
    if not len(events):
        return fd
    fixed = np.flatnonzero(named(events["syscall"], URING_OPS) &
                           ((events["flags"].to_numpy(np.int64) & URING_FIXED_FILE) != 0))
    mapped = np.flatnonzero(named(events["syscall"], ON_MAPPINGS) & (fd < 0))
    if not len(fixed) and not len(mapped):
        return fd
    fd = fd.copy()
    for rows, makers, base in ((fixed, np.flatnonzero(((kind == OPEN) | (kind == CREAT)) & ok), FIXED_FD_BASE),
                               (mapped, np.flatnonzero(named(events["syscall"], ("mmap",)) & ok), MAPPED_FD_BASE)):
        if len(rows):
            fd[rows] = _fd_of_last(events, rows, makers, fd, base)
    return fd


def _fd_of_last(events: pd.DataFrame, rows: np.ndarray, makers: np.ndarray, fd: np.ndarray, base: int) -> np.ndarray:
    """For each of `rows`, the fd of the last of `makers` (opens, mmaps) on the same file by the
    same process before it; base minus its own fd (a negative number no real fd has) without one."""
    keys = ["tgid", "dev", "ino"]
    found = pd.merge_asof(
        events.iloc[rows][keys + ["start_ns"]].assign(row=rows).astype({"start_ns": np.int64}),
        events.iloc[makers][keys + ["start_ns"]].assign(maker_fd=fd[makers]).astype({"start_ns": np.int64}),
        on="start_ns", by=keys, direction="backward")
    made = found["maker_fd"].to_numpy(np.float64)
    order = np.argsort(found["row"].to_numpy(np.int64))
    made = made[order]
    return np.where(np.isnan(made), base - fd[rows], np.nan_to_num(made)).astype(np.int64)


def uncounted(assigned: pd.DataFrame) -> np.ndarray:
    """Calls in a phase but out of its bytes, counts and timing: warm-ups and buffer fills."""
    out = assigned["warmup"].to_numpy()
    return out | assigned["fill"].to_numpy() if "fill" in assigned else out
