"""Which calls of other threads a replayed call waits for: the order a shared file keeps.

ARTC's rule (ROOT, SOSP 2013) for a shared resource: a call waits for every call of another
thread on the same file that had completed before it started in the original. Applied to every
call, it holds two threads that share a file in the original's interleaving, call for call: a
sysbench fileio replay (2 threads, random 16 KiB reads and writes of 2 shared files and an
fsync every 100) waited 113 times in 4,000 calls, each wait handing one thread's lateness to the
other, and ran about twice as long as the original.

Here a call waits only for the calls it conflicts with, those whose order changes what either
does:
  - a barrier conflicts with every call: opens, closes, dups, lseek, resizes, advice, the calls
    at the file position (read, write, readv, writev: the position is shared state), and a
    request at the file position (io_uring's offset -1), or one longer than LONG_CALL_BLOCKS;
  - two reads at an offset never conflict;
  - a read and a write, or two writes, at an offset conflict when their byte ranges overlap;
  - a write at an offset that makes the file longer than it was (GROW) is a write, and
    conflicts with every read besides (a read's length depends on the file's size), not with
    writes elsewhere: the file's size after two writes is the larger end whichever came first.
    (It was a barrier: threads_bench's 4 threads writing their own quarters of one file waited
    272 times in 4,096 writes for the thread writing the last quarter, whose every write grew
    the file, and it for them; now 8 waits, on the open and the close.)
  - a sync (fsync, fdatasync, and their libaio and io_uring requests) conflicts with the
    writes (which it must make durable, or must not) and with other syncs, not with reads.

Example: `waits(calls, thread_index, bounds, start, end, sizes)` from plan.build.
"""

from __future__ import annotations

import numpy as np

from iowitness.replay.plan_layout import OP, WAIT

POSITIONED_READS = ("pread64", "preadv", "preadv2", "aio_read", "uring_read")
POSITIONED_WRITES = ("pwrite64", "pwritev", "pwritev2", "aio_write", "uring_write")
SYNCS = ("fsync", "fdatasync", "aio_fsync", "uring_fsync")

BLOCK = 4096
LONG_CALL_BLOCKS = 64   # a call over more blocks than this is a barrier (its range is not exploded)
URING_FILE_POS = 0x1000
BARRIER, READ, WRITE, SYNC, GROW = 0, 1, 2, 3, 4
WRITING = (WRITE, GROW)   # the classes that write bytes at an offset
KEY_LIMIT = 1 << 62   # a (block, time) key at or above this takes _last_overlapping_wide


def classes(calls, start, sizes: list[int]) -> np.ndarray:
    """Each call's class (BARRIER, READ, WRITE, SYNC, GROW) by the rules above; `sizes`: each
    file's size before the replay (what the trace found there)."""
    op = calls["op"]
    cls = np.full(len(calls), BARRIER, dtype=np.int8)
    cls[np.isin(op, [OP[o] for o in POSITIONED_READS])] = READ
    cls[np.isin(op, [OP[o] for o in POSITIONED_WRITES])] = WRITE
    cls[np.isin(op, [OP[o] for o in SYNCS])] = SYNC
    is_uring = np.isin(op, [OP["uring_read"], OP["uring_write"]])
    cls[is_uring & ((calls["flags"] & URING_FILE_POS) != 0)] = BARRIER
    ranged = (cls == READ) | (cls == WRITE)
    first = calls["offset"] // BLOCK
    last = (calls["offset"] + np.maximum(calls["size"], 1) - 1) // BLOCK
    cls[ranged & ((calls["offset"] < 0) | (last - first >= LONG_CALL_BLOCKS))] = BARRIER
    # a write past the file's end so far (what was there, and every write before it) grows it
    writes = np.flatnonzero(np.isin(op, [OP[o] for o in POSITIONED_WRITES + ("write", "writev")]))
    writes = writes[np.argsort(start[writes], kind="stable")]
    ends = calls["offset"][writes] + calls["size"][writes]
    for f in np.unique(calls["file"][writes]):
        mine = calls["file"][writes] == f
        e = ends[mine]
        before = np.maximum.accumulate(np.concatenate([[sizes[int(f)] if int(f) < len(sizes) else 0], e[:-1]]))
        grows = writes[mine][e > before]
        cls[grows[cls[grows] == WRITE]] = GROW
    return cls


