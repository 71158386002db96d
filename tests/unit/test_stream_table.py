"""The phase table streamed block by block (analysis/phasing/stream_table.py) is the in-memory table,
exactly: every case is cut into blocks of 1, 37 and 1000 rows, so every per-phase state
crosses block boundaries, and compared with phase_table.table column by column, bit for bit."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from iowitness.analysis.phasing import fault_spans, stream_assign, stream_table
from tests.support.blocks import BLOCKS, Blocks, cutting
from tests.support.synthetic import (
    EIO,
    O_CREAT,
    O_DIRECT,
    O_RDONLY,
    O_RDWR,
    O_SYNC,
    O_TRUNC,
    O_WRONLY,
    SEEK_CUR,
    SEEK_SET,
    Calls,
)

REC = 4096
F, G = "/data/f", "/data/g"


def same_table(events: pd.DataFrame, sizes=BLOCKS) -> pd.DataFrame:
    assigned = stream_assign.of_frame(events)
    expected = stream_table.of_frame(events, assigned)
    for rows in cutting(sizes, len(events)):
        got = stream_table.table(Blocks(events, assigned, rows))
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
    return expected


def sequential(calls: Calls, op: str, n: int, size: int = REC) -> Calls:
    for _ in range(n):
        getattr(calls, op)(size)
    return calls


# the cases

def test_no_event_and_no_phase():
    # GIVEN a trace without events, and one whose only file is opened and closed
    # WHEN streamed THEN both give the in-memory table: empty
    assert same_table(Calls().frame()).empty
    assert same_table(Calls().open(F).close().frame()).empty


def test_a_phase_of_one_call():
    table = same_table(Calls().open(F, O_RDWR).write(REC).close().frame())
    assert table["ops"].tolist() == [1]


def test_several_threads_in_one_phase_and_one_file_per_thread():
    # GIVEN two threads writing one file, their calls overlapping in time, then a reader
    calls = Calls().open(F, O_RDWR | O_CREAT)
    for i in range(60):
        calls.thread(1000).pwrite(REC, 2 * i * REC, at=2_000_000_000 + 3000 * i)
        calls.thread(1001).pwrite(REC, (2 * i + 1) * REC, at=2_000_000_500 + 3000 * i)
    calls.thread(1000).close(at=3_000_000_000)
    table = same_table(calls.frame())
    assert table["threads"].max() >= 1


def test_several_files_from_one_thread_spend_time_on_other_targets():
    # GIVEN one thread writing four files in turn, record by record (an IOzone throughput child)
    calls = Calls()
    fds = []
    for i in range(4):
        calls.open(f"/data/f{i}", O_WRONLY | O_CREAT | O_TRUNC)
        fds.append(calls.current[(calls.tgid, calls.tid)])
    for r in range(50):
        for fd in fds:
            calls.write(REC, fd=fd, latency=1000 + 17 * r).gap(300)
    for fd in fds:
        calls.close(fd=fd)
    table = same_table(calls.frame())
    assert (table["other_targets_ns"] > 0).all()


def test_timed_fsync_and_close_after_the_last_write():
    # GIVEN IOzone -e -c: writes, fsync, close; then a clean-up fsync in another open
    calls = sequential(Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC), "write", 80)
    calls.fsync(latency=50_000).close(latency=7000)
    calls.open(F, O_RDWR).read(REC).fsync().close()
    table = same_table(calls.frame())
    assert table["sync_end_ns"].iloc[0] > 0 and table["close_end_ns"].iloc[0] > 0


def test_warm_ups_and_stdio_fills():
    # GIVEN IOzone's read test: one record read, a seek back, then the file
    calls = Calls().open(F, O_RDONLY, size=100 * REC).read(REC).lseek(0)
    sequential(calls, "read", 99).close()
    # and an r+ stdio stream: read a block, write into it, over and over
    calls.open(G, O_RDWR, size=64 * REC)
    for i in range(40):
        calls.lseek(i * REC).read(REC).lseek(i * REC + 100).write(200)
    calls.close()
    table = same_table(calls.frame())
    assert table["warmup_ops"].sum() >= 1


def test_records_of_several_sizes_and_transfers():
    calls = Calls().open(F, O_RDWR | O_CREAT)
    for size in [4096] * 10 + [8192] * 12 + [512] * 12 + [4096] * 3:
        calls.write(size)
    calls.close().open(F, O_RDONLY).open(G, O_WRONLY | O_CREAT)
    src, dst = calls.last[calls.tgid] - 1, calls.last[calls.tgid]
    for i in range(20):
        calls.copy(src, dst, 1 << 62, 65536 if i < 19 else 0, i * 65536)
        calls.raw("sendfile_from", fd=src, offset=i * 4096, requested=1 << 30, ret=4096, flags=dst, at=calls.now)
    same_table(calls.frame())


@pytest.mark.parametrize("shape", ["strided", "wrapping stride", "random", "backward", "same record", "sequential"])
def test_access_patterns(shape):
    rng = random.Random(7)
    calls = Calls().open(F, O_RDWR, size=1000 * REC)
    for i in range(3000 if shape == "wrapping stride" else 200):
        offset = {"strided": 3 * i * REC, "wrapping stride": (7 * i * REC) % (1000 * REC),
                  "random": rng.randrange(1000) * REC, "backward": (999 - i) * REC,
                  "same record": 0, "sequential": i * REC}[shape]
        calls.pread(REC, offset)
    # (the wrapping stride's 3,000 calls outrun the pattern's sample, the first 2,001 data calls,
    # rows 1 to 2,001 after the open: blocks of 13 rows put an edge right after it, 2,002 = 13 x 154,
    # blocks of 1,000 one row before it; blocks of one row over 3,000 rows took 83 s at load 15)
    table = same_table(calls.close().frame(), sizes=(13, 37, 1000) if shape == "wrapping stride" else BLOCKS)
    assert shape.split()[-1] in table["pattern"].iloc[0] or shape == "wrapping stride"


def test_mmap_faults_major_and_minor():
    calls = Calls().open(F, O_RDWR, size=64 * REC).write(REC)
    fd = calls.current[(calls.tgid, calls.tid)]
    calls.raw("mmap", fd=fd, offset=0, requested=64 * REC, ret=0x7f0000000000, flags=0x3)
    for i in range(64):
        calls.raw("fault_read" if i % 3 else "fault_write", path=F, offset=i * REC, requested=REC,
                  flags=1 if i % 5 == 0 else 0)
    same_table(calls.close().frame())


def test_fault_bytes_are_the_distinct_bytes_the_faults_mapped(monkeypatch):
    # GIVEN IOzone -B's shape: read faults whose fault-around maps 16 pages each, every window
    # overlapping the one before by half, then a store on every page of them (a write fault on
    # pages already mapped read-only); 200 more faults at random in the second half of the file
    monkeypatch.setattr(fault_spans, "MERGE_AT", 8)   # the union merged many times over the blocks
    rng = random.Random(5)
    calls = Calls().open(F, O_RDWR, size=256 * REC).write(REC)
    fd = calls.current[(calls.tgid, calls.tid)]
    calls.raw("mmap", fd=fd, offset=0, requested=256 * REC, ret=0x7f0000000000, flags=0x3)
    pages = set()
    for first in range(0, 120, 8):
        calls.raw("fault_read", path=F, offset=first * REC, requested=16 * REC)
        pages |= set(range(first, first + 16))
    for page in sorted(pages):
        calls.raw("fault_write", path=F, offset=page * REC, requested=REC)
    for _ in range(200):
        page = rng.randrange(128, 256)
        calls.raw(rng.choice(["fault_read", "fault_write"]), path=F, offset=page * REC, requested=REC)
        pages.add(page)
    # WHEN the phase table is made, in blocks of 1, 37 and 1,000 events
    table = same_table(calls.close().frame())
    # THEN its fault_bytes count each mapped page once (the sum of the faults' bytes: 3.3x that)
    faulted = table[table["faults"] > 0].iloc[0]
    assert faulted["fault_bytes"] == len(pages) * REC, (faulted["fault_bytes"], len(pages) * REC)
    assert faulted["faults"] == 15 + 128 + 200


@pytest.mark.parametrize("syscall", ["uring_read", "aio_write"])
def test_async_phases_depth_and_covered_time(syscall):
    calls = Calls().open(F, O_RDWR | O_DIRECT, size=512 * REC)
    t = 2_000_000_000
    for i in range(300):
        calls.request(syscall, REC, (i * 13 % 512) * REC, latency=5000 + 300 * (i % 7), at=t + 700 * i
                      + (0 if i % 50 else 10**6))
    calls.at(t + 10**9).close()
    table = same_table(calls.frame())
    assert table["async_ops"].iloc[0] == 300 and table["depth_max"].iloc[0] > 1


def test_errors_short_calls_and_open_flags():
    calls = Calls().open(F, O_RDWR | O_SYNC | O_CREAT)
    for i in range(30):
        calls.write(REC, ret=-EIO if i % 7 == 0 else (100 if i % 5 == 0 else None))
    calls.close().open(F, O_RDONLY | O_DIRECT)
    sequential(calls, "read", 20).close()
    same_table(calls.frame())


def test_re_read_and_re_write_across_truncations():
    calls = Calls()
    for flags in (O_WRONLY | O_CREAT | O_TRUNC, O_WRONLY, O_RDONLY, O_WRONLY | O_TRUNC, O_RDONLY, O_RDONLY):
        calls.open(F, flags)
        sequential(calls, "read" if flags == O_RDONLY else "write", 12).close()
    calls.open(F, O_RDWR).ftruncate(0).close()
    sequential(calls.open(F, O_RDWR), "write", 5).close()
    same_table(calls.frame())


def test_iozone_shaped_trace(tmp_path):
    # GIVEN the benchmark script's IOzone-shaped trace: children, rounds, random passes
    from iowitness.analysis.read.run import load
    from scripts.bench import report_10m
    report_10m.build_trace(tmp_path / "t.iwt", 30_000, children=3, rounds=2)
    same_table(load(tmp_path / "t.iwt").events, sizes=(37, 1000))


# a seeded fuzz of small traces

def random_trace(seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    calls = Calls(latency=rng.choice([0, 1000, 1500]))
    files = [f"/data/z{i}" for i in range(rng.randint(1, 3))]
    processes = [1000 + 10 * i for i in range(rng.randint(1, 2))]
    for _ in range(rng.randint(1, 120)):
        tgid = rng.choice(processes)
        calls.process(tgid, tgid + rng.randint(0, 2))
        if rng.random() < 0.1:
            calls.at(calls.now - rng.randint(0, 20_000))
        if rng.random() < 0.2:
            calls.gap(rng.randint(0, 50_000))
        what = rng.random()
        size = rng.choice([512, 4096, 4096, 8192])
        ret = rng.choice([None] * 8 + [-EIO, 100, 0])
        timing = {"latency": rng.randint(0, 30_000)} if rng.random() < 0.3 else {}
        try:
            if what < 0.12 or not calls.fds.get(tgid):
                flags = rng.choice([O_RDONLY, O_WRONLY | O_CREAT, O_RDWR, O_RDWR | O_TRUNC | O_CREAT,
                                    O_RDWR | O_DIRECT, O_WRONLY | O_SYNC])
                calls.open(rng.choice(files), flags, size=rng.choice([None, 64 * REC]))
            elif what < 0.4:
                calls.write(size, ret=ret, **timing)
            elif what < 0.6:
                calls.read(size, ret=ret, **timing)
            elif what < 0.68:
                calls.pread(size, rng.randrange(64) * REC, ret=ret, **timing)
            elif what < 0.74:
                calls.pwrite(size, rng.randrange(64) * REC, ret=ret, **timing)
            elif what < 0.79:
                calls.lseek(rng.choice([0, REC, -REC]), rng.choice([SEEK_SET, SEEK_CUR]))
            elif what < 0.83:
                calls.fsync(**timing)
            elif what < 0.87:
                calls.close(**timing)
            elif what < 0.92:
                for _ in range(rng.randint(1, 8)):
                    calls.request(rng.choice(["uring_read", "aio_write", "aio_read"]), size,
                                  rng.randrange(64) * REC, latency=rng.randint(0, 9000),
                                  at=calls.now + rng.randint(0, 3000))
                calls.gap(rng.randint(0, 9000))
            elif what < 0.96:
                path = calls.fds[tgid][calls._fd(None)].path
                for _ in range(rng.randint(1, 5)):
                    calls.raw(rng.choice(["fault_read", "fault_write"]), path=path, offset=rng.randrange(64) * REC,
                              requested=REC, flags=rng.choice([0, 1]))
            else:
                calls.ftruncate(rng.choice([0, 8 * REC]))
        except ValueError:
            pass
    return calls.frame()


# 50 seeds (300, then 100 before: the suite's time), half in blocks of 1 and 37 rows, half of 37 and
# 1,000: a guard of block boundaries, not a search (the cases above hold each rule); a failure names its seed
@pytest.mark.parametrize("chunk", range(2))
def test_fuzzed_small_traces(chunk):
    for seed in range(chunk * 25, chunk * 25 + 25):
        events = random_trace(seed)
        try:
            same_table(events, sizes=(1, 37) if seed % 2 else (37, 1000))
        except AssertionError as error:
            raise AssertionError(f"seed {seed}: {error}") from None
