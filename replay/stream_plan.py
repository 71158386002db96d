"""A trace into the native player's plan file, streamed: memory bounded by a window of calls and
the per-thread, per-file and per-block state, not by the trace's length.

The plan written is byte for byte the one `plan.build(path).save_native(out)` writes (tested),
without holding the trace's columns or the plan's calls in memory:

1. Spill (one pass over the trace's blocks, collector/format/tracestream.py): each block's calls
   to replay, sorted by (start, row in file order), are appended to a spill file as one run;
   per thread its first call, count and largest buffer, per file (dev, ino and the path the
   call used) whether a kept call used it, and what is not replayed are counted.
2. The runs merged in time order, window by window (`_windows`): every window holds the calls
   that start at or before a cut, none later, so a call in a later window started after every
   call of this one and cannot have ended before any of them started.
3. Sweep A: the file table (made before the replay, how large) and each file's first reads
   (replay/cache.py's cold files), per file, carried from window to window.
4. Sweep B: each call's think time, depth and class, and the waits on shared files (ARTC's rule
   narrowed to conflicts, replay/order.py), with per thread its previous call's end and its
   requests in flight, and per file and awaited thread the last-ended barrier, call, sync and
   write, the per-4-KiB-block last-ended read and write, and the calls not ended yet. Calls are
   written in place (each thread's rows at its place in the plan), waits spilled per thread.

Memory: one trace block (BLOCK_ROWS) and one window (WINDOW_ROWS per run overlapping the cut),
plus state that grows with threads, files, files' 4 KiB blocks touched by shared-file calls,
and requests in flight, not with the count of calls; the trace's off-CPU and block records
(one per context switch and per block request) are read whole, as plan.build reads them.

Example: `info = stream_plan.build_native("run.iwt", "/tmp/plan.bin")`; `info.count` calls.
"""

from __future__ import annotations

import fcntl
import json
import os
import posixpath
import struct
import tempfile
import typing

import numpy as np

from iowitness.collector.format import tracestream
from iowitness.errors import NotFound, UsageError
from iowitness.replay import cache, order, paths, plan as inmemory
from iowitness.replay.plan_layout import ASYNC, CALL, OP, READS, THREAD, WAIT, WAITED_BEFORE, WRITES

BLOCK_ROWS = 1 << 18    # trace events decoded at once
WINDOW_ROWS = 1 << 18   # calls taken from each run per window
RANK_TABLE_MIN = 1 << 16   # _rank_of: a lookup table spans at least this many blocks,
RANK_TABLE_SPREAD = 4      # or this many times the blocks it is built from and asked for

# a call's row in the trace is not kept: records are spilled in (start, row) order, run after run in
# file order, so the spill's own order is the row's among equal starts (_windows)
SPILL = np.dtype([("start", "i8"), ("end", "i8"), ("thread", "i4"), ("file", "i4"), ("op", "i2"),
                  ("ring", "u2"), ("fd", "i4"), ("flags", "u4"), ("ret", "i8"), ("offset", "i8"), ("size", "i8")])
ASYNC_OPS = np.array([OP[o] for o in ASYNC])
READ_OPS = np.array([OP[o] for o in READS])
WRITE_OPS = np.array([OP[o] for o in WRITES])
IO_OPS = np.concatenate([READ_OPS, WRITE_OPS])
SYNC_READ_OPS = np.array([OP[o] for o in cache.SYNC_READS])
GROWING_OPS = np.array([OP[o] for o in order.POSITIONED_WRITES + ("write", "writev")])


def _is(ops) -> np.ndarray:
    """A lookup table of the plan's op codes: `_is(READ_OPS)[op]` is np.isin(op, READ_OPS) in one
    gather (np.isin compares every row with each code in turn); op codes are 0 to len(OP) - 1."""
    table = np.zeros(256, dtype=bool)
    table[np.asarray(ops)] = True
    return table


IS_ASYNC, IS_READ, IS_WRITE, IS_IO, IS_SYNC_READ, IS_GROWING = (
    _is(ops) for ops in (ASYNC_OPS, READ_OPS, WRITE_OPS, IO_OPS, SYNC_READ_OPS, GROWING_OPS))
# (-1, a call not replayed, is the last slot: in none)
IS_URING = _is([OP["uring_read"], OP["uring_write"], OP["uring_fsync"]])
IS_URING_IO = _is([OP["uring_read"], OP["uring_write"]])
IS_OPENING = _is([OP["open"], OP["dup"]])
IS_POSITIONED_READ, IS_POSITIONED_WRITE, IS_SYNC = (
    _is([OP[o] for o in kind]) for kind in (order.POSITIONED_READS, order.POSITIONED_WRITES, order.SYNCS))


def _one_value(values) -> bool:
    return bool(len(values)) and values[0] == values[-1] and bool((values == values[0]).all())


def _unique_index(values) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_index=True), without its sort when every value is the same (a block
    of one thread's calls on one file): the same arrays."""
    if _one_value(values):
        return values[:1].copy(), np.zeros(1, dtype=np.intp)
    return np.unique(values, return_index=True)


def _unique_inverse(values) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True), as _unique_index."""
    if _one_value(values):
        return values[:1].copy(), np.zeros(len(values), dtype=np.intp)
    return np.unique(values, return_inverse=True)


def _codes(values) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) of small non-negative integers (a block's op codes, u16):
    by a count and a lookup table, not a sort."""
    counts = np.bincount(values)
    codes = np.flatnonzero(counts)
    table = np.zeros(len(counts), dtype=np.intp)
    table[codes] = np.arange(len(codes))
    return codes.astype(values.dtype), table[values]


class NativePlan:
    """What `iowitness replay` needs of a plan written by build_native (the calls are in the file)."""

    followed = False   # written while the player follows it (build_native's announce)

    def __init__(self, path: str, threads, files: list[dict], source: dict, skipped: dict, count: int,
                 has_async: bool, waits: int):
        self.path, self.threads, self.files, self.source, self.skipped = path, threads, files, source, skipped
        self.count, self.has_async, self.wait_count = count, has_async, waits

    @property
    def root_tgid(self) -> int:
        """The recorded process the benchmark was launched as (plan.Plan.root_tgid)."""
        pid = self.source.get("pid")
        return int(pid) if isinstance(pid, int) and 0 < pid < 2**32 else 0


def build_native(path: str, out: str, block_rows: int = BLOCK_ROWS, window_rows: int = WINDOW_ROWS,
                 announce: typing.Callable[[NativePlan], None] | None = None) -> NativePlan:
    """Write the native plan of the trace at `path` to `out`; the one-line errors plan.build gives.

    `announce`: the plan is followed (the native player's --follow): once the file table is
    known (before the calls' think times and waits), `out` is made as long as its calls and
    OUT.head, OUT.ready and OUT.waitsT are written (follow_paths), then announce(plan) is
    called (its wait_count 0, its `followed` true) and the build goes on; OUT.ready says how many
    calls of each thread are written, with their waits, and whether the build is done or failed.
    A trace with libaio or io_uring requests is not followed (announce is not called)."""
    if not os.path.exists(path):
        raise NotFound(f"trace {path} does not exist")
    with tempfile.TemporaryDirectory(prefix="iowitness-plan-", dir=os.path.dirname(os.path.abspath(out))) as work:
        with tracestream.open_trace(path, block_rows) as stream:
            data = stream.data
            if data.summary is not None:
                raise UsageError(f"{path} is a --summary trace: it holds the kernel's aggregates, no record per call, "
                                 "so there is nothing to replay; record without --summary")
            if not stream.event_count:
                raise UsageError(f"{path} holds no call on a target file: nothing to replay")
            spill = _Spill(data, os.path.join(work, "spill"))
            for block in stream.blocks(block_rows=block_rows):
                spill.add(block)
            spill.close()
            meta, offcpu, block_records, n = data.meta, data.offcpu, data.block, stream.event_count
            missing = data.missing
        builder = _Builder(path, out, work, spill, meta, offcpu, block_records, n, window_rows)
        builder.missing = missing
        builder.announce = announce
        try:
            return builder.run()
        except BaseException:
            builder.follow_state(FOLLOW_FAILED)
            raise


