"""iowitness replay without the kernel: where a trace's files go (never outside DIR), what a
replay refuses, the plan's calls and waits, and one-line errors for traces it cannot use.
The replay itself, recorded by the real probe, is tests/kernel/test_replay.py."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.commands.replay import NATIVE_PLAYER
from iowitness.errors import UsageError
from iowitness.probes.layout import layout
from iowitness.replay import paths, plan
from tests.conftest import require_tool
from tests.support.cli import iowitness

AT_FDCWD = -100
O_WRONLY, O_RDWR, O_CREAT, O_TRUNC = 0o1, 0o2, 0o100, 0o1000


def write_trace(path, files: list[tuple[bytes, int]], cwd="/work", threads=1, shared=False, fd_base=3,
                failed=False, offcpu=(), lost_events=0) -> None:
    """A trace of `threads` threads of one process (tgid 50), thread k writing 2 x 4 KiB to file
    k (every thread to file 0 when `shared`, one after the other), opened O_CREAT|O_TRUNC under
    the recorded path files[k] = (path bytes, dirfd), then closing it. `offcpu`: (tid, off_ns,
    on_ns, state) stretches off the CPU; `lost_events`: calls the recording says it lost."""
    lay = layout()
    op = {name: number for number, name in lay.names("iow_op", "IOW_OP_").items()}
    kind = {name: number for number, name in lay.names("iow_meta_kind", "IOW_META_").items()}
    rows, facts = [], []
    now = 1_000_000_000
    for t in range(threads):
        f = 0 if shared else t
        fd = fd_base + t
        for row in (dict(op="openat", offset=-1, ret=fd, flags=O_RDWR | O_CREAT | (0 if shared else O_TRUNC)),
                    dict(op="pwrite64", offset=t * 8192, requested=4096, ret=4096),
                    dict(op="pwrite64", offset=t * 8192 + 4096, requested=4096, ret=4096),
                    dict(op="close", offset=-1)):
            if failed:
                row = {**row, "ret": -9}
            rows.append(dict(start_ns=now, latency_ns=10_000, tid=50 + t, fd=fd, ino=100 + f, **row))
            now += 20_000
        if not shared or t == 0:
            facts.append((now - 80_000 + 5_000, 100 + f, fd, files[f]))
    events = np.zeros(len(rows), lay.event)
    for record, row in zip(events, rows):
        record["dev"], record["tgid"] = (8 << 20) | 1, 50
        for field, value in row.items():
            record[field] = op[value] if field == "op" else value
    meta = np.zeros(len(facts), lay.meta)
    for record, (ts, ino, fd, (name, dirfd)) in zip(meta, facts):
        record["kind"], record["dev"], record["ino"], record["tgid"] = kind["file"], (8 << 20) | 1, ino, 50
        record["fd"], record["dirfd"], record["ts_ns"] = fd, dirfd, ts
        record["path"][:len(name)] = np.frombuffer(name, np.uint8)
    start = {"command": ["bench"], "mode": "run", "cwd": cwd,
             "clock_start": {"monotonic_ns": 999_000_000, "realtime_ns": 0, "offset_ns": 0}}
    with TraceWriter(str(path), start) as writer:
        writer.write_events(events)
        writer.write_facts(meta)
        if offcpu:
            off = np.zeros(len(offcpu), lay.structs["iow_offcpu"])
            for record, (tid, a, b, state) in zip(off, offcpu):
                record["tgid"], record["tid"], record["off_ns"], record["on_ns"], record["state"] = 50, tid, a, b, state
            writer.write_device(np.zeros(0, lay.structs["iow_block"]), off)
        writer.write_counters({"events": len(rows), "lost_events": lost_events, "lost_meta": 0})
        writer.close({"exit_code": 0, "clock_end": {"monotonic_ns": now}})


def tree(root) -> set[str]:
    return {os.path.relpath(os.path.join(d, n), root) for d, dirs, names in os.walk(root) for n in dirs + names}


HOSTILE = [
    (b"/etc/passwd", AT_FDCWD),
    (b"../../../../root/.ssh/authorized_keys", AT_FDCWD),
    (b"/data/../../../../../etc/shadow", AT_FDCWD),
    (b"rel/\x1b]0;pwned\x07 name\n", AT_FDCWD),
    (b"x/./y/../z", 7),
]


def test_hostile_paths_are_mapped_inside_dir_and_nothing_is_written_elsewhere(tmp_path):
    # GIVEN a trace whose files are named with absolute paths, `..` climbing above /, control
    # characters, and a path relative to a directory fd
    trace = tmp_path / "t.iwt"
    write_trace(trace, HOSTILE, threads=len(HOSTILE))
    before = tree(tmp_path)
    into = tmp_path / "into"
    # WHEN its plan is made and its files prepared under DIR
    p = plan.build(str(trace))
    made = paths.prepare(str(into), [f["rel"] for f in p.files], [f["size"] for f in p.files],
                         [f["precreate"] for f in p.files], force=False)
    # THEN every place is a plain relative path under DIR, and nothing outside DIR was created
    rels = sorted(f["rel"] for f in p.files)
    assert rels == sorted(["etc/passwd", "root/.ssh/authorized_keys", "etc/shadow",
                           "work/rel/\x1b]0;pwned\x07 name\n", "at-dirfd-7/x/z"])
    assert all(not r.startswith("/") and ".." not in r.split("/") for r in rels)
    assert tree(tmp_path) - before - {"into"} == {os.path.join("into", x) for x in tree(into)}
    assert all(d.startswith(str(into)) for d in made)
    # AND the files the trace created itself (O_CREAT|O_TRUNC) are left to the replay to make
    assert not any(os.path.isfile(into / r) for r in rels)


def test_a_symlink_inside_dir_is_refused_not_followed(tmp_path):
    # GIVEN DIR holding a symlink where the replay needs a directory, pointing outside DIR
    outside = tmp_path / "outside"
    outside.mkdir()
    into = tmp_path / "into"
    into.mkdir()
    (into / "data").symlink_to(outside)
    # WHEN a file is prepared under it THEN it is refused, and nothing appears outside
    with pytest.raises(UsageError, match="symlink"):
        paths.prepare(str(into), ["data/f"], [4096], [True], force=True)
    assert list(outside.iterdir()) == []


def test_a_symlink_in_the_place_of_a_file_is_refused_even_with_force(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    into = tmp_path / "into"
    into.mkdir()
    (into / "f").symlink_to(victim)
    with pytest.raises(UsageError, match="symlink"):
        paths.prepare(str(into), ["f"], [4096], [True], force=True)
    assert victim.read_text() == "keep"


def test_an_existing_file_is_kept_without_force_and_replaced_with_it(tmp_path):
    into = tmp_path / "into"
    into.mkdir()
    (into / "f").write_text("mine")
    # WHEN prepared without --force THEN refused, the file unchanged
    with pytest.raises(UsageError, match="--force"):
        paths.prepare(str(into), ["f"], [5000], [True], force=False)
    assert (into / "f").read_text() == "mine"
    # WHEN prepared with --force THEN it is made anew, 5000 bytes of the pattern
    paths.prepare(str(into), ["f"], [5000], [True], force=True)
    assert (into / "f").read_bytes() == (paths.PATTERN * 100)[:5000]


def test_a_name_used_as_file_and_directory_is_refused():
    with pytest.raises(UsageError, match="both as a file and as a directory"):
        paths.relative_layout(["/d/a", "/d/a/b"])


def test_a_name_longer_than_the_file_system_takes_is_refused():
    with pytest.raises(UsageError, match="longer than 255"):
        paths.relative_layout(["/d/" + "n" * 300])


def test_threads_on_a_shared_file_wait_for_the_calls_that_completed_before_theirs(tmp_path):
    # GIVEN three threads writing one file one after the other (each call after the previous)
    trace = tmp_path / "t.iwt"
    write_trace(trace, [(b"/w/shared", AT_FDCWD)], threads=3, shared=True)
    # WHEN planned
    p = plan.build(str(trace))
    # THEN one file, three threads of four calls; thread k's first call waits for all four
    # calls of each thread before it, and no later call waits again (nothing new to wait for)
    assert len(p.files) == 1 and list(p.threads["count"]) == [4, 4, 4]
    assert [(int(w["call"]), int(w["thread"]), int(w["count"])) for w in p.waits] == [(4, 0, 4), (8, 0, 4),
                                                                                        (8, 1, 4)]
    # AND think time: each thread's first call after the trace's first, then 10 us gaps
    assert list(p.calls["gap_ns"][:4]) == [0, 10_000, 10_000, 10_000]
    assert int(p.calls["gap_ns"][4]) == 80_000
    assert p.bytes_by_direction() == {"read": 0, "write": 3 * 8192}


def test_fds_beyond_the_players_table_are_refused(tmp_path):
    # GIVEN a trace whose calls use fd 5,000,000 (a hostile trace, or one from a machine with a huge fd limit)
    trace = tmp_path / "t.iwt"
    write_trace(trace, [(b"/w/a", AT_FDCWD)], fd_base=5_000_000)
    # THEN the plan refuses it, before anything is made
    with pytest.raises(UsageError, match="fds below 0 or of 1,048,576 and above"):
        plan.build(str(trace))


def test_a_trace_of_only_failed_calls_has_nothing_to_replay(tmp_path):
    trace = tmp_path / "t.iwt"
    write_trace(trace, [(b"/w/a", AT_FDCWD)], failed=True)
    with pytest.raises(UsageError, match=r"no call a replay can issue \(close \(failed\): 1, openat \(failed\): 1, "
                                         r"pwrite64 \(failed\): 2\)"):
        plan.build(str(trace))


def test_a_plan_survives_its_file(tmp_path):
    trace = tmp_path / "t.iwt"
    write_trace(trace, [(b"/w/a", AT_FDCWD), (b"/w/b", AT_FDCWD)], threads=2)
    p = plan.build(str(trace))
    p.save(str(tmp_path / "plan.npz"))
    again = plan.Plan.load(str(tmp_path / "plan.npz"))
    assert (again.calls == p.calls).all() and again.files == p.files and again.source == p.source


@pytest.mark.parametrize("content, code, says", [
    (None, 4, "does not exist"),
    (b"not a trace at all\n", 6, "not an iowitness trace"),
    (b"IOWTRACE\x03\x00\x00\x00\x00\x00\x00\x00\x01\x00", 6, "START"),
])
def test_a_missing_or_corrupt_trace_is_one_line_and_nothing_is_created(tmp_path, content, code, says):
    # GIVEN a trace that is missing, not a trace, or cut inside its START chunk
    trace = tmp_path / "t.iwt"
    if content is not None:
        trace.write_bytes(content)
    # WHEN replayed THEN one line on stderr, the trace-error exit code, and DIR not made
    proc = iowitness("replay", str(trace), "--into", str(tmp_path / "into"), check=False)
    assert proc.returncode == code, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and says in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "into").exists()


def test_export_fio_iolog_of_a_corrupt_trace_is_one_line(tmp_path):
    trace = tmp_path / "t.iwt"
    trace.write_bytes(b"garbage")
    proc = iowitness("export", str(trace), "--fio-iolog", str(tmp_path / "fio"), check=False)
    assert proc.returncode == 6 and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "fio").exists()


def test_bad_timing_is_a_usage_error():
    from iowitness.commands.replay import speed_of

    assert speed_of("as-recorded") == 1.0 and speed_of("fast") == 0.0 and speed_of("x2") == 2.0
    for bad in ("x0", "x-1", "xnan", "slow", "x"):
        with pytest.raises(UsageError, match="--timing"):
            speed_of(bad)


def test_fio_iologs_say_what_the_trace_moved(tmp_path):
    # GIVEN two threads each writing 8 KiB to its own file
    from iowitness.replay import fio_iolog

    trace = tmp_path / "t.iwt"
    write_trace(trace, [(b"/w/a", AT_FDCWD), (b"/w/b", AT_FDCWD)], threads=2)
    # WHEN exported as fio iologs
    done = fio_iolog.write(plan.build(str(trace)), str(tmp_path / "fio"))
    # THEN one version 3 log per thread, each opening, writing and closing its file, times in us
    assert done["jobs"] == 2 and done["bytes"] == {"read": 0, "write": 16384}
    log = (tmp_path / "fio" / "thread-1-50-50.iolog").read_text().splitlines()
    files = tmp_path / "fio" / "files"
    assert log == ["fio version 3 iolog", f"0 {files}/a add", f"0 {files}/a open",
                   f"20 {files}/a write 0 4096", f"40 {files}/a write 4096 4096", f"60 {files}/a close"]
    job = (tmp_path / "fio" / "replay.fio").read_text()
    assert job.count("read_iolog=") == 2


def _planned_for(player: str, trace, tmp_path) -> tuple:
    """The trace's plan, its files prepared under tmp_path/into, and the argv (less DIR and
    the speed) that runs it with the native or the Python player."""
    p = plan.build(str(trace))
    into = tmp_path / "into"
    paths.prepare(str(into), [f["rel"] for f in p.files], [f["size"] for f in p.files],
                  [f["precreate"] for f in p.files], force=False)
    if player == "native":
        if not os.access(NATIVE_PLAYER, os.X_OK):
            pytest.skip("the native player was not built (clang missing at install)")
        p.save_native(str(tmp_path / "plan.bin"))
        return into, [NATIVE_PLAYER, str(tmp_path / "plan.bin")]
    p.save(str(tmp_path / "plan.npz"))
    return into, [sys.executable, "-m", "iowitness.replay.player", str(tmp_path / "plan.npz")]


@pytest.mark.parametrize("player", ["native", "python"])
def test_the_players_make_the_plans_calls_without_the_probe(tmp_path, player):
    # GIVEN a plan of 3 threads sharing one file (each waits for the one before it)
    trace = tmp_path / "t.iwt"
    write_trace(trace, [(b"/w/shared", AT_FDCWD)], threads=3, shared=True)
    into, argv = _planned_for(player, trace, tmp_path)
    # WHEN a player runs it as recorded
    proc = subprocess.run([*argv, str(into), "1"], capture_output=True, text=True, timeout=60)
    # THEN every call was made, none failed, and the file holds the pattern written at each offset
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("iowitness replay: 12 calls in 3 thread(s)")
    assert "pwrite64: 6 issued, 0 failed, 0 other bytes" in proc.stdout
    data = (into / "shared").read_bytes()
    assert len(data) == 3 * 8192 and data[:4096] == (paths.PATTERN * 100)[:4096]


@pytest.mark.parametrize("player", ["native", "python"])
def test_the_players_open_each_file_by_its_absolute_path_in_dir(tmp_path, player):
    # GIVEN a plan of 2 threads, each opening its own file, and strace (an independent witness)
    strace = require_tool("strace")
    trace = tmp_path / "t.iwt"
    write_trace(trace, [(b"/w/a/one", AT_FDCWD), (b"/w/b/two", AT_FDCWD)], threads=2)
    into, argv = _planned_for(player, trace, tmp_path)
    # WHEN a player runs it under strace
    log = tmp_path / "strace.log"
    proc = subprocess.run([strace, "-f", "-qq", "-e", "trace=openat2", "-o", str(log), *argv, str(into), "0"],
                          capture_output=True, text=True, timeout=60)
    # THEN each of the trace's opens is an openat2 of the file's absolute path under DIR, with
    # no symlink allowed on the way (so the replay's trace names the file from the call itself,
    # whether or not the replay process still lives when the collector reads the event)
    assert proc.returncode == 0, proc.stderr
    real = os.path.realpath(into)
    opens = [line for line in log.read_text().splitlines() if "openat2(" in line and "RESOLVE_NO_SYMLINKS" in line]
    assert sorted(line.split('"')[1] for line in opens) == [f"{real}/a/one", f"{real}/b/two"]


def write_async_trace(path, requests: list[tuple[int, int]], then_fsync_at: int) -> None:
    """A trace of one thread (tgid 50) opening /w/a, submitting libaio writes of 4 KiB at
    (submitted us, completed us), then an fsync and a close."""
    lay = layout()
    op = {name: number for number, name in lay.names("iow_op", "IOW_OP_").items()}
    kind = {name: number for number, name in lay.names("iow_meta_kind", "IOW_META_").items()}
    t0 = 1_000_000_000
    rows = [dict(op="openat", start_ns=t0, latency_ns=1_000, offset=-1, ret=3, flags=O_RDWR | O_CREAT | O_TRUNC)]
    for k, (sub, done) in enumerate(requests):
        rows.append(dict(op="aio_write", start_ns=t0 + 10_000 + sub * 1000, latency_ns=(done - sub) * 1000,
                         offset=k * 4096, requested=4096, ret=4096, ring=1))
    rows.append(dict(op="fsync", start_ns=t0 + 10_000 + then_fsync_at * 1000, latency_ns=1_000, offset=-1))
    rows.append(dict(op="close", start_ns=t0 + 20_000 + then_fsync_at * 1000, latency_ns=1_000, offset=-1))
    events = np.zeros(len(rows), lay.event)
    for record, row in zip(events, rows):
        record["dev"], record["tgid"], record["tid"], record["fd"], record["ino"] = (8 << 20) | 1, 50, 50, 3, 100
        for field, value in row.items():
            record[field] = op[value] if field == "op" else value
    meta = np.zeros(1, lay.meta)
    meta["kind"], meta["dev"], meta["ino"], meta["tgid"] = kind["file"], (8 << 20) | 1, 100, 50
    meta["fd"], meta["dirfd"], meta["ts_ns"] = 3, AT_FDCWD, t0 + 500
    meta["path"][0, :4] = np.frombuffer(b"/w/a", np.uint8)
    start = {"command": ["bench"], "mode": "run", "cwd": "/w",
             "clock_start": {"monotonic_ns": t0 - 1000, "realtime_ns": 0, "offset_ns": 0}}
    with TraceWriter(str(path), start) as writer:
        writer.write_events(events)
        writer.write_facts(meta)
        writer.write_counters({"events": len(rows), "lost_events": 0, "lost_meta": 0})
        writer.close({"exit_code": 0, "clock_end": {"monotonic_ns": t0 + 10**6}})


def test_async_requests_are_planned_at_the_depth_the_original_had(tmp_path):
    # GIVEN libaio writes submitted at 0, 1, 2, 3 us, completed at 10, 11, 20, 21 us, a fifth
    # submitted at 12 us (two done by then), and an fsync at 30 us (all done)
    trace = tmp_path / "t.iwt"
    write_async_trace(trace, [(0, 10), (1, 11), (2, 20), (3, 21), (12, 25)], then_fsync_at=30)
    # WHEN planned
    p = plan.build(str(trace))
    # THEN each request waits for its ring to hold what was in flight at its submission, the
    # fsync for none in flight, and the think time after a request runs from its submission
    # or from the last completion the thread got back, when later
    names = [plan.OPS[o] for o in p.calls["op"]]
    assert names == ["open"] + ["aio_write"] * 5 + ["fsync", "close"]
    assert list(p.calls["depth"]) == [0, 0, 1, 2, 3, 2, 0, 0]
    assert list(p.calls["ring"][1:6]) == [1] * 5
    # (the fifth at 12 us, after the second came back at 11: 1 us; the fsync at 30 us, after
    # the fifth came back at 25: 5 us; waiting for completions is not think time)
    assert list(p.calls["gap_ns"][2:7]) == [1000, 1000, 1000, 1000, 5000]
    assert p.has_async and p.bytes_by_direction() == {"read": 0, "write": 5 * 4096}
    # AND the one request the original made after a completion it had not got back at its
    # previous call (the fifth) is marked so: the player restarts the think time after its own
    # wait only there
    from iowitness.replay.plan_layout import WAITED_BEFORE
    assert [bool(f & WAITED_BEFORE) for f in p.calls["flags"].tolist()] == [False] * 5 + [True, False, False]


def test_async_requests_are_refused_by_the_python_player_in_one_line(tmp_path):
    trace = tmp_path / "t.iwt"
    write_async_trace(trace, [(0, 10)], then_fsync_at=30)
    proc = iowitness("replay", str(trace), "--into", str(tmp_path / "into"), "--player", "python", check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "only the native player replays" in proc.stderr and not (tmp_path / "into").exists()


def test_think_time_leaves_out_the_time_the_thread_was_preempted(tmp_path):
    # GIVEN one thread whose calls are 10 us apart, preempted for 4 us inside the gap before its
    # second call and asleep for 6 us inside the gap before its third (off-CPU records)
    trace = tmp_path / "t.iwt"
    t0 = 1_000_000_000
    write_trace(trace, [(b"/w/a", AT_FDCWD)],
                offcpu=[(50, t0 + 12_000, t0 + 16_000, 0), (50, t0 + 32_000, t0 + 38_000, 1)])
    # WHEN planned
    p = plan.build(str(trace))
    # THEN the preempted 4 us are not think time (the machine's load, not the workload's), the
    # sleep is
    assert list(p.calls["gap_ns"]) == [0, 6_000, 10_000, 10_000]


def test_a_threads_first_call_keeps_its_start_among_the_others_preempted_or_not(tmp_path):
    # GIVEN two threads, the second starting 80 us after the first (its calls 20 us apart) and
    # preempted for 20 us before its first call, and for 4 us inside the gap before its second
    from iowitness.replay import stream_plan

    trace = tmp_path / "t.iwt"
    t0 = 1_000_000_000
    write_trace(trace, [(b"/w/a", AT_FDCWD), (b"/w/b", AT_FDCWD)], threads=2,
                offcpu=[(51, t0 + 50_000, t0 + 70_000, 0), (51, t0 + 92_000, t0 + 96_000, 0)])
    # WHEN planned in memory and streamed
    whole = plan.build(str(trace))
    whole.save_native(str(tmp_path / "a.bin"))
    stream_plan.build_native(str(trace), str(tmp_path / "b.bin"))
    # THEN the second thread's first call starts 80 us after the first thread's, as it did (its
    # start places it among the threads: less its preemption, fio's jobs, started together,
    # spread apart), and only its own gaps leave the preempted time out
    second = whole.calls[whole.calls["tgid"] == 50][4:]
    assert list(second["gap_ns"]) == [80_000, 6_000, 10_000, 10_000]
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()


@pytest.mark.parametrize("state", [0, 1], ids=["preempted", "asleep"])
def test_a_new_threads_start_leaves_out_its_processs_wait_for_a_cpu(tmp_path, state):
    # GIVEN three threads of one process starting one after the other (their calls 20 us apart,
    # 10 us each: the first at 0-70 us, the second from 80, the third from 160), as
    # threads_bench's do: the first thread preempted from 70 to 78 us and then asleep (in its
    # join), the second off the CPU from 150 to 158 us, preempted or asleep; the new threads
    # leave no record of their own before their first call
    from iowitness.replay import stream_plan

    trace = tmp_path / "t.iwt"
    t0 = 1_000_000_000
    write_trace(trace, [(b"/w/a", AT_FDCWD), (b"/w/b", AT_FDCWD), (b"/w/c", AT_FDCWD)], threads=3,
                offcpu=[(50, t0 + 70_000, t0 + 78_000, 0), (50, t0 + 78_000, t0 + 900_000, 1),
                        (51, t0 + 150_000, t0 + 158_000, state)])
    # WHEN planned in memory and streamed
    whole = plan.build(str(trace))
    whole.save_native(str(tmp_path / "a.bin"))
    stream_plan.build_native(str(trace), str(tmp_path / "b.bin"))
    firsts = [int(whole.calls["gap_ns"][t["first"]]) for t in whole.threads]
    # THEN a thread's first call starts less the time none of its process's threads was on a
    # CPU and one was preempted (the machine's load: 8 us before the second thread, and 8 more
    # before the third when the second was preempted), not less a time they slept
    assert firsts == ([0, 72_000, 144_000] if state == 0 else [0, 72_000, 152_000])
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()


def test_a_trace_that_lost_calls_is_said_to_by_both_builds(tmp_path):
    # GIVEN a trace whose recording says it lost 7 events (its collector fell behind), and one
    # that lost none
    from iowitness.replay import stream_plan

    for lost in (7, 0):
        trace = tmp_path / f"lost{lost}.iwt"
        write_trace(trace, [(b"/w/a", AT_FDCWD)], lost_events=lost)
        # WHEN planned in memory and streamed
        whole = plan.build(str(trace))
        streamed = stream_plan.build_native(str(trace), str(tmp_path / f"lost{lost}.bin"))
        # THEN both plans carry the trace's own words for it, the ones its report prints, so that
        # the replay says its original's calls were not all there
        said = "7 events lost" if lost else ""
        assert whole.source["missing"] == streamed.source["missing"] == said
        # AND the calls it does hold are all planned
        assert len(whole.calls) == streamed.count == 4
