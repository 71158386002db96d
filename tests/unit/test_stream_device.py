"""The device view is the same whatever the cut of the events into blocks: every case is cut
into blocks of 1, 37 and 1000 rows, so every per-phase and per-thread state of DeviceFacts
crosses block boundaries, and compared bit for bit with the view of the events as one block.
The cut side gets a trace whose `events` refuses, as a StreamedTrace's does; the dd trace is
read from its file, its block and off-CPU records a block of chunks at a time
(analysis/read/device_records.py). The records' own pass: tests/unit/test_device_records.py."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.measure import device
from iowitness.analysis.phasing import stream_assign, stream_table
from iowitness.probes.layout import layout
from tests.support.blocks import BLOCKS, Blocks, assigned_of, cutting
from tests.support.synthetic import (
    DEV,
    O_CREAT,
    O_DIRECT,
    O_RDONLY,
    O_RDWR,
    O_TRUNC,
    O_WRONLY,
    START_NS,
    Calls,
)

MS = 1_000_000
US = 1000
KIB = 1024
REC = 4096
DEV2 = (7 << 20) | 1      # loop1, a second device under the benchmark's files
FS_DEV = 45               # a file system whose device is none of the block devices (btrfs: 0:45) on loop1
PREEMPTED, SLEEPING, WAITING_IO = 0, 1, 2
CPU_FIELDS = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]


class WithoutEvents(SimpleNamespace):
    """The trace as the streamed path has it: everything but the events."""

    @property
    def events(self):
        raise RuntimeError("a streamed trace has no events table")


def trace_of(events, block, offcpu=None, *, files=(), devices=((DEV, "loop0"),), samples=(), cut_short=False):
    view = None if cut_short else {"devices": [{"dev": d, "name": n} for d, n in devices], "offcpu": True,
                                   "cpu_fields": CPU_FIELDS}
    return SimpleNamespace(events=events, block=block, offcpu=offcpu, samples=list(samples), processes=None,
                           meta={"files": list(files), "device_view": view, "pid": 1000})


def streamed(trace, table, assigned_blocks):
    blind = WithoutEvents(**{k: v for k, v in vars(trace).items() if k != "events"})
    facts = device.DeviceFacts(table, blind)
    for events, a in assigned_blocks.blocks():
        facts.add(events, a)
    return device.from_facts(blind, table, facts)


def same_view(trace, sizes=BLOCKS) -> tuple[pd.DataFrame, pd.DataFrame]:
    events = trace.events
    assigned = stream_assign.of_frame(events)
    table = stream_table.of_frame(events, assigned)
    facts = device.DeviceFacts(table, trace)
    facts.add(events, assigned)
    expected = device.from_facts(trace, table, facts)
    for rows in cutting(sizes, len(events)):
        got = streamed(trace, table, Blocks(events, assigned, rows))
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
    return table, expected


def block_records(rows) -> np.ndarray:
    """rows: (start_ns, complete_ns, bytes, op, tid, dev); tid from 1000: the traced process's
    threads, 0 a kworker, any other another program's."""
    block = np.zeros(len(rows), dtype=layout().structs["iow_block"])
    for i, (start, complete, size, op, tid, dev) in enumerate(rows):
        block[i]["start_ns"] = block[i]["issue_ns"] = start
        block[i]["complete_ns"], block[i]["bytes"], block[i]["op"], block[i]["dev"] = complete, size, op, dev
        block[i]["tgid"], block[i]["tid"], block[i]["sector"] = 1000 if tid >= 1000 else tid, tid, 8 * i
        if tid == 0:
            block[i]["comm"][:7] = np.frombuffer(b"kworker", dtype=np.uint8)
    order = np.argsort(block["complete_ns"], kind="stable")
    return block[order]


def stretches(rows) -> np.ndarray:
    """rows: (off_ns, on_ns, tid, state), in any order (the probe's come per CPU)."""
    off = np.zeros(len(rows), dtype=layout().structs["iow_offcpu"])
    for i, (a, b, tid, state) in enumerate(rows):
        off[i]["off_ns"], off[i]["on_ns"], off[i]["tid"], off[i]["state"] = a, b, tid, state
        off[i]["tgid"] = 1000 if tid >= 1000 else tid
    return off


def samples_over(first_ns: int, last_ns: int) -> list[dict]:
    return [{"ts_ns": first_ns - MS, "cpu": [100, 0, 50, 800, 20, 0, 0, 0]},
            {"ts_ns": last_ns + MS, "cpu": [160, 0, 90, 900, 70, 0, 0, 0]}]