FOLLOW_BUILDING, FOLLOW_DONE, FOLLOW_FAILED = 0, 1, 2


def follow_paths(out: str, threads: int) -> dict:
    """The files a followed build writes beside the plan `out` (replay/player.c --follow reads them):
    head, the plan without calls or waits (its header's counts 0) but with its threads, directories,
    files and notes; ready, int64 x (2 threads + 2): each thread's calls written, the build's state
    (FOLLOW_*), the largest buffer a call needs, each thread's waits written (before its calls);
    waits, each thread's waits (plan_layout.WAIT) as they are found."""
    return {"head": out + ".head", "ready": out + ".ready", "waits": [f"{out}.waits{t}" for t in range(threads)]}


class _Spill:
    """Pass 1: the calls to replay, block by block, spilled as runs sorted by (start, row)."""

    def __init__(self, data, path: str):
        self.path = path
        self.file = open(path, "wb")
        self.runs: list[tuple[int, int]] = []   # (first record, records)
        self.records = 0
        self.ops = data.ops
        self.codes: dict[int, str] = {}
        self.threads: dict[int, int] = {}    # thread key -> provisional id
        self.thread_first: list[list] = []   # per provisional thread: [start, row, count, largest io]
        self.files: dict[tuple, int] = {}    # (dev-ino key, fact position) -> provisional file
        self.keys: set[int] = set()          # every event's (dev, ino) key: the path order of plan._files_of
        self.devs: dict[int, int] = {}       # each key's device, as its first event gave it
        self.skipped: dict[str, int] = {}
        self.too_high = False
        self.too_big = -1
        self.t0: int | None = None
        self.has_async = False
        file_kind = [k for k, name in data.meta_kinds.items() if name == "file"]
        facts = data.facts
        facts = facts[np.isin(facts["kind"], file_kind)] if len(facts) else facts
        facts = facts[np.argsort(facts["ts_ns"], kind="stable")] if len(facts) else facts
        self.facts = facts
        fact_key = ((facts["dev"].astype(np.uint64) << np.uint64(44)) ^ facts["ino"].astype(np.uint64)) \
            if len(facts) else np.zeros(0, np.uint64)
        self.fact_times = {int(k): facts["ts_ns"][fact_key == k].astype(np.int64) for k in np.unique(fact_key)}
        self.fact_rows = {int(k): facts[fact_key == k] for k in np.unique(fact_key)}

    def _code_names(self, codes) -> list[str]:
        out = []
        for o in codes:
            o = int(o)
            if o not in self.codes:
                self.codes[o] = inmemory._op_name(self.ops.get(o), o)
            out.append(self.codes[o])
        return out

    def add(self, cols) -> None:
        ret = inmemory._int64(cols["ret"])
        start = inmemory._int64(cols["start_ns"])
        end = start + inmemory._int64(cols["latency_ns"])
        flags = cols["flags"]
        op = cols["op"]
        codes, op_index = _codes(op) if op.dtype.kind == "u" and op.dtype.itemsize <= 2 else \
            np.unique(op, return_inverse=True)
        names = self._code_names(codes)
        as_op = np.array([OP.get(inmemory.RECORDED.get(name, ""), -1) for name in names], dtype=np.int16)
        target = as_op[op_index]
        fcntl = np.array([name == "fcntl" for name in names], dtype=bool)[op_index]
        target[fcntl & np.isin(flags, [inmemory.F_DUPFD, inmemory.F_DUPFD_CLOEXEC])] = OP["dup"]
        is_uring = IS_URING[target]
        fixed = is_uring & ((flags & inmemory.URING_FIXED_FILE) != 0)
        target[fixed] = -1
        keep = (target >= 0) & (ret >= 0)
        for mask, why in ((fixed, "registered file, not replayed yet"), ((target < 0) & ~fixed, "not replayed yet"),
                          ((target >= 0) & (ret < 0), "failed")):
            counts = np.bincount(op_index[mask], minlength=len(codes))
            for k in np.flatnonzero(counts):
                what = f"{names[k]} ({why})"
                self.skipped[what] = self.skipped.get(what, 0) + int(counts[k])
        fd = cols["fd"]
        too_high = keep & ((fd >= inmemory.MAX_FD) | (fd < -1) | ((target != OP["open"]) & (fd < 0))
                           | (IS_OPENING[target] & (ret >= inmemory.MAX_FD)))
        self.too_high |= bool(too_high.any())
        key = (cols["dev"].astype(np.uint64) << np.uint64(44)) ^ cols["ino"].astype(np.uint64)
        uniq_keys, first_at = _unique_index(key)
        for k, at in zip(uniq_keys.tolist(), first_at.tolist()):
            if k not in self.devs:
                self.devs[k] = int(cols["dev"][at])   # the device whole (the key keeps its low 20 bits)
        self.keys.update(uniq_keys.tolist())
        rows = np.flatnonzero(keep)
        if not len(rows):
            return
        # every call kept (a loop of reads and writes): the columns themselves, not a copy of each
        rows_of = (lambda column: column) if len(rows) == len(keep) else (lambda column: column[rows])
        rec = np.empty(len(rows), SPILL)   # every field is set below
        rec["start"], rec["end"] = rows_of(start), rows_of(end)
        op_kept = rows_of(target)
        rec["op"] = op_kept
        rec["fd"], rec["ret"], rec["flags"] = rows_of(fd), rows_of(ret), rows_of(flags)
        rec["offset"] = rows_of(cols["offset"])
        requested = rows_of(cols["requested"]).astype(np.uint64).view(np.int64)
        rec["size"] = np.where(IS_WRITE[op_kept], rows_of(ret), requested)
        rec["ring"] = rows_of(cols["ring"]) if "ring" in cols else 0
        is_io = IS_IO[op_kept]
        size = rec["size"]
        big = is_io & ((size > inmemory.MAX_CALL_BYTES) | (size < 0))
        if big.any():
            self.too_big = max(self.too_big, int(size[big].max()))
        self.has_async |= bool(IS_ASYNC[op_kept].any())
        # the file each call used: its (dev, ino), and which of that inode's paths (plan._files_of)
        kk = rows_of(key)
        uniq, which = _unique_inverse(kk)
        which = which.reshape(-1)
        for j, k in enumerate(uniq.tolist()):
            times = self.fact_times.get(int(k))
            signed = int(np.uint64(k).view(np.int64)) if k >= 1 << 63 else int(k)
            if times is None or len(times) == 1:
                pos = 0 if times is not None else -1
                ident = self.files.setdefault((signed, pos), len(self.files))
                if len(uniq) == 1:
                    rec["file"] = ident
                else:
                    rec["file"][which == j] = ident
                continue
            mine = np.flatnonzero(which == j)
            at = np.maximum(np.searchsorted(times, rec["end"][mine], side="right") - 1, 0)
            positions, back = np.unique(at, return_inverse=True)
            ids = np.array([self.files.setdefault((signed, int(q)), len(self.files)) for q in positions.tolist()],
                           dtype=np.int32)
            rec["file"][mine] = ids[back.reshape(-1)]
        tkey = (rows_of(cols["tgid"]).astype(np.int64) << 32) | rows_of(cols["tid"]).astype(np.int64)
        tkeys, tw = _unique_inverse(tkey)
        tids = np.array([self.threads.setdefault(int(k), len(self.threads)) for k in tkeys], dtype=np.int32)
        rec["thread"] = tids[tw.reshape(-1)]
        while len(self.thread_first) < len(self.threads):
            self.thread_first.append([None, None, 0, 0])
        counts = np.bincount(tw.reshape(-1), minlength=len(tkeys))
        largest = np.zeros(len(tkeys), dtype=np.int64)
        if len(tkeys) == 1:
            largest[0] = size[is_io].max(initial=0)
        else:
            np.maximum.at(largest, tw.reshape(-1)[is_io], size[is_io])
        # rows are in file order: (start, row) order is start's stable order, none when starts do not fall
        kept_start = rows_of(start)
        in_order = bool((kept_start[1:] >= kept_start[:-1]).all())
        order_in_block = np.arange(len(rec)) if in_order else np.argsort(kept_start, kind="stable")
        first_of = np.full(len(tkeys), -1)
        # each thread's first call in (start, row) order within the block
        uniq, at = _unique_index(tw.reshape(-1)[order_in_block])
        first_of[uniq] = order_in_block[at]
        for j, t in enumerate(tids.tolist()):
            entry = self.thread_first[t]
            r = first_of[j]
            s, w = int(rec["start"][r]), cols.first_row + int(rows[r])
            if entry[0] is None or (s, w) < (entry[0], entry[1]):
                entry[0], entry[1] = s, w
            entry[2] += int(counts[j])
            entry[3] = max(entry[3], int(largest[j]))
        block_t0 = int(rec["start"].min())
        self.t0 = block_t0 if self.t0 is None else min(self.t0, block_t0)
        if not in_order:   # a ring's block is in order but for a few
            rec = rec[order_in_block]
        self.file.write(rec.data.cast("B"))
        self.runs.append((self.records, len(rec)))
        self.records += len(rec)

    def close(self) -> None:
        self.file.close()


