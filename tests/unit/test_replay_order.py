"""replay/order.py: a call on a shared file waits only for the other threads' calls it
conflicts with (two reads never; a read and a write, or two writes, when their bytes overlap;
a sync with writes and syncs; opens, closes and calls at the file position with everything).
Ground truth: the rules written out by hand on small plans, two threads on one file."""

from __future__ import annotations

import numpy as np
import pytest

from iowitness.replay import order
from iowitness.replay.plan import CALL, OP


def plan_of(thread0, thread1):
    """Two threads' calls on file 0, each (op, offset, size, start_ns, end_ns)."""
    rows = [(0, *c) for c in thread0] + [(1, *c) for c in thread1]
    calls = np.zeros(len(rows), CALL)
    calls["op"] = [OP[r[1]] for r in rows]
    calls["offset"] = [r[2] for r in rows]
    calls["size"] = [r[3] for r in rows]
    thread_index = np.array([r[0] for r in rows])
    bounds = np.array([0, len(thread0), len(rows)])
    start = np.array([r[4] for r in rows], dtype=np.int64)
    end = np.array([r[5] for r in rows], dtype=np.int64)
    return calls, thread_index, bounds, start, end


def waits_of(thread0, thread1, size=1 << 20):
    w = order.waits(*plan_of(thread0, thread1), [size])
    return [(int(r["call"]), int(r["thread"]), int(r["count"])) for r in w]


def test_two_reads_never_wait_for_each_other():
    # GIVEN thread 1 reading the bytes thread 0 read just before
    # THEN no wait: reads do not change what the other reads
    assert waits_of([("pread64", 0, 4096, 0, 10)], [("pread64", 0, 4096, 20, 30)]) == []


def test_a_read_waits_for_an_earlier_write_of_the_same_bytes_only():
    # GIVEN thread 0 writing block 0 then block 8; thread 1 then reading block 8 and block 100
    writes = [("pwrite64", 0, 4096, 0, 10), ("pwrite64", 32768, 4096, 20, 30)]
    reads = [("pread64", 32768, 4096, 40, 50), ("pread64", 409600, 4096, 60, 70)]
    # THEN the read of block 8 waits for both of thread 0's calls (its second write), the other none
    assert waits_of(writes, reads) == [(2, 0, 2)]
    # AND a read overlapping by one byte waits too
    assert waits_of([("pwrite64", 0, 4097, 0, 10)], [("pread64", 4096, 10, 20, 30)]) == [(1, 0, 1)]


def test_a_write_waits_for_overlapping_reads_and_writes_and_for_syncs():
    # GIVEN thread 0: a read of block 0, an fsync, a write of block 5; thread 1 writes block 0 after
    t0 = [("pread64", 0, 4096, 0, 10), ("fsync", -1, 0, 20, 30), ("pwrite64", 20480, 4096, 40, 50)]
    # THEN a write of block 0 waits for the fsync (count 2), not the later write of block 5
    assert waits_of(t0, [("pwrite64", 0, 4096, 60, 70)]) == [(3, 0, 2)]


def test_a_sync_waits_for_writes_not_reads():
    # GIVEN thread 0 writes then reads; thread 1 fsyncs after both
    t0 = [("pwrite64", 0, 4096, 0, 10), ("pread64", 8192, 4096, 20, 30)]
    # THEN the fsync waits for the write (count 1), not the read after it
    assert waits_of(t0, [("fsync", -1, 0, 40, 50)]) == [(2, 0, 1)]
    # AND a read after another thread's fsync does not wait for it
    assert waits_of([("fsync", -1, 0, 0, 10)], [("pread64", 0, 4096, 20, 30)]) == []


def test_opens_closes_and_position_calls_wait_for_everything():
    # GIVEN thread 0 reading; thread 1 then opening, reading at the file position, closing
    t0 = [("pread64", 0, 4096, 0, 10)]
    assert waits_of(t0, [("open", -1, 0, 20, 30)]) == [(1, 0, 1)]
    assert waits_of(t0, [("read", 0, 4096, 20, 30)]) == [(1, 0, 1)]
    # AND a call only waits for calls that had ended before it started
    assert waits_of([("pwrite64", 0, 4096, 0, 25)], [("pread64", 0, 4096, 20, 30)]) == []