def waits(calls, thread_index, bounds, start, end, sizes: list[int]) -> np.ndarray:
    """The waits that keep each shared file's order across threads: rows (call, thread, count),
    before `call` wait until `thread` has issued `count` calls; only the waits that add to the
    previous one on the same thread are kept."""
    seq = np.arange(len(calls)) - bounds[thread_index]
    cls = classes(calls, start, sizes)
    rows = []
    # each file's calls, in plan order (grouped by thread): one stable sort, not a mask per file
    by_file = np.argsort(calls["file"], kind="stable")
    edges = np.flatnonzero(np.diff(calls["file"][by_file])) + 1
    for on in np.split(by_file, edges):
        users = np.unique(thread_index[on])
        if len(users) < 2:
            continue
        for u in users:
            # the calls of every other thread against thread u's, at once: what a call needs
            # of u does not depend on which thread it is
            of_u = thread_index[on] == u
            theirs, mine = on[of_u], on[~of_u]
            need = _needed(calls, cls, seq, start, end, theirs, mine)
            # a count no higher than an earlier one of the same waiting thread adds nothing (the
            # pass below drops it anyway): dropped here, the rows kept stay few (`mine` is grouped
            # by thread, each in its order: a running maximum lifted per thread)
            group = thread_index[mine].astype(np.int64)
            lift = int(need.max(initial=0)) + 1
            lifted = group * lift + need
            first = np.concatenate([[True], group[1:] != group[:-1]])
            before = np.where(first, group * lift, np.concatenate([[0], np.maximum.accumulate(lifted)[:-1]]))
            adds = lifted > before
            rows.append(np.stack([mine[adds], np.full(adds.sum(), u), need[adds]], axis=1))
    if not rows:
        return np.zeros(0, WAIT)
    call, u, count = np.concatenate(rows).T
    # per (waiting thread, awaited thread), in the waiting thread's order: a row is kept when
    # its count is above every earlier one's (a running maximum per group, each group lifted
    # above the one before so that the maximum never reaches back into it)
    t = thread_index[call].astype(np.int64)
    by_group = np.lexsort((call, u, t))
    call, u, count, t = call[by_group], u[by_group], count[by_group], t[by_group]
    new_group = np.concatenate([[True], (t[1:] != t[:-1]) | (u[1:] != u[:-1])])
    group = np.cumsum(new_group)
    lift = int(count.max(initial=0)) + 1
    lifted = group * lift + count
    before = np.concatenate([[0], np.maximum.accumulate(lifted)[:-1]])
    before = np.where(new_group, group * lift, before)
    keep = lifted > before
    call, u, count = call[keep], u[keep], count[keep]
    by_call = np.lexsort((u, call))
    table = np.zeros(len(by_call), WAIT)
    table["call"], table["thread"], table["count"] = call[by_call], u[by_call], count[by_call]
    return table


def _needed(calls, cls, seq, start, end, theirs, mine) -> np.ndarray:
    """For each of `mine` (one thread's calls on the file), how many calls the other thread
    (`theirs`) must have issued first: one past the last of its conflicting calls that ended
    before it started (0: none)."""
    c_t, c_m = cls[theirs], cls[mine]
    s = start[mine]
    need = _last_ended(theirs[c_t == BARRIER], seq, end, s)
    every = _last_ended(theirs, seq, end, s)
    need = np.where(c_m == BARRIER, every, need)
    syncs = _last_ended(theirs[c_t == SYNC], seq, end, s)
    writes = _last_ended(theirs[np.isin(c_t, WRITING)], seq, end, s)
    grows = _last_ended(theirs[c_t == GROW], seq, end, s)
    reads = _last_ended(theirs[c_t == READ], seq, end, s)
    need = np.where(c_m == SYNC, np.maximum.reduce([need, syncs, writes]), need)
    need = np.where(np.isin(c_m, WRITING), np.maximum(need, syncs), need)
    need = np.where(c_m == READ, np.maximum(need, grows), need)
    need = np.where(c_m == GROW, np.maximum(need, reads), need)
    # (a read's overlaps with a GROW, and a GROW's with reads, are in the two lines above)
    for kind, against in ((READ, (WRITE,)), (WRITE, (READ, WRITE, GROW)), (GROW, WRITING)):
        asks = c_m == kind
        if asks.any():
            other = theirs[np.isin(c_t, against)]
            need[asks] = np.maximum(need[asks], _last_overlapping(calls, seq, start, end, other, mine[asks]))
    return need