def _windows(path: str, runs: list[tuple[int, int]], window_rows: int):
    """The spilled runs merged into (start, row) order, window by window: each window holds every
    call that starts at or before its cut and no other."""
    size = SPILL.itemsize
    with open(path, "rb") as f:
        def load(first: int, count: int) -> np.ndarray:
            f.seek(first * size)
            return np.frombuffer(f.read(count * size), SPILL)
        # per run: its next record, and a buffer of the records loaded from there (None: not loaded)
        cursor = [first for first, _ in runs]
        stop = [first + count for first, count in runs]
        buffer: list = [None] * len(runs)
        # each run's first start, read once (a run is loaded only when the cut reaches it)
        heads = [int(load(first, 1)["start"][0]) if count else 0 for first, count in runs]
        live = [k for k in range(len(runs)) if cursor[k] < stop[k]]
        while live:
            lowest = min(heads[k] if buffer[k] is None else int(buffer[k]["start"][0]) for k in live)
            for k in live:
                if buffer[k] is None and heads[k] == lowest:
                    buffer[k] = load(cursor[k], min(window_rows, stop[k] - cursor[k]))
            # the cut: the lowest last start among loaded buffers that do not end their run
            # (runs loaded to their end: the highest of their last starts)
            open_ends = [int(buffer[k]["start"][-1]) for k in live
                         if buffer[k] is not None and cursor[k] + len(buffer[k]) < stop[k]]
            cut = min(open_ends) if open_ends else max(int(buffer[k]["start"][-1]) for k in live
                                                       if buffer[k] is not None)
            for k in live:
                b = buffer[k]
                if b is None and heads[k] <= cut:
                    buffer[k] = load(cursor[k], min(window_rows, stop[k] - cursor[k]))
            parts = []
            for k in live:
                while buffer[k] is not None:
                    b = buffer[k]
                    n = int(np.searchsorted(b["start"], cut, side="right"))
                    if n:
                        parts.append(b[:n])
                    cursor[k] += n
                    if n < len(b):
                        buffer[k] = b[n:]
                        break
                    buffer[k] = None
                    if cursor[k] < stop[k]:
                        heads[k] = int(load(cursor[k], 1)["start"][0])
                        if heads[k] <= cut:
                            buffer[k] = load(cursor[k], min(window_rows, stop[k] - cursor[k]))
            live = [k for k in live if cursor[k] < stop[k]]
            if len(parts) == 1:
                yield parts[0]   # one run's: in order already
            else:
                # parts in run order, each in its run's order: among equal starts, the trace's row order
                window = np.concatenate(parts)
                yield window[np.argsort(window["start"], kind="stable")]


def _plan_order(start, thread, seq, file=None) -> np.ndarray:
    """The order of (file,) start, thread, seq: plan.build's order of a file's calls (by start,
    ties in plan order). Rows come in (start, row) order: when no two starts are equal, only
    the files need sorting."""
    if len(start) < 2 or bool((start[1:] > start[:-1]).all()):
        if file is None or _one_value(file):
            return np.arange(len(start))
        return np.argsort(file, kind="stable")
    keys = (seq, thread, start) if file is None else (seq, thread, start, file)
    return np.lexsort(keys)


class _EndCounter:
    """Calls whose ends are known, asked "how many had ended by t" for t in time order: those
    ended by the last time asked are a count, the others kept."""

    def __init__(self):
        self.done, self.last, self.pending = 0, 0, np.zeros(0, np.int64)

    def ask(self, ends, at, upto: int) -> tuple[np.ndarray, np.ndarray]:
        """Add `ends`, then for each of `at`: (how many ended by it, the latest end by it or 0);
        `upto`: no later question comes before it."""
        every = np.sort(np.concatenate([self.pending, ends]))
        k = np.searchsorted(every, at, side="right")
        # a call added here started after the last time asked, so ended after what was counted
        latest = np.where(k > 0, every[np.maximum(k - 1, 0)], self.last) if len(every) else \
            np.full(len(at), self.last, dtype=np.int64)
        count = self.done + k
        ended = int(np.searchsorted(every, upto, side="right"))
        if ended:
            self.last = int(every[ended - 1])
        self.done += ended
        self.pending = every[ended:]
        return count, latest


class _FileState:
    """Sweep B, per shared file and awaited thread: what of its calls on the file had ended."""

    __slots__ = ("barrier", "every", "sync", "write", "grow", "read", "reads", "writes", "pending")

    def __init__(self):
        self.barrier = self.every = self.sync = self.write = self.grow = self.read = 0
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.reads, self.writes = empty, empty
        self.pending = None   # structured rows (seq, end, cls, offset, size) not ended by the last cut


PENDING = np.dtype([("seq", "i8"), ("end", "i8"), ("cls", "i1"), ("offset", "i8"), ("size", "i8")])