def test_a_growing_write_orders_with_reads_and_syncs_not_with_writes_elsewhere():
    # GIVEN a file of 4 KiB, thread 0 writing past its end (the file grows to 1 MiB + 4 KiB)
    grows = [("pwrite64", 1 << 20, 4096, 0, 10)]
    # THEN a read of other bytes waits for it (its length depends on the file's size)
    assert waits_of(grows, [("pread64", 0, 4096, 20, 30)], size=4096) == [(1, 0, 1)]
    # AND a growing write waits for a read of other bytes before it
    assert waits_of([("pread64", 0, 4096, 0, 10)], [("pwrite64", 1 << 20, 4096, 20, 30)], size=4096) == [(1, 0, 1)]
    # AND an fsync waits for it, as for any write
    assert waits_of(grows, [("fsync", -1, 0, 20, 30)], size=4096) == [(1, 0, 1)]
    # AND a write of other bytes does not, nor another growing write (the size after both is the
    # larger end whichever comes first): threads_bench's threads each writing their own quarter
    assert waits_of(grows, [("pwrite64", 0, 4096, 20, 30)], size=4096) == []
    assert waits_of(grows, [("pwrite64", 2 << 20, 4096, 20, 30)], size=4096) == []
    assert waits_of([("pwrite64", 0, 4096, 0, 10)], [("pwrite64", 1 << 20, 4096, 20, 30)], size=4096) == []
    # AND a write of the same bytes does
    assert waits_of(grows, [("pwrite64", 1 << 20, 4096, 20, 30)], size=4096) == [(1, 0, 1)]


def brute_force_waits(calls, thread_index, bounds, start, end, sizes):
    """The rules of replay/order.py written out call by call (classes from order.classes, the
    conflicts and the keep rule by hand): the ground truth for its vectorised waits."""
    cls = order.classes(calls, start, sizes)
    seq = np.arange(len(calls)) - bounds[thread_index]

    def blocks(k):
        first = int(calls["offset"][k]) // order.BLOCK
        return set(range(first, (int(calls["offset"][k]) + max(int(calls["size"][k]), 1) - 1) // order.BLOCK + 1))

    def conflict(a, b):
        ca, cb = cls[a], cls[b]
        if order.BARRIER in (ca, cb):
            return True
        if order.SYNC in (ca, cb):
            return {ca, cb} <= {order.SYNC, order.WRITE, order.GROW}
        if {ca, cb} == {order.READ, order.GROW}:
            return True
        return bool({ca, cb} & {order.WRITE, order.GROW}) and bool(blocks(a) & blocks(b))

    out, best = [], {}
    for c in range(len(calls)):
        t = int(thread_index[c])
        for u in sorted(set(thread_index.tolist()) - {t}):
            need = max((int(seq[o]) + 1 for o in range(len(calls))
                        if thread_index[o] == u and calls["file"][o] == calls["file"][c]
                        and end[o] <= start[c] and conflict(c, o)), default=0)
            if need > best.get((t, u), 0):
                best[(t, u)] = need
                out.append((c, u, need))
    return out


@pytest.mark.parametrize("key_limit", [order.KEY_LIMIT, 1], ids=["one-key", "wide"])
def test_waits_of_many_threads_on_shared_files_match_the_rules_call_by_call(monkeypatch, key_limit):
    # GIVEN 4 threads on 2 shared files, random positioned reads and writes (some over the
    # file's end, some long), syncs and reads at the file position, overlapping in time
    # (overlaps found with one (block, time) key, and, key limit 1, with both ranked together)
    monkeypatch.setattr(order, "KEY_LIMIT", key_limit)
    rng = np.random.default_rng(5)
    per, threads = 60, 4
    calls = np.zeros(per * threads, CALL)
    kinds = np.array([OP["pread64"], OP["pwrite64"], OP["fsync"], OP["read"]])
    calls["op"] = kinds[rng.choice(4, len(calls), p=[0.45, 0.4, 0.1, 0.05])]
    calls["file"] = rng.integers(0, 2, len(calls))
    calls["offset"] = rng.integers(0, 40, len(calls)) * 2048
    calls["size"] = np.where(rng.random(len(calls)) < 0.05, 1 << 20, 4096)
    thread_index = np.repeat(np.arange(threads), per)
    bounds = np.arange(threads + 1) * per
    start = np.concatenate([np.sort(rng.integers(0, 100_000, per)) for _ in range(threads)]).astype(np.int64)
    end = start + rng.integers(1, 3_000, len(calls))
    sizes = [64 * 1024, 0]
    # WHEN the plan's waits are computed
    got = [tuple(int(x) for x in row) for row in order.waits(calls, thread_index, bounds, start, end, sizes).tolist()]
    # THEN they are the rules applied call by call, in call order, only those adding to the
    # previous wait on the same thread
    expected = brute_force_waits(calls, thread_index, bounds, start, end, sizes)
    assert len(expected) > 20
    assert got == expected