# the cases

def test_no_device_view_and_no_phase():
    # GIVEN a trace recorded without the block probe, and one whose only file is opened and closed
    events = Calls().open("/data/f", O_RDWR).write(REC).close().frame()
    # WHEN streamed THEN both give the in-memory view: empty
    assert same_view(trace_of(events, None))[1].empty
    assert same_view(trace_of(Calls().open("/data/f").close().frame(), block_records([])))[1].empty


def test_a_writer_with_off_cpu_stretches_inside_and_outside_its_calls_and_fsync():
    # GIVEN one thread writing 80 records of 4 KiB (20 µs each, 30 µs apart), an fsync of 2 ms,
    # then reading them back
    calls = Calls(latency=20 * US).open("/data/f", O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(80):
        calls.write(REC).gap(10 * US)
    calls.fsync(latency=2 * MS).close()
    calls.gap(5 * MS).open("/data/f", O_RDONLY)
    for _ in range(50):
        calls.read(REC, latency=40 * US).gap(3 * US)
    events = calls.close().frame()
    start = events["start_ns"].to_numpy(np.int64)
    end = events["end_ns"].to_numpy(np.int64)
    # and its off-CPU stretches: inside calls (waiting on I/O, preempted), between them, in the
    # fsync, across a window's edges, and another thread's (not the phase's)
    rows = []
    for i in range(1, len(events) - 1, 3):
        rows.append((start[i] + 2 * US, start[i] + 12 * US, 1000, WAITING_IO if i % 2 else PREEMPTED))
        rows.append((end[i] + 1 * US, end[i] + 4 * US, 1000, SLEEPING if i % 5 else PREEMPTED))
        rows.append((start[i], end[i], 4242, WAITING_IO))
    fsync = int(np.flatnonzero(events["syscall"] == "fsync")[0])
    rows += [(start[fsync] + 100 * US, end[fsync] - 100 * US, 1000, WAITING_IO),
             (start[0] - MS, start[1] + 5 * US, 1000, SLEEPING), (end[-2] - 5 * US, end[-1] + MS, 1000, SLEEPING)]
    off = stretches(rows[::-1])
    block = block_records([(s, s + 300 * US, 64 * KIB, 1 if s < start[fsync] + MS else 0, t, DEV)
                           for s, t in zip(range(int(start[5]), int(end[-1]), 400 * US), [1000, 0, 1000, 4242] * 100)])
    # WHEN streamed THEN the in-memory view, its time split included
    trace = trace_of(events, block, off, samples=samples_over(int(start[0]), int(end[-1])))
    _, view = same_view(trace)
    assert (view["cpu_source"] == "sched_switch").all() and (view["blocked_s"] > 0).all()
    assert view["fsync_s"].iloc[0] > 0 and view["runnable_s"].sum() > 0


def test_concurrent_threads_on_two_devices_and_a_file_system_named_by_its_source():
    # GIVEN a main thread that opens a file, fsyncs and closes it while three workers write it
    # at once (its calls join a worker's phase: a phase of several threads), then two threads
    # reading a second file on another device, and one reading a file on a file system whose
    # device number is none of the block devices (its source is loop1)
    calls = Calls(latency=15 * US).thread(1000).open("/data/f", O_RDWR | O_CREAT)
    for i in range(60):
        for k in range(3):
            calls.thread(1001 + k).at(START_NS + 100 * US + i * 50 * US + k * 7 * US).pwrite(REC, (3 * i + k) * REC)
    calls.thread(1000).fsync(latency=300 * US).close()
    t = START_NS + 10 * MS
    calls.thread(1011).at(t).open("/data/g", O_RDONLY | O_DIRECT)
    for i in range(40):
        for k in range(2):
            calls.thread(1011 + k).at(t + 100 * US + i * 60 * US + k * 11 * US).pread(64 * KIB, (2 * i + k) * 64 * KIB)
    calls.thread(1011).close()
    calls.thread(1020).at(t + 5 * MS).open("/btrfs/h", O_RDONLY)
    for i in range(30):
        calls.read(REC, latency=25 * US).gap(5 * US)
    events = calls.close().frame()
    path = events["path"].astype(str)
    events.loc[path == "/data/g", "dev"] = DEV2
    events.loc[path == "/btrfs/h", "dev"] = FS_DEV
    rng = random.Random(3)
    lo, hi = int(events["start_ns"].min()), int(events["end_ns"].max())
    tids = sorted(set(events["tid"].tolist())) + [0, 4242]
    off = stretches([(s, s + rng.randint(1, 80) * US, rng.choice(tids), rng.choice([0, 1, 2]))
                     for s in (rng.randint(lo - MS, hi + MS) for _ in range(600))])
    block = block_records([(s, s + rng.randint(20, 900) * US, rng.choice([4, 64, 128]) * KIB, rng.choice([0, 1, 1, 3]),
                            rng.choice(tids), rng.choice([DEV, DEV2]))
                           for s in (rng.randint(lo - MS, hi + 30 * MS) for _ in range(400))])
    files = [{"dev": FS_DEV, "ino": 99, "path": "/btrfs/h", "block_device": "/dev/loop1"}]
    trace = trace_of(events, block, off, files=files, devices=((DEV, "loop0"), (DEV2, "loop1")),
                     samples=samples_over(lo, hi))
    # WHEN streamed THEN the in-memory view, each phase on its device
    table, view = same_view(trace)
    assert table["threads"].max() > 1
    assert view["device"].tolist() == ["loop0"] * 3 + ["loop1"] * 3
    assert view["writeback_bytes"].sum() > 0


def test_a_trace_cut_short_names_its_devices_from_the_records():
    calls = Calls().open("/data/f", O_WRONLY | O_CREAT)
    for _ in range(100):
        calls.write(REC).gap(2 * US)
    events = calls.close().frame()
    block = block_records([(START_NS + i * 20 * US, START_NS + i * 20 * US + 50 * US, REC, 1, 1000, DEV)
                           for i in range(20)])
    same_view(trace_of(events, block, stretches([]), cut_short=True))


@pytest.mark.parametrize("syscall", ["uring_read", "aio_write"])
def test_asynchronous_phases_count_their_sleep_between_calls_as_blocked(syscall):
    # GIVEN a thread submitting 300 requests (the clock does not move for them) between reaps it
    # does with reads of another file, and a second thread that only submits
    calls = Calls().open("/data/f", O_RDWR | O_DIRECT, size=512 * REC)
    calls.thread(1001).open("/data/f", O_RDWR | O_DIRECT)
    t = START_NS + MS
    for i in range(300):
        calls.thread(1000 if i % 3 else 1001).request(syscall, REC, (i * 13 % 512) * REC,
                                                       latency=5 * US + 300 * (i % 7), at=t + 7 * US * i)
    calls.thread(1000).at(t + 400 * 7 * US).close()
    events = calls.frame()
    rng = random.Random(5)
    off = stretches([(s, s + rng.randint(1, 30) * US, rng.choice([1000, 1001]), rng.choice([0, 1, 2]))
                     for s in range(t - MS, t + 3 * MS, 9 * US)])
    block = block_records([(s, s + 40 * US, REC, 0 if syscall.endswith("read") else 1, rng.choice([1000, 1001, 0]),
                            DEV) for s in range(t, t + 2 * MS, 13 * US)])
    _, view = same_view(trace_of(events, block, off))
    assert view["blocked_s"].iloc[0] > 0 and view["queued"].iloc[0]


def test_calls_of_one_thread_starting_together_and_out_of_order():
    # GIVEN one thread's calls that start at the same time, and calls it makes back in time
    # (what clocks of two CPUs can give): a stretch's call is the last to start by its midpoint
    calls = Calls(latency=10 * US).open("/data/f", O_RDWR | O_CREAT)
    for i in range(40):
        calls.pwrite(REC, i * REC, at=START_NS + (i // 3) * 20 * US, latency=(5 + i % 4) * US)
    for i in range(40):
        calls.pwrite(REC, i * REC, at=START_NS + MS - i * 7 * US, latency=9 * US)
    events = calls.close().frame()
    off = stretches([(START_NS + s * US, START_NS + (s + d) * US, 1000, s % 3)
                     for s in range(0, 1100, 3) for d in (1, 4)])
    block = block_records([(START_NS + s * US, START_NS + (s + 30) * US, REC, 1, 1000, DEV)
                           for s in range(0, 1200, 50)])
    same_view(trace_of(events, block, off))
    # and a table whose rows are not in time order (a table written by hand): neighbours swapped
    assert len(events) % 2 == 0
    swapped = np.arange(len(events)).reshape(-1, 2)[:, ::-1].ravel()
    same_view(trace_of(events.iloc[swapped].reset_index(drop=True), block, off))


def test_the_dd_trace_streamed_from_its_file(tmp_path):
    # GIVEN the dd trace the collector would write (device view, sched_switch records, samples)
    from iowitness.analysis.read import streamed as streamed_trace
    from iowitness.analysis.read.run import load
    from tests.support.trace_mutants import write_dd_trace
    write_dd_trace(tmp_path / "dd.iwt")
    loaded = load(tmp_path / "dd.iwt")
    report = loaded.report()
    # WHEN its device view is made from a StreamedTrace, events in blocks
    for rows in BLOCKS:
        with streamed_trace.open_trace(tmp_path / "dd.iwt") as trace:
            facts = device.DeviceFacts(report.phases, trace)
            for e, a in Blocks(loaded.events, assigned_of(report), rows).blocks():
                facts.add(e, a)
            got = device.from_facts(trace, report.phases, facts)
        # THEN it is the report's
        pd.testing.assert_frame_equal(got, report.device, check_exact=True)
    assert report.device["cpu_source"].iloc[0] == "sched_switch"


# a seeded fuzz of small traces with block and sched_switch records

def random_trace(seed: int):
    rng = random.Random(seed)
    calls = Calls(latency=rng.choice([1000, 5000, 20_000]))
    files = ["/data/a", "/data/b", "/data/c"][:rng.randint(1, 3)]
    tids = [1000, 1001, 1002][:rng.randint(1, 3)]
    for _ in range(rng.randint(1, 150)):
        calls.thread(rng.choice(tids))
        if rng.random() < 0.1:
            calls.at(calls.now - rng.randint(0, 50_000))
        if rng.random() < 0.3:
            calls.gap(rng.randint(0, 80_000))
        what = rng.random()
        timing = {"latency": rng.randint(0, 60_000)} if rng.random() < 0.4 else {}
        try:
            if what < 0.1 or (calls.tgid, calls.tid) not in calls.current and not calls.fds.get(calls.tgid):
                calls.open(rng.choice(files), rng.choice([O_RDONLY, O_WRONLY | O_CREAT, O_RDWR, O_RDWR | O_DIRECT,
                                                          O_WRONLY | O_TRUNC | O_CREAT]), size=64 * REC)
            elif what < 0.4:
                calls.write(rng.choice([512, REC, 8192]), **timing)
            elif what < 0.65:
                calls.read(rng.choice([512, REC, 8192]), **timing)
            elif what < 0.75:
                calls.pread(REC, rng.randrange(64) * REC, **timing)
            elif what < 0.82:
                calls.fsync(**timing)
            elif what < 0.86:
                calls.close(**timing)
            else:
                for _ in range(rng.randint(1, 8)):
                    calls.request(rng.choice(["uring_read", "aio_write", "aio_read"]), REC, rng.randrange(64) * REC,
                                  latency=rng.randint(0, 9000), at=calls.now + rng.randint(0, 3000))
                calls.gap(rng.randint(0, 9000))
        except ValueError:
            pass
    events = calls.frame()
    if rng.random() < 0.5 and len(events):
        events.loc[events["path"].astype(str) == files[-1], "dev"] = DEV2
    lo = int(events["start_ns"].min()) if len(events) else START_NS
    hi = int(events["end_ns"].max()) if len(events) else START_NS
    who = tids + [0, 4242]
    off = stretches([(s, s + rng.randint(0, 40_000), rng.choice(who), rng.choice([0, 1, 2]))
                     for s in (rng.randint(lo - 50_000, hi + 50_000) for _ in range(rng.randint(0, 300)))])
    block = block_records([(s, s + rng.randint(0, 200_000), rng.choice([0, 512, REC, 65536]), rng.choice([0, 1, 2, 3]),
                            rng.choice(who), rng.choice([DEV, DEV2]))
                           for s in (rng.randint(lo - 100_000, hi + 3 * MS) for _ in range(rng.randint(0, 200)))])
    return trace_of(events, block, off if rng.random() < 0.85 else None,
                    devices=((DEV, "loop0"), (DEV2, "loop1"))[:rng.randint(1, 2)], samples=samples_over(lo, hi))


@pytest.mark.parametrize("chunk", range(3))   # 30 seeds (60 before): a guard of block boundaries, not a search
def test_fuzzed_small_traces(chunk):
    for seed in range(chunk * 10, chunk * 10 + 10):
        trace = random_trace(seed)
        try:
            same_view(trace, sizes=(1, 37) if seed % 2 else (37, 1000))
        except AssertionError as error:
            raise AssertionError(f"seed {seed}: {error}") from None