class _Builder:
    announce: typing.Callable[[NativePlan], None] | None = None
    ready_fd: int | None = None
    following = False
    missing = ""   # what the trace's recording lost, in words (traceformat.missing_text)

    def __init__(self, path, out, work, spill: _Spill, meta, offcpu, block_records, events: int, window_rows: int):
        self.path, self.out, self.work, self.spill = path, out, work, spill
        self.meta, self.offcpu, self.block_records, self.events = meta, offcpu, block_records, events
        self.window_rows = window_rows

    def run(self) -> NativePlan:
        sp = self.spill
        if not sp.records:
            raise UsageError(f"{self.path} holds no call a replay can issue ("
                             + ", ".join(f"{k}: {v:,}" for k, v in sorted(sp.skipped.items())) + ")")
        if sp.too_high:
            raise UsageError(f"{self.path} has calls on fds below 0 or of {inmemory.MAX_FD:,} and above, which a "
                             f"replay cannot issue (a replay's fd table holds fds 0 to {inmemory.MAX_FD - 1:,})")
        self._files()
        if len(sp.threads) > inmemory.MAX_THREADS:
            raise UsageError(f"the trace has {len(sp.threads):,} threads; a replay runs at most "
                             f"{inmemory.MAX_THREADS:,}")
        if sp.too_big >= 0:
            raise UsageError(f"a call of the trace moves {sp.too_big:,} bytes, more than a replay issues in one "
                             f"call ({inmemory.MAX_CALL_BYTES >> 20} MiB)")
        # threads numbered in order of their first call; each one's rows at its place in the plan
        provisional = sorted(range(len(sp.thread_first)), key=lambda t: (sp.thread_first[t][0], sp.thread_first[t][1]))
        self.rank = np.empty(len(provisional), dtype=np.int32)
        self.rank[provisional] = np.arange(len(provisional))
        keys = sorted(sp.threads, key=lambda k: sp.threads[k])   # provisional id -> key
        counts = np.array([sp.thread_first[t][2] for t in provisional], dtype=np.int64)
        self.first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self.threads = np.zeros(len(provisional), THREAD)
        for r, t in enumerate(provisional):
            self.threads[r] = (keys[t] >> 32, keys[t] & 0xFFFFFFFF, self.first[r], counts[r])
        self.count = int(counts.sum())
        self.t0 = sp.t0
        firsts = np.array([sp.thread_first[t][0] for t in provisional], dtype=np.int64)
        self.start_held = inmemory.start_held(self.offcpu, self.threads["tgid"], self.threads["tid"], firsts,
                                             int(self.t0 or 0))   # (the trace has calls: t0 is known)
        self._sweep_a()
        # a thread's rings are sized (replay/player.c ring_of) by the depths of all its requests,
        # which the rest of the build finds: a plan with requests is not followed
        if self.announce is not None and not sp.has_async:
            self.following = True
            self._start_following()
        self._sweep_b()
        info = self._finish()
        self.follow_state(FOLLOW_DONE)
        return info

    def _start_following(self) -> None:
        """The followed build's head, ready and wait files, and the plan file as long as its calls."""
        self._check_buffers()
        where = follow_paths(self.out, len(self.threads))
        tail, n_dirs, n_notes = self._tail()
        with open(where["head"], "wb") as f:
            f.write(b"IOWPLAN2" + struct.pack("<IIQQIII", len(self.threads), len(self.files), 0, 0, n_dirs, n_notes,
                                              self._info(0).root_tgid))
            f.write(np.ascontiguousarray(self.threads).tobytes() + tail)
        for name in where["waits"]:
            open(name, "wb").close()
        with open(self.out, "wb") as f:
            f.truncate(44 + len(self.threads) * THREAD.itemsize + self.count * CALL.itemsize)
        ready = np.zeros(2 * len(self.threads) + 2, np.int64)
        ready[len(self.threads) + 1] = max([entry[3] for entry in self.spill.thread_first] + [4096])
        self.ready_fd = os.open(where["ready"], os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.ready_fd, fcntl.LOCK_EX)   # held while building: the player sees the build end, however
        os.pwrite(self.ready_fd, ready.tobytes(), 0)
        info = self._info(0)
        info.followed = True
        if self.announce is not None:
            self.announce(info)

    def follow_state(self, state: int) -> None:
        if self.ready_fd is not None:
            os.pwrite(self.ready_fd, struct.pack("<q", state), len(self.threads) * 8)
            os.close(self.ready_fd)
            self.ready_fd = None

    def _check_buffers(self) -> None:
        buffers = sum(entry[3] for entry in self.spill.thread_first)
        if buffers > inmemory.MAX_BUFFER_BYTES:
            raise UsageError(f"the trace's threads would need {buffers >> 20:,} MiB of buffers at once; a replay "
                             f"takes at most {inmemory.MAX_BUFFER_BYTES >> 20} MiB")

    def _files(self) -> None:
        """The file numbering of plan._files_of and plan.build: paths in the order of the trace's
        sorted (dev, ino) keys, files numbered by the order of the paths kept calls used."""
        sp = self.spill
        cwd = self.meta.get("cwd")
        path_index: dict[str, int] = {}
        abs_paths: list[str] = []

        def index(p: str) -> int:
            if p not in path_index:
                path_index[p] = len(abs_paths)
                abs_paths.append(p)
            return path_index[p]

        targets = inmemory.target_names(self.meta)
        codes: dict[int, list[int]] = {}
        for k in sorted(sp.keys):
            here = sp.fact_rows.get(int(k))
            if here is not None:
                codes[k] = [index(paths.absolute(inmemory._text(f["path"]), int(f["dirfd"]), cwd)) for f in here]
            elif int(k) in targets:
                codes[k] = [index(paths.absolute(targets[int(k)], paths.AT_FDCWD, cwd))]
            else:
                codes[k] = [index(inmemory.unnamed_path(sp.devs[int(k)], int(k) & ((1 << 44) - 1)))]
        provisional = sorted(sp.files, key=lambda pair: sp.files[pair])
        code_of = [codes[key % (1 << 64)][max(pos, 0)] for key, pos in provisional]
        used = sorted(set(code_of))
        rank = {c: k for k, c in enumerate(used)}
        self.file_of = np.array([rank[c] for c in code_of], dtype=np.int32)
        self.original_paths = [abs_paths[c] for c in used]
        self.rels = paths.relative_layout(self.original_paths)

    def _calls(self, w: np.ndarray, seqs: np.ndarray) -> dict:
        """A window's rows as plan columns (rank, file, seq)."""
        thread = self.rank[w["thread"]]
        file = self.file_of[w["file"]]
        if len(seqs) == 1:
            seq = seqs[0] + np.arange(len(w), dtype=np.int64)
            seqs[0] += len(w)
            return {"thread": thread, "file": file, "seq": seq}
        order_by_thread = np.argsort(thread, kind="stable")
        sorted_threads = thread[order_by_thread]
        bounds = np.flatnonzero(np.concatenate([[True], sorted_threads[1:] != sorted_threads[:-1]]))
        place = np.arange(len(w)) - np.repeat(bounds, np.diff(np.concatenate([bounds, [len(w)]])))
        seq = np.empty(len(w), dtype=np.int64)
        seq[order_by_thread] = seqs[sorted_threads] + place
        present = np.unique(thread)
        seqs[present] += np.bincount(thread, minlength=len(seqs))[present]
        return {"thread": thread, "file": file, "seq": seq}

    def _sweep_a(self) -> None:
        """The file table and each file's first sync reads (the cold-file test)."""
        n_files = len(self.rels)
        self.wmax = np.zeros(n_files, dtype=np.int64)
        self.unwritten = np.zeros(n_files, dtype=np.int64)
        self.first_op = np.full(n_files, -1, dtype=np.int64)
        self.first_flags = np.zeros(n_files, dtype=np.int64)
        self.first_reads: list[list] = [[] for _ in range(n_files)]
        self.read_counts = np.zeros(n_files, dtype=np.int64)
        seqs = np.zeros(len(self.threads), dtype=np.int64)
        keys = sorted(self.spill.threads, key=lambda k: self.spill.threads[k])
        tid_of = np.array([k & 0xFFFFFFFF for k in keys], dtype=np.int64)
        for w in _windows(self.spill.path, self.spill.runs, self.window_rows):
            c = self._calls(w, seqs)
            order_ = _plan_order(w["start"], c["thread"], c["seq"], c["file"])
            ordered = w if order_[-1] == len(w) - 1 and bool((order_[1:] > order_[:-1]).all()) else w[order_]
            file = c["file"] if ordered is w else c["file"][order_]
            op, offset, ret, size = ordered["op"], ordered["offset"], ordered["ret"], ordered["size"]
            flags = ordered["flags"]
            r, wr = IS_READ[op], IS_WRITE[op]
            read_end = np.where(r, offset + np.maximum(ret, 0), 0)
            write_end = np.where(wr, offset + size, 0)
            edges = np.flatnonzero(np.diff(file)) + 1
            starts = np.concatenate([[0], edges])
            stops = np.concatenate([edges, [len(file)]])
            for a, b in zip(starts.tolist(), stops.tolist()):
                f = int(file[a])
                if self.first_op[f] < 0:
                    self.first_op[f], self.first_flags[f] = int(op[a]), int(flags[a])
                we = write_end[a:b]
                before = np.maximum(self.wmax[f], np.concatenate([[0], np.maximum.accumulate(we)[:-1]]))
                self.wmax[f] = max(int(self.wmax[f]), int(we.max()))
                re = read_end[a:b]
                unwritten = re[(re > before) & r[a:b]]
                if len(unwritten):
                    self.unwritten[f] = max(int(self.unwritten[f]), int(unwritten.max()))
                if self.read_counts[f] < cache.FIRST_READS:
                    rows = order_[a:b]
                    mine = rows[IS_SYNC_READ[op[a:b]] & (ret[a:b] > 0)]
                    mine = mine[:cache.FIRST_READS - int(self.read_counts[f])]
                    if len(mine):
                        self.first_reads[f].append((w[mine], tid_of[w["thread"][mine]]))
                        self.read_counts[f] += len(mine)
        self.files = []
        for f, rel in enumerate(self.rels):
            flags = int(self.first_flags[f])
            size = int(self.unwritten[f])
            makes_it = int(self.first_op[f]) == OP["open"] and (
                bool(flags & inmemory.O_TRUNC) or (bool(flags & inmemory.O_CREAT) and size == 0))
            self.files.append({"rel": rel, "precreate": not makes_it, "size": 0 if makes_it else size})
        # the cold-file test on each file's first reads (cache.cold_files, as plan.build calls it)
        picked = [(f, rows, tids) for f in range(n_files) for rows, tids in self.first_reads[f]]
        calls = np.zeros(sum(len(rows) for _, rows, _ in picked), CALL)
        start = np.zeros(len(calls), np.int64)
        end = np.zeros(len(calls), np.int64)
        tid = np.zeros(len(calls), np.int64)
        at = 0
        for f, rows, tids in picked:
            n = len(rows)
            calls["op"][at:at + n], calls["file"][at:at + n], calls["ret"][at:at + n] = rows["op"], f, rows["ret"]
            start[at:at + n], end[at:at + n], tid[at:at + n] = rows["start"], rows["end"], tids
            at += n
        for entry, cold in zip(self.files, cache.cold_files(self.block_records, calls, tid, start, end, self.files)):
            entry["cold"] = cold
        self.sizes = np.array([f["size"] if f["precreate"] else 0 for f in self.files], dtype=np.int64)

    def _sweep_b(self) -> None:
        """Think times, depths, classes and waits; the calls written at their place."""
        n_threads, n_files = len(self.threads), len(self.rels)
        preempted = inmemory._preempted(self.offcpu)
        seqs = np.zeros(n_threads, dtype=np.int64)
        prev_end = np.full(n_threads, self.t0, dtype=np.int64)   # a thread's time runs from here
        started = np.zeros(n_threads, dtype=bool)
        async_ends = [_AsyncState() for _ in range(n_threads)]
        self.has_async_thread = np.zeros(n_threads, dtype=bool)
        grow = self.sizes.copy()   # each file's size so far: a write beyond it grows it (order.GROW)
        users: list[set] = [set() for _ in range(n_files)]
        state: dict[tuple[int, int], _FileState] = {}
        lifted: dict[tuple[int, int], int] = {}   # (waiting thread, awaited thread) -> highest count so far
        self.max_depth = 0
        self.wait_count = 0
        self.wait_files: dict[int, typing.BinaryIO] = {}
        self.waits_written = np.zeros(n_threads, np.int64)
        head = 44 + n_threads * THREAD.itemsize
        keep = self.ready_fd is not None   # followed: the file is made, as long as its calls
        out = os.open(self.out, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (0 if keep else os.O_TRUNC), 0o600)
        try:
            for w in _windows(self.spill.path, self.spill.runs, self.window_rows):
                c = self._calls(w, seqs)
                thread, file, seq = c["thread"], c["file"], c["seq"]
                calls = np.zeros(len(w), CALL)
                calls["op"], calls["file"], calls["ret"], calls["flags"] = w["op"], file, w["ret"], w["flags"]
                calls["tgid"] = self.threads["tgid"][thread]
                calls["fd"] = np.where(w["op"] == OP["open"], w["ret"], w["fd"])
                calls["offset"], calls["size"], calls["ring"] = w["offset"], w["size"], w["ring"]
                calls["start_ns"] = w["start"] - self.t0
                s, e = w["start"], w["end"]
                is_async = IS_ASYNC[w["op"]]
                gap = np.empty(len(w), dtype=np.int64)
                alone = _one_value(thread)   # one thread's window
                if alone:
                    by_thread, edges = np.arange(len(w)), np.zeros(0, dtype=np.intp)
                else:
                    by_thread = np.argsort(thread, kind="stable")
                    edges = np.flatnonzero(np.diff(thread[by_thread])) + 1
                for rows in np.split(by_thread, edges):
                    t = int(thread[rows[0]])
                    st, en, asy = (s, e, is_async) if alone else (s[rows], e[rows], is_async[rows])
                    e_thread = np.where(asy, st, en)
                    since = np.concatenate([[prev_end[t]], e_thread[:-1]])
                    a_state = async_ends[t]
                    if asy.any() or a_state.any:
                        self.has_async_thread[t] = True
                        latest = a_state.latest_before(en[asy], st, int(st.max()))
                        waited = (latest > since) & asy   # (plan.build marks them alike)
                        if not started[t]:
                            waited[0] = False
                        calls["flags"][rows[waited]] |= np.uint32(WAITED_BEFORE)
                        if started[t]:
                            since = np.maximum(since, latest)
                        else:
                            since[1:] = np.maximum(since[1:], latest[1:])
                        depth = a_state.depths(calls[rows], asy, st, en)
                        calls["depth"][rows] = depth
                        self.max_depth = max(self.max_depth, int(depth.max()))
                    g = st - since
                    lost = preempted.get(int(self.threads["tid"][t]))
                    if lost is not None:   # not before the thread's first call (plan.build says why)
                        off = lost(st) - lost(since)
                        if not started[t]:
                            off[0] = 0
                        g = g - off
                    if not started[t]:   # its process's wait for a CPU before it began (plan.start_held)
                        g[0] -= self.start_held[t]
                    if alone:
                        gap = g
                    else:
                        gap[rows] = g
                    prev_end[t] = e_thread[-1]
                    started[t] = True
                calls["gap_ns"] = np.maximum(gap, 0)
                if n_threads > 1:   # one thread waits for no other: no classes, no waits
                    cls = self._classes(calls, w, thread, seq, grow)
                    self._waits(calls, cls, thread, seq, s, e, users, state, lifted, int(s.max()))
                grouped = calls if not len(edges) else calls[by_thread]
                for a, b in zip(np.concatenate([[0], edges]).tolist(), np.concatenate([edges, [len(w)]]).tolist()):
                    first = by_thread[a]
                    place = head + (int(self.first[thread[first]]) + int(seq[first])) * CALL.itemsize
                    os.pwrite(out, grouped[a:b].data.cast("B"), place)
                if self.ready_fd is not None:   # this window's calls and waits written: the player may take them
                    for spilled in self.wait_files.values():
                        spilled.flush()
                    os.pwrite(self.ready_fd, self.waits_written.tobytes(), (n_threads + 2) * 8)
                    os.pwrite(self.ready_fd, seqs.astype(np.int64).tobytes(), 0)
        finally:
            os.close(out)
            for f in self.wait_files.values():
                f.close()
        if self.count and self.max_depth >= inmemory.MAX_DEPTH:
            raise UsageError(f"the trace had {self.max_depth:,} asynchronous requests in flight on one ring; "
                             f"a replay keeps at most {inmemory.MAX_DEPTH:,}")
        self._check_buffers()

    def _classes(self, calls, w, thread, seq, grow) -> np.ndarray:
        """order.classes for a window, the files' sizes so far carried in `grow`."""
        op = calls["op"]
        cls = np.full(len(calls), order.BARRIER, dtype=np.int8)
        cls[IS_POSITIONED_READ[op]] = order.READ
        cls[IS_POSITIONED_WRITE[op]] = order.WRITE
        cls[IS_SYNC[op]] = order.SYNC
        is_uring = IS_URING_IO[op]
        cls[is_uring & ((calls["flags"] & order.URING_FILE_POS) != 0)] = order.BARRIER
        ranged = (cls == order.READ) | (cls == order.WRITE)
        first = calls["offset"] // order.BLOCK
        last = (calls["offset"] + np.maximum(calls["size"], 1) - 1) // order.BLOCK
        cls[ranged & ((calls["offset"] < 0) | (last - first >= order.LONG_CALL_BLOCKS))] = order.BARRIER
        writes = np.flatnonzero(IS_GROWING[op])
        writes = writes[_plan_order(w["start"][writes], thread[writes], seq[writes])]
        ends = calls["offset"][writes] + calls["size"][writes]
        wf = calls["file"][writes]
        for f in np.unique(wf).tolist():
            mine = wf == f
            e = ends[mine]
            before = np.maximum.accumulate(np.concatenate([[grow[f]], e[:-1]]))
            grows = writes[mine][e > before]
            cls[grows[cls[grows] == order.WRITE]] = order.GROW
            grow[f] = max(int(grow[f]), int(e.max()))
        return cls

    def _waits(self, calls, cls, thread, seq, s, e, users, state, lifted, cut: int) -> None:
        """The waits of a window's calls on files other threads touched (order._needed, with the
        calls of earlier windows that had ended carried as maxima per file, thread and block)."""
        found = []
        file = calls["file"]
        # the columns read per file and awaited thread, each in one piece (not strided in the calls)
        cols = {"offset": np.ascontiguousarray(calls["offset"]), "size": np.ascontiguousarray(calls["size"])}
        by_file = np.argsort(file, kind="stable")
        edges = np.flatnonzero(np.diff(file[by_file])) + 1
        for on in np.split(by_file, edges):
            f = int(file[on[0]])
            here = set(np.unique(thread[on]).tolist())
            known = users[f] | here
            if len(known) < 2:
                users[f] = known
                continue
            users[f] = known
            on_thread = thread[on]
            for u in sorted(known):
                st = state.get((f, u))
                if st is None:
                    st = state[(f, u)] = _FileState()
                of_u = on_thread == u
                theirs, mine = on[of_u], on[~of_u]
                if len(mine):
                    need = _needed_window(cols, cls, seq, s, e, theirs, mine, st)
                    keep = need > 0
                    if keep.any():
                        found.append(np.stack([thread[mine][keep], seq[mine][keep], np.full(int(keep.sum()), u),
                                               need[keep]], axis=1))
                _carry(st, cols, cls, seq, e, theirs, cut)
        if not found:
            return
        rows = np.concatenate(found)
        t, sq, u, need = rows.T
        order_ = _sort_order((t, 12), (u, 12), (sq, 39))
        t, sq, u, need = t[order_], sq[order_], u[order_], need[order_]
        new_group = np.concatenate([[True], (t[1:] != t[:-1]) | (u[1:] != u[:-1])])
        group = np.cumsum(new_group) - 1
        starts = np.flatnonzero(new_group)
        carried = np.array([lifted.get((int(t[a]), int(u[a])), 0) for a in starts], dtype=np.int64)
        lift = int(max(int(need.max()), int(carried.max(initial=0)))) + 1
        value = group * lift + np.maximum(need, 0)
        base = group * lift + carried[group]
        running = np.maximum.accumulate(np.maximum(value, base))
        before = np.concatenate([[0], running[:-1]])
        before = np.where(new_group, base, np.maximum(before, base))
        keep = value > before
        ends_at = np.concatenate([starts[1:], [len(t)]]) - 1
        for k, a in enumerate(starts.tolist()):
            lifted[(int(t[a]), int(u[a]))] = int(running[ends_at[k]] - group[a] * lift)
        t, sq, u, need = t[keep], sq[keep], u[keep], need[keep]
        table = np.zeros(len(t), WAIT)
        table["call"] = self.first[t] + sq
        table["thread"], table["count"] = u, need
        by_call = _sort_order((table["call"], 51), (table["thread"], 12))
        table, t = table[by_call], t[by_call]
        for waiter in np.unique(t).tolist():
            spilled = self.wait_files.get(waiter)
            if spilled is None:
                spilled = self.wait_files[waiter] = open(self._wait_path(waiter), "wb")
            mine = table[t == waiter]
            spilled.write(mine.tobytes())
            self.waits_written[waiter] += len(mine)
        self.wait_count += len(table)

    def _wait_path(self, waiter: int) -> str:
        if self.following:   # beside the plan, where the player reads them
            return follow_paths(self.out, len(self.threads))["waits"][waiter]
        return os.path.join(self.work, f"waits{waiter}")

    def _info(self, waits: int) -> NativePlan:
        source = {"path": os.path.abspath(self.path), "command": self.meta.get("command"), "pid": self.meta.get("pid"),
                  "host": self.meta.get("host"), "events": self.events, "calls": self.count,
                  "original_paths": self.original_paths, "damaged": inmemory._damage(self.meta),
                  "missing": self.missing}
        return NativePlan(self.out, self.threads, self.files, source, self.spill.skipped, self.count,
                          self.spill.has_async, waits)

    def _tail(self) -> tuple[bytes, int, int]:
        """The plan's directories, files and notes (its last part), and how many directories and note bytes."""
        rels = self.rels
        dirs = paths.directories(rels)
        where = {d: k for k, d in enumerate(dirs)}
        notes = inmemory.plan_notes(self.spill.skipped, rels, self.original_paths)
        parts = []
        for d in dirs:
            raw = d.encode("utf-8", "surrogateescape")
            parts.append(struct.pack("<I", len(raw)) + raw)
        for rel in rels:
            d, name = posixpath.split(rel)
            raw = name.encode("utf-8", "surrogateescape")
            parts.append(struct.pack("<II", where[d], len(raw)) + raw)
        parts.append(notes)
        return b"".join(parts), len(dirs), len(notes)

    def _finish(self) -> NativePlan:
        info = self._info(self.wait_count)
        tail, n_dirs, n_notes = self._tail()
        with open(self.out, "r+b") as f:
            f.write(b"IOWPLAN2" + struct.pack("<IIQQIII", len(self.threads), len(self.files), self.count,
                                              self.wait_count, n_dirs, n_notes, info.root_tgid))
            f.write(np.ascontiguousarray(self.threads).tobytes())
            f.seek(44 + len(self.threads) * THREAD.itemsize + self.count * CALL.itemsize)
            for waiter in range(len(self.threads)):
                if waiter in self.wait_files:
                    with open(self._wait_path(waiter), "rb") as part:
                        while chunk := part.read(1 << 22):
                            f.write(chunk)
            f.write(tail)
            f.truncate()
        return info