def _last_ended(rows, seq, end, at) -> np.ndarray:
    """For each time in `at`: one past the highest seq of `rows` that ended by then (0: none)."""
    if not len(rows):
        return np.zeros(len(at), dtype=np.int64)
    order = np.argsort(end[rows], kind="stable")
    highest = np.maximum.accumulate(seq[rows][order] + 1)
    k = np.searchsorted(end[rows][order], at, side="right") - 1
    return np.where(k >= 0, highest[np.maximum(k, 0)], 0)


def _blocks(calls, rows) -> tuple[np.ndarray, np.ndarray]:
    """Each row exploded into the 4 KiB blocks its byte range covers: (row index, block)."""
    first = calls["offset"][rows] // BLOCK
    count = (calls["offset"][rows] + np.maximum(calls["size"][rows], 1) - 1) // BLOCK - first + 1
    which = np.repeat(np.arange(len(rows)), count)
    step = np.arange(len(which)) - np.repeat(np.cumsum(count) - count, count)
    return which, first[which] + step


def _last_overlapping(calls, seq, start, end, theirs, mine) -> np.ndarray:
    """For each of `mine`: one past the highest seq of `theirs` whose byte range shares a
    block with it and that ended before it started (0: none)."""
    out = np.zeros(len(mine), dtype=np.int64)
    if not len(theirs) or not len(mine):
        return out
    t_row, t_block = _blocks(calls, theirs)
    m_row, m_block = _blocks(calls, mine)
    # theirs sorted by (block, end) as one int64 key: the block's rank among theirs, then the
    # end against the earliest; `mine` is looked up in it, not sorted with it
    blocks, t_rank = np.unique(t_block, return_inverse=True)
    t_end = end[theirs][t_row]
    t0 = int(t_end.min())
    span = int(t_end.max()) - t0 + 2
    if len(blocks) * span >= KEY_LIMIT:   # too wide for one key: the general way
        return _last_overlapping_wide(calls, seq, start, end, theirs, mine, t_row, t_block, m_row, m_block)
    key = t_rank.astype(np.int64) * span + (t_end - t0)
    order = np.argsort(key)
    key, t_rank_sorted = key[order], t_rank[order].astype(np.int64)
    lift = int(seq.max(initial=0)) + 2
    running = np.maximum.accumulate(t_rank_sorted * lift + seq[theirs][t_row][order] + 1)
    highest = running - t_rank_sorted * lift
    m_rank = np.minimum(np.searchsorted(blocks, m_block), len(blocks) - 1)
    known = blocks[m_rank] == m_block
    at = np.clip(start[mine][m_row] - t0, -1, span - 1)
    k = np.searchsorted(key, m_rank.astype(np.int64) * span + at, side="right") - 1
    found = known & (k >= 0) & (t_rank_sorted[np.maximum(k, 0)] == m_rank)
    np.maximum.at(out, m_row, np.where(found, highest[np.maximum(k, 0)], 0))
    return out


def _last_overlapping_wide(calls, seq, start, end, theirs, mine, t_row, t_block, m_row, m_block) -> np.ndarray:
    """_last_overlapping where blocks and times do not fit one int64 key: both ranked together."""
    out = np.zeros(len(mine), dtype=np.int64)
    blocks, rank = np.unique(np.concatenate([t_block, m_block]), return_inverse=True)
    t_rank, m_rank = rank[:len(t_block)], rank[len(t_block):]
    times, when = np.unique(np.concatenate([end[theirs][t_row], start[mine][m_row]]), return_inverse=True)
    t_when, m_when = when[:len(t_row)], when[len(t_row):]
    span = len(times) + 1
    key = t_rank.astype(np.int64) * span + t_when
    order = np.argsort(key, kind="stable")
    key, t_rank_sorted = key[order], t_rank[order]
    # the highest seq so far within each block (blocks come in order, so a running maximum of
    # seq lifted by the block's rank never reaches into an earlier block)
    lift = int(seq.max(initial=0)) + 2
    running = np.maximum.accumulate(t_rank_sorted.astype(np.int64) * lift + seq[theirs][t_row][order] + 1)
    highest = running - t_rank_sorted.astype(np.int64) * lift
    k = np.searchsorted(key, m_rank.astype(np.int64) * span + m_when, side="right") - 1
    found = (k >= 0) & (t_rank_sorted[np.maximum(k, 0)] == m_rank)
    value = np.where(found, highest[np.maximum(k, 0)], 0)
    np.maximum.at(out, m_row, value)
    return out

