"""The streamed plan (replay/stream_plan.py) against the in-memory one (replay/plan.py): the
native plan file byte for byte, on messy synthetic traces cut into many small blocks and
windows (several processes and threads, shared files, overlapping calls, events out of time
order in the file, libaio and io_uring requests, failed calls, preemptions, block reads)."""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.errors import UsageError
from iowitness.probes.layout import layout
from iowitness.replay import plan, stream_plan
from iowitness.replay.plan_layout import OPS as OP_NAMES

AT_FDCWD = -100
O_RDWR, O_CREAT, O_TRUNC = 0o2, 0o100, 0o1000
DEV = (8 << 20) | 1


def write_messy_trace(path, seed: int, threads: int = 6, calls: int = 600, requests: bool = True,
                      appending: bool = False, tied: bool = False) -> None:
    """Threads in 2 processes, each on its own file and on 3 shared ones (inodes 10-12), calls
    of 1-40 us at random offsets in 256 KiB (so blocks are shared), the events written in order
    of their end (as the probe's ring holds them) with some swapped. `requests`: libaio and
    io_uring requests among them (else those are preads). `appending`: each thread's pwrite64 of a
    shared file at its own ascending offsets (thread t's k-th call at (t * 600 + k) x 4 KiB), so
    that the thread writing highest grows the file, as threads_bench's do, among the reads.
    `tied`: the calls' starts cut to 50 us, so that many calls of several threads, in several
    blocks of the file, start at the same nanosecond (the trace's row order breaks the tie)."""
    lay = layout()
    op = {name: number for number, name in lay.names("iow_op", "IOW_OP_").items()}
    kind = {name: number for number, name in lay.names("iow_meta_kind", "IOW_META_").items()}
    rng = np.random.default_rng(seed)
    t0 = 1_000_000_000
    rows = []
    for t in range(threads):
        tgid, tid = 50 + t % 2, 100 + t
        # the last thread starts 2 ms late, its process's other threads off the CPU before it
        # (one preempted: plan.start_held's time, below)
        now = t0 + int(rng.integers(0, 5_000)) + (2_000_000 if t == threads - 1 else 0)
        own, shared = 1000 + t, [10, 11, 12]
        opened = {}
        for ino, fd in [(own, 3)] + [(s, 4 + k) for k, s in enumerate(shared)]:
            flags = O_RDWR | O_CREAT | (O_TRUNC if ino == own and t % 3 == 0 else 0)
            rows.append(dict(op="openat", start_ns=now, latency_ns=2_000, offset=-1, ret=fd, fd=fd,
                             flags=flags, tgid=tgid, tid=tid, ino=ino))
            opened[ino] = fd
            now += 3_000
        inflight = []
        for k in range(calls):
            ino = own if rng.random() < 0.4 else int(rng.choice(shared))
            fd = opened[ino]
            lat = int(rng.integers(1_000, 40_000))
            row = dict(start_ns=now - now % 50_000 if tied else now, latency_ns=lat, tgid=tgid, tid=tid, ino=ino, fd=fd,
                       offset=int(rng.integers(0, 64)) * 4096 + int(rng.integers(0, 2)) * 100)
            pick = rng.random()
            size = int(rng.choice([512, 4096, 8192, 300_000]))
            if pick < 0.3:
                row.update(op="pread64", requested=size, ret=size if rng.random() < 0.9 else 100)
            elif pick < 0.55:
                row.update(op="pwrite64", requested=size, ret=size)
                if appending and ino != own:
                    row.update(offset=(t * calls + k) * 4096)
            elif pick < 0.6:
                row.update(op="read", requested=4096, ret=4096, offset=-1)
            elif pick < 0.65:
                row.update(op="write", requested=4096, ret=4096, offset=-1)
            elif pick < 0.7:
                row.update(op="fsync", offset=-1)
            elif pick < 0.72:
                row.update(op="fdatasync", offset=-1)
            elif pick < 0.74:
                row.update(op="lseek", offset=0, ret=0)
            elif pick < 0.76:
                row.update(op="pread64", requested=4096, ret=-5)   # failed: not replayed
            elif pick < 0.78:
                row.update(op="ftruncate", offset=1 << 20)
            elif pick < 0.8:
                row.update(op="fcntl", flags=0, ret=20 + t, offset=-1)
            elif pick < 0.9 and not requests:
                row.update(op="pread64", requested=4096, ret=4096)
            elif pick < 0.9 and t % 2 == 0:
                # libaio on ring 1: submitted now, completed later; the thread goes on at once
                row.update(op="aio_write" if rng.random() < 0.5 else "aio_read", requested=4096, ret=4096,
                           ring=1, latency_ns=int(rng.integers(5_000, 80_000)))
                inflight.append(now + row["latency_ns"])
                rows.append(row)
                now += int(rng.integers(200, 3_000))
                continue
            elif pick < 0.9:
                row.update(op="uring_read", requested=4096, ret=4096, ring=2,
                           latency_ns=int(rng.integers(5_000, 60_000)))
                rows.append(row)
                now += int(rng.integers(200, 3_000))
                continue
            else:
                row.update(op="pread64", requested=4096, ret=4096)
            rows.append(row)
            now += lat + int(rng.integers(0, 6_000))
        rows.append(dict(op="close", start_ns=now, latency_ns=1_000, offset=-1, tgid=tgid, tid=tid, ino=own, fd=3))
    events = np.zeros(len(rows), lay.event)
    for record, row in zip(events, rows):
        record["dev"] = DEV
        for field, value in row.items():
            record[field] = op[value] if field == "op" else value
    # the ring's order: by end, a few neighbours swapped
    events = events[np.argsort(events["start_ns"] + events["latency_ns"], kind="stable")]
    swap = rng.integers(0, len(events) - 1, len(events) // 20)
    for a in swap:
        events[[a, a + 1]] = events[[a + 1, a]]
    facts = np.zeros(threads + 3, lay.meta)
    for k in range(threads + 3):
        ino = 1000 + k if k < threads else 10 + k - threads
        name = f"/w/{'own' if k < threads else 'shared'}{k}".encode()
        facts[k]["kind"], facts[k]["dev"], facts[k]["ino"], facts[k]["tgid"] = kind["file"], DEV, ino, 50
        facts[k]["fd"], facts[k]["dirfd"], facts[k]["ts_ns"] = 3, AT_FDCWD, t0 - 10
        facts[k]["path"][:len(name)] = np.frombuffer(name, np.uint8)
    offcpu = np.zeros(40, layout().structs["iow_offcpu"])
    off = np.sort(rng.integers(t0, int(events["start_ns"].max()), 40))
    offcpu["off_ns"], offcpu["on_ns"] = off, off + rng.integers(1_000, 20_000, 40)
    offcpu["tid"] = 100 + rng.integers(0, threads, 40)
    offcpu["tgid"] = 50 + (offcpu["tid"] - 100) % 2   # each thread's process, as the events have it
    late = threads - 1
    held = np.zeros(len(range(late % 2, late, 2)), layout().structs["iow_offcpu"])
    for k, t in enumerate(range(late % 2, late, 2)):   # its process-mates: one preempted, the others asleep
        held[k]["tid"], held[k]["tgid"], held[k]["state"] = 100 + t, 50 + t % 2, 0 if k == 0 else 1
        held[k]["off_ns"], held[k]["on_ns"] = t0 + 500_000 + k * 1_000, t0 + 1_500_000 - k * 1_000
    offcpu["state"] = rng.integers(0, 2, 40)
    offcpu = np.concatenate([offcpu, held])
    block = np.zeros(30, layout().structs["iow_block"])
    block["start_ns"] = block["issue_ns"] = np.sort(rng.integers(t0, int(events["start_ns"].max()), 30))
    block["complete_ns"] = block["issue_ns"] + 50_000
    block["bytes"], block["tid"], block["op"] = 4096 * 64, 100 + rng.integers(0, threads, 30), 0
    start = {"command": ["bench"], "mode": "run", "cwd": "/w", "pid": 50,
             "clock_start": {"monotonic_ns": t0 - 1000, "realtime_ns": 0, "offset_ns": 0}}
    with TraceWriter(str(path), start) as writer:
        writer.write_facts(facts)
        for part in np.array_split(events, 40):
            writer.write_events(part)
        writer.write_device(block, offcpu)
        writer.write_counters({"events": len(events), "lost_events": 0, "lost_meta": 0})
        writer.close({"exit_code": 0, "clock_end": {"monotonic_ns": int(events["start_ns"].max()) + 10**6}})


@pytest.mark.parametrize(("seed", "rows", "appending", "tied"), [
    (1, 64, False, False), (2, 64, False, False), (3, 700, False, False), (1, 1 << 18, False, False),
    (4, 64, True, False), (5, 64, False, True)])
def test_the_streamed_plan_is_the_in_memory_plan_byte_for_byte(tmp_path, seed, rows, appending, tied):
    # GIVEN a messy trace of 6 threads sharing 3 files, read in blocks and windows of `rows`
    # (and one whose threads write the shared files at their own ascending offsets: writes that
    # grow the files, which order with the reads, not with the other writes; and one whose calls
    # start at the same nanosecond across threads and blocks, which the spill orders without the row)
    trace = tmp_path / "t.iwt"
    write_messy_trace(trace, seed, appending=appending, tied=tied)
    # WHEN planned both ways
    whole = plan.build(str(trace))
    whole.save_native(str(tmp_path / "a.bin"))
    info = stream_plan.build_native(str(trace), str(tmp_path / "b.bin"), block_rows=rows, window_rows=rows)
    # THEN the native plans are the same bytes (calls, think times, depths, waits, files)
    assert len(whole.waits) > 50 and int(whole.calls["depth"].max()) > 1 and whole.skipped
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    assert (info.count, info.wait_count, info.files, info.skipped) == (len(whole.calls), len(whole.waits),
                                                                       whole.files, whole.skipped)
    assert info.source == whole.source and info.has_async


def test_one_thread_s_plan_is_the_in_memory_plan_byte_for_byte(tmp_path):
    # GIVEN one thread's trace (every block one thread: the build's ways without a sort), in blocks of 64
    trace = tmp_path / "t.iwt"
    write_messy_trace(trace, 6, threads=1, requests=False)
    # WHEN planned both ways
    plan.build(str(trace)).save_native(str(tmp_path / "a.bin"))
    stream_plan.build_native(str(trace), str(tmp_path / "b.bin"), block_rows=64, window_rows=64)
    # THEN the same bytes
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()


@pytest.mark.parametrize("values", [np.full(1000, 7, np.uint64), np.array([5], np.int64),
                                    np.array([3, 1, 3, 2, 1], np.int64), np.array([2, 9, 2], np.uint16)])
def test_the_build_s_sortless_uniques_are_np_unique(values):
    # GIVEN one value repeated, one value, several (op codes as the trace's u16 among them)
    # WHEN found by the build's helpers
    got = [stream_plan._unique_index(values), stream_plan._unique_inverse(values)]
    want = [np.unique(values, return_index=True), np.unique(values, return_inverse=True)]
    if values.dtype == np.uint16:
        got.append(stream_plan._codes(values))
        want.append(np.unique(values, return_inverse=True))
    # THEN the arrays np.unique gives, of its dtypes
    for (a, b), (c, d) in zip(got, want):
        assert a.dtype == c.dtype and np.array_equal(a, c) and np.array_equal(b, d)


def test_blocks_looked_up_by_search_give_the_plan_a_table_gives(tmp_path, monkeypatch):
    # GIVEN the messy trace, its blocks looked up by binary search (the way for blocks spread
    # wider than a lookup table is made for) instead of by table
    trace = tmp_path / "t.iwt"
    write_messy_trace(trace, 5)
    plan.build(str(trace)).save_native(str(tmp_path / "a.bin"))
    monkeypatch.setattr(stream_plan, "RANK_TABLE_MIN", 0)
    monkeypatch.setattr(stream_plan, "RANK_TABLE_SPREAD", 0)
    stream_plan.build_native(str(trace), str(tmp_path / "b.bin"), block_rows=300, window_rows=300)
    # THEN the plan is the in-memory one's, byte for byte
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()


def test_the_streamed_plan_refuses_what_the_in_memory_one_refuses(tmp_path):
    from tests.unit.test_replay import write_trace
    trace = tmp_path / "t.iwt"
    write_trace(trace, [(b"/w/a", AT_FDCWD)], fd_base=1 << 21)
    with pytest.raises(UsageError) as whole:
        plan.build(str(trace))
    with pytest.raises(UsageError) as streamed:
        stream_plan.build_native(str(trace), str(tmp_path / "b.bin"))
    # (and built in a process of its own, as `iowitness replay` builds it: the same error, raised here)
    with pytest.raises(UsageError) as apart:
        stream_plan.build_apart(str(trace), str(tmp_path / "c.bin"))
    # (and followed, as `iowitness replay --timing fast` builds it: raised before anything is announced)
    with pytest.raises(UsageError) as followed:
        stream_plan.follow_apart(str(trace), str(tmp_path / "d.bin"))
    assert str(streamed.value) == str(whole.value) == str(apart.value) == str(followed.value)


def test_a_plan_built_apart_is_the_plan_built_here(tmp_path):
    trace = tmp_path / "t.iwt"
    write_messy_trace(trace, 4, threads=3, calls=200)
    here = stream_plan.build_native(str(trace), str(tmp_path / "a.bin"))
    apart = stream_plan.build_apart(str(trace), str(tmp_path / "b.bin"))
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    assert (apart.count, apart.wait_count, apart.files, apart.skipped, apart.source, len(apart.threads),
            apart.has_async, apart.root_tgid) == (here.count, here.wait_count, here.files, here.skipped,
                                                 here.source, len(here.threads), here.has_async, here.root_tgid)


def test_a_build_apart_that_crashes_says_its_last_line_and_a_stopped_one_is_gone(tmp_path, monkeypatch):
    # GIVEN a trace, and a build that fails with an error of no one-line kind (the process of its
    # own is forked from this one, so the failure patched here is the child's too)
    from iowitness.errors import IowitnessError
    trace = tmp_path / "t.iwt"
    write_messy_trace(trace, 4, threads=2, calls=50)

    def crash(*args, **kwargs):
        raise RuntimeError("the build's own fault")
    with monkeypatch.context() as patched:
        patched.setattr(stream_plan, "build_native", crash)
        # WHEN it is built apart, whole or followed
        for build in (lambda: stream_plan.build_apart(str(trace), str(tmp_path / "c.bin")),
                      lambda: stream_plan.follow_apart(str(trace), str(tmp_path / "d.bin"))):
            with pytest.raises(IowitnessError) as failed:
                build()
            # THEN the error is one line: the child's last line of stderr, named for the trace
            assert str(failed.value) == (f"planning the replay of {trace} failed: "
                                         "RuntimeError: the build's own fault")
    # AND a build stopped before its end leaves no process behind (killed and reaped)
    build = stream_plan.start_apart(str(trace), str(tmp_path / "e.bin"), follow=True)
    build.stop()
    with pytest.raises(ChildProcessError):
        os.waitpid(build.pid, os.WNOHANG)
    build.stop()   # once is enough: a second stop does nothing


def write_target_trace(path, dev: int) -> None:
    """pread_loop as `iowitness run --file FILE` records it: FILE (inode 500) registered by inode
    before the recording (meta "targets"), so the probe records no open of it; and inode 501,
    read through an fd the trace never saw opened and named nowhere."""
    lay = layout()
    op = {name: number for number, name in lay.names("iow_op", "IOW_OP_").items()}
    rows = [dict(op="openat", ino=500, fd=3, ret=3, offset=-1, flags=0)]
    rows += [dict(op="pread64", ino=500, fd=3, offset=0, requested=1, ret=1) for _ in range(5)]
    rows += [dict(op="pread64", ino=501, fd=9, offset=4096, requested=4096, ret=4096) for _ in range(3)]
    rows += [dict(op="close", ino=500, fd=3, offset=-1, ret=0)]
    events = np.zeros(len(rows), lay.event)
    for k, (record, row) in enumerate(zip(events, rows)):
        record["dev"], record["tgid"], record["tid"] = dev, 50, 50
        record["start_ns"], record["latency_ns"] = 1_000_000_000 + k * 10_000, 1_000
        for field, value in row.items():
            record[field] = op[value] if field == "op" else value
    start = {"command": ["pread_loop", "/tmp/scale/data/file", "1"], "mode": "run", "cwd": "/work",
             "targets": [{"dev": dev, "ino": 500, "path": "/tmp/scale/data/file"}],
             "clock_start": {"monotonic_ns": 999_000_000, "realtime_ns": 0, "offset_ns": 0}}
    with TraceWriter(str(path), start) as writer:
        writer.write_events(events)
        writer.write_facts(np.zeros(0, lay.meta))
        writer.write_counters({"events": len(rows), "lost_events": 0, "lost_meta": 0})
        writer.close({"exit_code": 0, "clock_end": {"monotonic_ns": 1_000_000_000 + len(rows) * 10_000}})


@pytest.mark.parametrize("dev", [(254 << 20) | 0, (8 << 20) | 1, 35])
def test_a_target_file_is_named_and_a_file_without_a_name_says_why(tmp_path, dev):
    # GIVEN pread_loop's trace as `run --file` records it on a device of major 254 (a virtio
    # disk), 8 (sd) or 0 (tmpfs): its file named only by the trace's targets; and a file read
    # through an fd opened before the recording, named nowhere
    trace = tmp_path / "t.iwt"
    write_target_trace(trace, dev)
    # WHEN planned both ways
    whole = plan.build(str(trace))
    whole.save_native(str(tmp_path / "a.bin"))
    info = stream_plan.build_native(str(trace), str(tmp_path / "b.bin"))
    # THEN the target is replayed under its own name, the other under one made of its device and
    # inode (the device whole: major and minor), and both plans are the same bytes
    major, minor = dev >> 20, dev & ((1 << 20) - 1)
    unnamed = f"/unnamed/dev{major}:{minor}-ino501"
    assert sorted(whole.source["original_paths"]) == sorted(["/tmp/scale/data/file", unnamed])
    assert info.source == whole.source and info.files == whole.files
    raw = (tmp_path / "b.bin").read_bytes()
    assert (tmp_path / "a.bin").read_bytes() == raw
    # AND the player's closing lines (the plan's notes) say why the other has no name, and where it went
    rel = next(f["rel"] for f, p in zip(whole.files, whole.source["original_paths"]) if p == unnamed)
    assert (f"iowitness replay:   no name for dev{major}:{minor}-ino501 in the trace (no open of it was recorded: "
            f"opened before the recording began, or the record lost): replayed as {rel} under the replay's "
            f"directory\n").encode() in raw
    assert raw.count(b"no name for") == 1   # the target has its name


def test_the_native_player_follows_a_plan_being_written(tmp_path):
    # GIVEN the native player and a messy trace of 4 threads in 2 processes sharing 3 files (waits
    # across threads; no libaio or io_uring requests, whose plan is not followed), its plan built
    # in windows of 64 calls
    from iowitness.commands.replay import NATIVE_PLAYER
    from iowitness.replay import paths
    if not os.access(NATIVE_PLAYER, os.X_OK):
        pytest.skip(f"the native player was not built ({NATIVE_PLAYER}): the install builds it with clang")
    trace = tmp_path / "t.iwt"
    write_messy_trace(trace, 6, threads=4, calls=120, requests=False)
    whole = plan.build(str(trace))
    whole.save_native(str(tmp_path / "a.bin"))
    out, into = str(tmp_path / "b.bin"), str(tmp_path / "into")
    started = []

    def announce(info):
        # WHEN the player is started on the plan as soon as its files are known, the calls still unwritten
        assert os.path.getsize(out) == 44 + len(info.threads) * 24 + info.count * 63
        assert not np.frombuffer(open(out + ".ready", "rb").read(), np.int64)[:len(info.threads)].any()
        paths.prepare(into, [f["rel"] for f in info.files], [f["size"] for f in info.files],
                      [f["precreate"] for f in info.files], False, [False] * len(info.files))
        started.append(subprocess.Popen([NATIVE_PLAYER, out, into, "0", "--follow"], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True))
    info = stream_plan.build_native(str(trace), out, block_rows=64, window_rows=64, announce=announce)
    assert started, "the plan was not followed"
    said, err = started[0].communicate(timeout=120)
    # THEN it issues every call of the plan, syscall by syscall, and the finished plan is the
    # in-memory one's, byte for byte
    assert started[0].returncode in (0, 1), err
    issued = dict(re.findall(r"iowitness replay:   (\w+): ([\d,]+) issued", said))
    names = [OP_NAMES[int(o)] for o in whole.calls["op"]]
    expected = {name: f"{names.count(name):,}" for name in set(names)}
    assert issued == expected and info.wait_count == len(whole.waits) > 20
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    ready = np.frombuffer(open(out + ".ready", "rb").read(), np.int64)
    assert list(ready[:4]) == list(whole.threads["count"]) and ready[4] == stream_plan.FOLLOW_DONE


def test_a_player_following_a_build_that_dies_stops_with_one_line(tmp_path):
    # GIVEN the native player following a build that is killed once it has announced the plan
    from iowitness.commands.replay import NATIVE_PLAYER
    from iowitness.replay import paths
    if not os.access(NATIVE_PLAYER, os.X_OK):
        pytest.skip(f"the native player was not built ({NATIVE_PLAYER}): the install builds it with clang")
    trace = tmp_path / "t.iwt"
    write_messy_trace(trace, 7, threads=2, calls=60, requests=False)
    out, into = str(tmp_path / "b.bin"), str(tmp_path / "into")
    child = os.fork()
    if child == 0:   # the build, in a process that dies without a word after the announce
        def announce(info):
            paths.prepare(into, [f["rel"] for f in info.files], [f["size"] for f in info.files],
                          [f["precreate"] for f in info.files], False, [False] * len(info.files))
            with open(out + ".started", "w"):
                pass
            os._exit(9)
        try:
            stream_plan.build_native(str(trace), out, block_rows=64, window_rows=64, announce=announce)
        finally:
            os._exit(8)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 9 and os.path.exists(out + ".started")
    # WHEN the player follows what it left
    player = subprocess.run([NATIVE_PLAYER, out, into, "0", "--follow"], capture_output=True, text=True, timeout=60)
    # THEN it stops, in one line (one per replay process: the trace's 2), instead of waiting for
    # calls that will never be written
    assert player.returncode == 2
    assert set(player.stderr.strip().splitlines()) == {
        "iowitness replay: the plan's build ended before the plan was written"}