class _AsyncState:
    """One thread's asynchronous requests across windows: the latest completion before each
    call, and the requests in flight per ring and in all."""

    def __init__(self):
        self.any = False
        self.latest = _EndCounter()
        self.rings: dict[int, tuple[_EndCounter, list]] = {}
        self.every = _EndCounter()
        self.submitted = 0

    def latest_before(self, ends, at, upto: int) -> np.ndarray:
        self.any = True
        _, latest = self.latest.ask(np.asarray(ends, np.int64), at, upto)
        return latest

    def depths(self, calls, is_async, start, end) -> np.ndarray:
        out = np.zeros(len(calls), dtype=np.int64)
        upto = int(start.max())
        every = np.flatnonzero(is_async)
        for ring in np.unique(calls["ring"][every]).tolist():
            mine = every[calls["ring"][every] == ring]
            counter, count = self.rings.setdefault(ring, (_EndCounter(), [0]))
            done, _ = counter.ask(end[mine], start[mine], upto)
            out[mine] = np.maximum(count[0] + np.arange(len(mine)) - done, 0)
            count[0] += len(mine)
        others = np.flatnonzero(~is_async)
        done, _ = self.every.ask(end[every], start[others], upto)
        if len(others):
            out[others] = np.maximum(self.submitted + np.searchsorted(every, others) - done, 0)
        self.submitted += len(every)
        return out


def _needed_window(calls, cls, seq, start, end, theirs, mine, st: _FileState) -> np.ndarray:
    """order._needed for one window: `theirs` the awaited thread's calls on the file in this
    window, with its calls of earlier windows not ended by then (st.pending) and the maxima of
    those that had (st)."""
    p = st.pending if st.pending is not None else np.zeros(0, PENDING)
    t_seq = np.concatenate([p["seq"], seq[theirs]])
    t_end = np.concatenate([p["end"], end[theirs]])
    t_cls = np.concatenate([p["cls"], cls[theirs]])
    t_off = np.concatenate([p["offset"], calls["offset"][theirs]])
    t_size = np.concatenate([p["size"], calls["size"][theirs]])
    c_m, s = cls[mine], start[mine]

    by_end = np.argsort(t_end, kind="stable")
    e_sorted, q_sorted, c_sorted = t_end[by_end], t_seq[by_end], t_cls[by_end]
    # the awaited calls ended by each start: one search in the end order, then per class the
    # running highest seq + 1 over that order (0 where a call is of another class)
    k = np.searchsorted(e_sorted, s, side="right") - 1
    ended = k >= 0
    k = np.maximum(k, 0)
    top = q_sorted + 1

    def last(kind, done: int) -> np.ndarray:
        """One past the highest seq of the awaited calls of class `kind` (None: any) ended by each start."""
        if not len(e_sorted):
            return np.full(len(s), done, dtype=np.int64)
        values = top if kind is None else np.where(c_sorted == kind, top, 0)
        highest = np.maximum.accumulate(values)
        return np.maximum(np.where(ended, highest[k], 0), done)
    need = last(order.BARRIER, st.barrier)
    every = last(None, st.every)
    need = np.where(c_m == order.BARRIER, every, need)
    syncs = last(order.SYNC, st.sync)
    writes = np.maximum(last(order.WRITE, st.write), last(order.GROW, st.grow))
    grows = last(order.GROW, st.grow)
    reads = last(order.READ, st.read)
    need = np.where(c_m == order.SYNC, np.maximum.reduce([need, syncs, writes]), need)
    need = np.where(np.isin(c_m, order.WRITING), np.maximum(need, syncs), need)
    need = np.where(c_m == order.READ, np.maximum(need, grows), need)
    need = np.where(c_m == order.GROW, np.maximum(need, reads), need)
    for kind, against in ((order.READ, (order.WRITE,)), (order.WRITE, (order.READ, *order.WRITING)),
                          (order.GROW, order.WRITING)):
        asks = np.flatnonzero(c_m == kind)
        if not len(asks):
            continue
        m_rows = mine[asks]
        other = np.flatnonzero(np.isin(t_cls, against))
        # the window's (and pending) overlapping calls that had ended, per 4 KiB block
        m_row, m_block = _explode(calls["offset"][m_rows], calls["size"][m_rows])
        best = np.zeros(len(m_row), dtype=np.int64)
        if len(other):
            t_row, t_block = _explode(t_off[other], t_size[other])
            best = _overlapping(t_block, t_end[other][t_row], t_seq[other][t_row] + 1, m_block,
                                start[m_rows][m_row])
        # and those of earlier windows that had ended
        for blocks, highest in ([st.reads, st.writes] if kind == order.WRITE else [st.writes]):
            if len(blocks):
                at, known = _rank_of(blocks, m_block)
                best = np.maximum(best, np.where(known, highest[at], 0))
        got = best if len(m_row) == len(m_rows) else \
            np.maximum.reduceat(best, np.flatnonzero(np.concatenate([[True], m_row[1:] != m_row[:-1]])))
        done = 0
        need[asks] = np.maximum(need[asks], np.maximum(got, done))
    return need


def _explode(offset, size) -> tuple[np.ndarray, np.ndarray]:
    """order._blocks on plain columns: each call's 4 KiB blocks as (call index, block), in call order."""
    first = offset // order.BLOCK
    count = (offset + np.maximum(size, 1) - 1) // order.BLOCK - first + 1
    if bool((count == 1).all()):
        return np.arange(len(offset)), first
    which = np.repeat(np.arange(len(offset)), count)
    step = np.arange(len(which)) - np.repeat(np.cumsum(count) - count, count)
    return which, first[which] + step


def _sort_order(*keys: tuple[np.ndarray, int]) -> np.ndarray:
    """np.lexsort by (key, bits) pairs given most significant first, for rows no two of which
    have all keys equal (so any sort gives the one order): the keys packed into one int64 and
    sorted once when each is non-negative and under 2**bits (several times faster than sorting
    by each key in turn), else lexsort."""
    assert sum(bits for _, bits in keys) <= 63
    if len(keys[0][0]) and all(int(k.min()) >= 0 and int(k.max()) < (1 << bits) for k, bits in keys):
        packed = np.zeros(len(keys[0][0]), dtype=np.int64)
        for k, bits in keys:
            packed = (packed << np.int64(bits)) | k.astype(np.int64)
        return np.argsort(packed)
    return np.lexsort([k for k, _ in keys][::-1])


def _rank_of(blocks: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each wanted block's index in `blocks` (sorted, unique) and whether it is there: a table
    indexed by block when their range is narrow (a lookup, where a binary search of unsorted
    blocks costs a cache miss per step), else np.searchsorted."""
    if not len(wanted):
        return np.zeros(0, np.int64), np.zeros(0, bool)
    low, high = int(blocks[0]), int(blocks[-1])
    if high - low < max(RANK_TABLE_MIN, RANK_TABLE_SPREAD * (len(blocks) + len(wanted))):
        table = np.full(high - low + 2, -1, dtype=np.int64)   # the last slot: every block outside the range
        table[blocks - low] = np.arange(len(blocks))
        where = wanted - low
        where[(where < 0) | (where > high - low)] = high - low + 1
        at = table[where]
        known = at >= 0
        return np.maximum(at, 0), known
    at = np.minimum(np.searchsorted(blocks, wanted), len(blocks) - 1)
    return at, blocks[at] == wanted


def _overlapping(t_block, t_end, t_top, m_block, m_start) -> np.ndarray:
    """For each asking block: the highest `t_top` of the awaited calls' blocks that are the
    same block and ended by its start (0: none), as order._last_overlapping finds it."""
    blocks, t_rank = np.unique(t_block, return_inverse=True)
    t_rank = t_rank.reshape(-1).astype(np.int64)
    t0 = int(t_end.min())
    span = int(t_end.max()) - t0 + 2
    if len(blocks) * span >= order.KEY_LIMIT:   # too wide for one key: block and time ranked apart
        o = np.lexsort((t_end, t_rank))
        r, e, top = t_rank[o], t_end[o], t_top[o]
        lift = int(top.max()) + 2
        highest = np.maximum.accumulate(r * lift + top) - r * lift
        out = np.zeros(len(m_block), dtype=np.int64)
        m_rank = np.minimum(np.searchsorted(blocks, m_block), len(blocks) - 1)
        for k in np.flatnonzero(blocks[m_rank] == m_block):
            lo, hi = np.searchsorted(r, [m_rank[k], m_rank[k] + 1])
            j = lo + int(np.searchsorted(e[lo:hi], m_start[k], side="right")) - 1
            out[k] = highest[j] if j >= lo else 0
        return out
    key = t_rank * span + (t_end - t0)
    o = np.argsort(key)
    key, r = key[o], t_rank[o]
    lift = int(t_top.max()) + 2
    highest = np.maximum.accumulate(r * lift + t_top[o]) - r * lift
    m_rank, known = _rank_of(blocks, m_block)
    at = np.clip(m_start - t0, -1, span - 1)
    k = np.searchsorted(key, m_rank.astype(np.int64) * span + at, side="right") - 1
    found = known & (k >= 0) & (r[np.maximum(k, 0)] == m_rank)
    return np.where(found, highest[np.maximum(k, 0)], 0)


def _carry(st: _FileState, calls, cls, seq, end, theirs, cut: int) -> None:
    """After a window: the awaited thread's calls on the file that ended by the cut become maxima
    (no later call can start before them), the others stay pending."""
    p = st.pending if st.pending is not None else np.zeros(0, PENDING)
    new = np.zeros(len(theirs), PENDING)
    new["seq"], new["end"], new["cls"] = seq[theirs], end[theirs], cls[theirs]
    new["offset"], new["size"] = calls["offset"][theirs], calls["size"][theirs]
    rows = np.concatenate([p, new]) if len(p) else new
    ended = rows["end"] <= cut
    done, st.pending = rows[ended], rows[~ended]
    if not len(done):
        return
    top = done["seq"] + 1
    st.every = max(st.every, int(top.max()))
    for kind, name in ((order.BARRIER, "barrier"), (order.SYNC, "sync"), (order.WRITE, "write"), (order.GROW, "grow"),
                       (order.READ, "read")):
        mine = done["cls"] == kind
        if mine.any():
            setattr(st, name, max(getattr(st, name), int(top[mine].max())))
    for kinds, name in (((order.READ,), "reads"), (order.WRITING, "writes")):
        mine = done[np.isin(done["cls"], kinds)]
        if not len(mine):
            continue
        local = np.zeros(len(mine), CALL)
        local["offset"], local["size"] = mine["offset"], mine["size"]
        row, block = order._blocks(local, np.arange(len(mine)))
        old_blocks, old_high = getattr(st, name)
        blocks = np.concatenate([old_blocks, block])
        high = np.concatenate([old_high, (mine["seq"] + 1)[row]])
        uniq, where = np.unique(blocks, return_inverse=True)
        best = np.zeros(len(uniq), dtype=np.int64)
        np.maximum.at(best, where, high)
        setattr(st, name, (uniq, best))


def build_apart(path: str, out: str) -> NativePlan:
    """build_native in a process of its own (start_apart): the build's windows are given back to
    the system with its process, not kept in this one's heap for the recording that follows. Its
    one-line errors are raised here as they were raised there."""
    return start_apart(path, out, follow=False).finish()


def follow_apart(path: str, out: str) -> tuple[NativePlan, typing.Callable[[], NativePlan]]:
    """build_native followed (`announce`), in a process of its own (start_apart): returns once the
    file table is known, with the plan so far and a function that waits for the build's end and
    gives the plan (its waits counted), or raises the build's one-line error. The player follows
    the plan (replay/player.c --follow) while the rest is written. A plan that is not followed
    (requests: build_native) is returned when it is whole, its `followed` false."""
    build = start_apart(path, out, follow=True)
    return build.announced(), build.finish


class Build:
    """A build going on in a process of its own (start_apart): its JSON lines (`said`), its stderr
    kept in `err`."""

    def __init__(self, path: str, pid: int, said: typing.IO[str], err: typing.IO[str]):
        self.path, self.pid, self.said, self.err = path, pid, said, err
        self.first = ""   # the line announced() read already
        self.ended = False   # the process waited for

    def announced(self) -> NativePlan:
        """The plan once its file table is known (followed), or whole (not followed: a timed
        replay, a plan with requests); the build's error raised."""
        self.first = self.said.readline()
        said = json.loads(self.first) if self.first.strip() else {}
        if "error" in said or not self.first.strip():
            self.finish()   # raises the build's error
        return _said(self.first)

    def finish(self) -> NativePlan:
        """The whole plan once built (its waits counted), or the build's error raised."""
        rest = self.said.read()
        status = self._reaped()
        self.err.seek(0)
        stderr = self.err.read()
        self.err.close()
        lines = (self.first + rest).strip().splitlines()
        if os.waitstatus_to_exitcode(status) != 0 or not lines:
            _failed(self.path, stderr)
        return _said(lines[-1])

    def stop(self) -> None:
        """The build ended now, its plan unused (nothing when it has ended already)."""
        import signal

        if self.ended:
            return
        os.kill(self.pid, signal.SIGKILL)
        self._reaped()
        self.err.close()

    def _reaped(self) -> int:
        self.said.close()
        _, status = os.waitpid(self.pid, 0)
        self.ended = True
        return status


def keep_heap() -> None:
    """This process's freed memory kept for its next allocation (glibc's mallopt): the build's
    windows allocate the same few MiB-sized arrays, block after block, and glibc otherwise maps
    each afresh and gives it back when freed, a page fault per 4 KiB touched the next time (a
    third of the build's page faults, and system time on a VM). For a process of its own that
    ends with the build (start_apart); its peak RSS is the same (measured, performance.md)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 1 << 25)   # M_MMAP_THRESHOLD (its largest, 32 MiB): arrays from the heap, not mapped each
        libc.mallopt(-1, 1 << 30)   # M_TRIM_THRESHOLD: the heap's freed top kept (to 1 GiB)
    except (OSError, AttributeError):   # not glibc: its default
        pass


def start_apart(path: str, out: str, follow: bool) -> Build:
    """_main's build started in a child forked from this process, its lines on a pipe; `follow`:
    announced as build_native's announce says, for the player to follow. Forked, not a new
    interpreter (`python -m iowitness.replay.stream_plan`): the child has this process's imports,
    where a new one spent 0.25 to 0.3 s importing numpy and the trace reader before reading the
    first block, longer than the whole build of a 65,567-call IOzone trace (0.06 s); the replay
    waited that long before its files were made and the probe loaded."""
    import sys
    import traceback

    err = tempfile.TemporaryFile(mode="w+")
    for stream in (sys.stdout, sys.stderr):   # nothing of this process's is written twice
        stream.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: never returns into the caller
        code = 1
        try:
            os.close(read_end)
            keep_heap()
            os.dup2(err.fileno(), 2)
            sys.stderr = os.fdopen(2, "w", closefd=False)   # the caller's may be no fd (a test's capture)
            sys.stdout = os.fdopen(write_end, "w")
            code = _main([path, out, *(["--follow"] if follow else [])])
            sys.stdout.flush()
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    return Build(path, pid, os.fdopen(read_end), err)


def _failed(path: str, stderr: str) -> typing.NoReturn:
    from iowitness import errors
    last = (stderr.strip().splitlines() or ["no output"])[-1]
    raise errors.IowitnessError(f"planning the replay of {path} failed: {last}")


def _said(line: str) -> NativePlan:
    """The plan a build process printed (one JSON line), or its one-line error raised."""
    from iowitness import errors
    said = json.loads(line)
    if "error" in said:
        kind = getattr(errors, said["error"], errors.IowitnessError)
        raise (kind if isinstance(kind, type) and issubclass(kind, errors.IowitnessError)
               else errors.IowitnessError)(said["message"])
    threads = np.zeros(said["threads"], THREAD)
    info = NativePlan(said["out"], threads, said["files"], said["source"], said["skipped"], said["count"],
                      said["has_async"], said["waits"])
    info.followed = bool(said.get("followed"))
    return info


def _main(argv: list[str]) -> int:
    from iowitness.errors import IowitnessError

    def say(info: NativePlan) -> None:
        print(json.dumps({"out": info.path, "threads": len(info.threads), "files": info.files, "source": info.source,
                          "skipped": info.skipped, "count": info.count, "has_async": info.has_async,
                          "waits": info.wait_count, "followed": info.followed}), flush=True)
    try:
        say(build_native(argv[0], argv[1], announce=say if argv[2:] == ["--follow"] else None))
    except IowitnessError as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}), flush=True)
        return 0
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(_main(sys.argv[1:]))
