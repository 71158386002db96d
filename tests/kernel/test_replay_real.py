"""iowitness replay and export --fio-iolog against ground truth, recorded by the real probe.

The original runs are real workloads whose I/O is known independently of iowitness: known_io
logs every call it makes on its target (tests/workloads/known_io.c), threads_bench writes a
known number of 4 KiB records from several threads to one shared file, fio reports its own
bytes in its JSON output, and sysbench fileio counts its events (its reads, writes and
fsyncs). The replay's trace, recorded by the same probe, must hold the same calls and bytes per
file and direction; fio, replaying the exported iologs, must move the bytes the original fio
reported."""

from __future__ import annotations

import json
import subprocess
from collections import Counter

import pytest

from iowitness.analysis.read.run import load
from iowitness.replay import plan as replay_plan
from tests.conftest import require_tool
from tests.support.cli import iowitness
from tests.support.workload import build, build_known_io, read_truth

# what the replay issues for each recorded syscall (every open is an openat2 of a path inside
# DIR, every duplicate a dup): the names its trace must show
AS_REPLAYED = {"open": "openat2", "openat": "openat2", "creat": "openat2", "dup2": "dup", "dup3": "dup",
               "fcntl": "dup"}
DATA = ("read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2")


def replay(trace, into, out, *options):
    return iowitness("replay", "-q", str(trace), "--into", str(into), "-o", str(out), *options, timeout=300)


def same_phases(original, replayed) -> dict:
    """`iowitness compare` of the original and its replay: every phase of either is in both
    (named from the original's command, so the benchmark's module names the replay's alike),
    with the same bytes and calls. Returns the phases' metrics by name."""
    compared = json.loads(iowitness("compare", "--json", str(original), str(replayed)).stdout)
    assert compared["phases"] and all(p["present"] == [True, True] for p in compared["phases"]), \
        [(p["name"], p["present"]) for p in compared["phases"]]
    phases = {}
    for phase in compared["phases"]:
        metric = {m["metric"]: m["values"] for m in phase["metrics"]}
        assert metric["bytes"][0] == metric["bytes"][1] and metric["ops"][0] == metric["ops"][1], phase["name"]
        phases[phase["name"]] = metric
    return phases


def per_call(events) -> tuple[Counter, Counter]:
    """Calls per syscall, and bytes done per data syscall, of a trace's events."""
    names = events["syscall"].astype(str)
    done = events[(events["ret"] > 0) & names.isin(DATA)]
    return Counter(names), Counter({k: int(v) for k, v in done.groupby(done["syscall"].astype(str),
                                                                       observed=True)["ret"].sum().items()})


@pytest.fixture(scope="module")
def known_io_original(tmp_path_factory):
    """known_io run once under iowitness, on this machine's ext4 (every replay test of it reads
    this trace and replays it into a directory of its own): (the trace, the calls known_io
    logged that did not fail (a failed call is not replayed), its bench directory)."""
    exe = build_known_io()
    where = tmp_path_factory.mktemp("known_io")
    bench = where / "bench"
    (bench / "other").mkdir(parents=True)
    log, trace = where / "truth.jsonl", where / "original.iwt"
    iowitness("run", "-q", "-o", str(trace), "--file", str(bench / "target.dat"), "--", str(exe), str(bench), str(log))
    return trace, [r for r in read_truth(log) if r["ret"] >= 0], bench


@pytest.mark.parametrize("player", ["native", "python"])
def test_known_io_replayed_makes_every_call_the_original_made(known_io_original, tmp_path, player):
    # GIVEN known_io run under iowitness: a main thread, a second thread and a forked child doing
    # every covered syscall on target.dat, each logged by known_io itself
    original_path, truth, bench = known_io_original
    # WHEN replayed into a new directory, as fast as it goes
    into = tmp_path / "into"
    proc = replay(original_path, into, tmp_path / "replay.iwt", "--timing", "fast", "--player", player)
    replayed = load(tmp_path / "replay.iwt")
    # THEN the replay's trace holds known_io's calls, syscall for syscall (opens as openat, dups
    # as dup), with the same bytes done by each data call kind
    calls, moved = per_call(replayed.events)
    assert calls == Counter(AS_REPLAYED.get(r["op"], r["op"]) for r in truth)
    assert moved == Counter({op: sum(r["ret"] for r in truth if r["op"] == op) for op in DATA
                             if any(r["op"] == op for r in truth)})
    # AND the calls happened on the replay's own file, in DIR, in as many processes and threads
    assert set(replayed.events["path"].astype(str)) == {str(into / "target.dat")}
    assert replayed.events["tgid"].nunique() == len({r["pid"] for r in truth}) == 2
    assert replayed.events["tid"].nunique() == len({r["tid"] for r in truth}) == 3
    # AND the replay names its original, and its output counts the failed call left out
    assert replayed.meta["replay_of"]["trace"] == str(original_path)
    assert f"replay of {original_path} (" in iowitness("report", str(tmp_path / "replay.iwt")).stdout
    assert "not replayed: read (failed): 1" in replayed.output.get("stdout", "") + proc.stdout
    assert not list(bench.glob("*replay*")) and sorted(p.name for p in into.iterdir()) == ["target.dat"]


def test_threads_sharing_a_file_replayed_keep_their_calls_and_order(tmp_path):
    # GIVEN threads_bench: 4 threads pwrite64 their 1 MiB share of one file in 4 KiB records
    exe = build("threads_bench")
    work = tmp_path / "w"
    work.mkdir()
    target = work / "shared.dat"
    original = tmp_path / "orig.iwt"
    iowitness("run", "-q", "-o", str(original), "--file", str(target), "--",
              str(exe), "one", str(target), "4", "4", timeout=300)
    # WHEN planned and replayed as recorded
    plan = replay_plan.build(str(original))
    replay(original, tmp_path / "into", tmp_path / "replay.iwt")
    events = load(tmp_path / "replay.iwt").events
    writes = events[events["syscall"].astype(str) == "pwrite64"]
    # THEN the 1,024 records of 4 KiB are written again, 256 by each of 4 threads, each record
    # at the offset it had (ground truth: threads_bench's own sizes)
    assert len(writes) == 1024 and int(writes["ret"].sum()) == 4 << 20
    assert sorted(writes.groupby("tid").size().tolist()) == [256] * 4
    assert sorted(writes["offset"].tolist()) == [k * 4096 for k in range(1024)]
    # AND the plan kept the shared file's order across the threads where the original showed one
    # (threads start after the main thread's open: each waits for it)
    assert len(plan.waits) >= 4
    # AND no other: the threads' records are disjoint, so a write waits for no other thread's
    # write, though those of the thread writing the last quarter make the file longer; the
    # waits are the threads' first calls (after the open) and the close (after every write)
    firsts = set(plan.threads["first"].tolist())
    waiting = [(int(c), replay_plan.OPS[plan.calls["op"][c]]) for c in plan.waits["call"]]
    assert all(c in firsts or op == "close" for c, op in waiting), waiting
    # AND compare pairs each thread's phase with the same bytes and calls
    same_phases(original, tmp_path / "replay.iwt")


def test_fio_replayed_and_exported_moves_the_bytes_fio_reported(tmp_path):
    # GIVEN fio, psync random reads and writes of 4 KiB on a 2 MiB file laid out beforehand
    fio = require_tool("fio")
    work = tmp_path / "w"
    work.mkdir()
    (work / "job.0.0").write_bytes(b"\1" * (2 << 20))
    report = tmp_path / "fio.json"
    original = tmp_path / "orig.iwt"
    iowitness("run", "-q", "-o", str(original), "--file", str(work), "--",
              fio, "--name=job", "--rw=randrw", "--bs=4k", "--size=2m", f"--directory={work}",
              "--ioengine=psync", "--output-format=json", f"--output={report}", timeout=300)
    job = json.loads(report.read_text())["jobs"][0]
    truth = {"read": job["read"]["io_bytes"], "write": job["write"]["io_bytes"]}
    assert truth["read"] > 0 and truth["write"] > 0
    # WHEN replayed by iowitness
    replay(original, tmp_path / "into", tmp_path / "replay.iwt", "--timing", "fast")
    events = load(tmp_path / "replay.iwt").events
    names = events["syscall"].astype(str)
    # THEN the replay's trace reads and writes what fio said it did
    assert int(events[names == "pread64"]["ret"].sum()) == truth["read"]
    assert int(events[names == "pwrite64"]["ret"].sum()) == truth["write"]
    # AND fio's advice is given again, with its arguments: its page-cache drop before its I/O
    # (invalidate=1: POSIX_FADV_DONTNEED, 4), so the replay's reads do not find the file cached,
    # and its random-access hint (fadvise_hint: POSIX_FADV_RANDOM, 1)
    fadvise = load(original).events
    fadvise = fadvise[fadvise["syscall"].astype(str) == "fadvise64"]
    assert set(fadvise["flags"].tolist()) == {4, 1}
    assert sorted(map(tuple, events[names == "fadvise64"][["offset", "requested", "flags"]].values.tolist())) == \
        sorted(map(tuple, fadvise[["offset", "requested", "flags"]].values.tolist()))
    # AND compare finds every phase of the original in the replay (named by fio's module from the
    # original's command), with the same bytes and calls
    same_phases(original, tmp_path / "replay.iwt")
    # WHEN exported as fio iologs and replayed by fio itself
    out = tmp_path / "fio-replay"
    iowitness("export", str(original), "--fio-iolog", str(out))
    run = subprocess.run([fio, "--output-format=json", str(out / "replay.fio")], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    jobs = json.loads(run.stdout[run.stdout.index("{"):])["jobs"]
    # THEN fio moved the bytes the original fio reported, each way
    assert sum(j["read"]["io_bytes"] for j in jobs) == truth["read"]
    assert sum(j["write"]["io_bytes"] for j in jobs) == truth["write"]
    assert all(j["error"] == 0 for j in jobs)


def test_compare_puts_the_original_and_its_replay_side_by_side(tmp_path):
    # GIVEN a dd run with fdatasync, and its replay
    dd = require_tool("dd")
    work = tmp_path / "w"
    work.mkdir()
    original = tmp_path / "orig.iwt"
    iowitness("run", "-q", "-o", str(original), "--file", str(work / "out"), "--",
              dd, "if=/dev/zero", f"of={work / 'out'}", "bs=64k", "count=32", "conv=fdatasync", timeout=300)
    replay(original, tmp_path / "into", tmp_path / "replay.iwt")
    # WHEN compared
    proc = iowitness("compare", str(original), str(tmp_path / "replay.iwt"), "--json")
    runs = json.loads(proc.stdout)
    # THEN the replay's phase is named as dd's was (from the original's command), so the two are
    # matched, with the same bytes and calls (32 x 64 KiB)
    write = next(p for p in runs["phases"] if p["name"] == "dd write")
    assert write["present"] == [True, True]
    metric = {m["metric"]: m["values"] for m in write["metrics"]}
    assert metric["bytes"] == [32 * 65536] * 2 and metric["ops"] == [32, 32]
    replayed = load(tmp_path / "replay.iwt").events
    writes = replayed[replayed["syscall"].astype(str) == "write"]
    assert len(writes) == 32 and int(writes["ret"].sum()) == 32 * 65536
    assert (replayed["syscall"].astype(str) == "fdatasync").sum() == 1


def test_iozone_throughput_mode_replayed_moves_each_files_bytes_each_way(tmp_path):
    # GIVEN IOzone in throughput mode: 4 processes per test (issue 31's "-t 4"), each on its own
    # file, stonewalling off (-x), so each child writes, rewrites, reads and rereads its whole
    # 1 MiB file
    iozone = require_tool("iozone")
    work = tmp_path / "w"
    work.mkdir()
    files = [work / f"f{k}" for k in range(1, 5)]
    original = tmp_path / "orig.iwt"
    iowitness("run", "-q", "-o", str(original), "--file", str(work), "--",
              iozone, "-i0", "-i1", "-t", "4", "-x", "-s", "1m", "-r", "4k", "-F", *map(str, files),
              cwd=tmp_path, timeout=300)
    # WHEN replayed as recorded (at --timing fast a child of IOzone's next test waits only for the
    # calls on its own file, not for the last child of the test before, as IOzone had it: a
    # child's rewrite then runs beside another's write, and the phases are named otherwise; the
    # bytes per file are the same either way)
    into = tmp_path / "into"
    replay(original, into, tmp_path / "replay.iwt")
    events = load(tmp_path / "replay.iwt").events
    names = events["syscall"].astype(str)
    # THEN each file gets its 2 MiB written (write + rewrite) and 2 MiB read (read + reread) in
    # 4 KiB calls, on the replay's own copy of the file (ground truth: IOzone's -s, -r and tests)
    for f in files:
        mine = events[events["path"].astype(str) == str(into / f.name)]
        kinds = names[mine.index]
        assert int(mine[kinds == "write"]["ret"].sum()) == 2 << 20
        assert int(mine[kinds == "read"]["ret"].sum()) == 2 << 20
        assert (kinds == "write").sum() == (kinds == "read").sum() == 512
    # AND compare pairs every phase with the same bytes and calls (each child's phase moves its
    # whole file, so a phase paired with another child's moves as much)
    same_phases(original, tmp_path / "replay.iwt")


def test_iozone_replayed_as_fast_as_it_goes_keeps_each_phases_bytes_and_calls(tmp_path):
    # GIVEN IOzone's write, rewrite, read, reread, random read and random write tests of a 4 MiB
    # file in 4 KiB records (issue 31's "IOzone -i0 -i1 -i2"), recorded
    iozone = require_tool("iozone")
    work = tmp_path / "w"
    work.mkdir()
    original = tmp_path / "orig.iwt"
    iowitness("run", "-q", "-o", str(original), "--file", str(work), "--",
              iozone, "-i0", "-i1", "-i2", "-s", "4m", "-r", "4k", "-f", str(work / "iozone.tmp"),
              cwd=tmp_path, timeout=300)
    # WHEN replayed at --timing fast (the player following the plan's build, forked beside the
    # recording's start)
    replay(original, tmp_path / "into", tmp_path / "replay.iwt", "--timing", "fast")
    compared = json.loads(iowitness("compare", "--json", str(original), str(tmp_path / "replay.iwt")).stdout)
    # THEN each of IOzone's six tests is a phase of both, each moving the whole file in 4 KiB
    # calls (ground truth: IOzone's -s and -r), the replay's exactly the original's
    phases = {p["name"]: {m["metric"]: m["values"] for m in p["metrics"]} for p in compared["phases"]
              if all(p["present"])}
    for name in ("write", "rewrite", "read", "reread", "random read", "random write"):
        assert phases[name]["bytes"] == [4 << 20] * 2, name
        assert phases[name]["ops"] == [1024] * 2, name


def test_fio_disk_reads_replayed_as_recorded_keep_each_phases_bytes_and_calls(tmp_path):
    # GIVEN fio, 4 psync jobs of 4 KiB random reads and writes on files it lays out and then drops
    # from the page cache (invalidate=1): its reads sleep on the disk, the calls after which the
    # player takes the way back from a sleep off the recorded gap
    fio = require_tool("fio")
    work = tmp_path / "w"
    work.mkdir()
    report = tmp_path / "fio.json"
    original = tmp_path / "orig.iwt"
    iowitness("run", "-q", "-o", str(original), "--file", str(work), "--",
              fio, "--name=job", "--rw=randrw", "--bs=4k", "--size=1m", "--numjobs=4", f"--directory={work}",
              "--ioengine=psync", "--output-format=json", f"--output={report}", timeout=300)
    jobs = json.loads(report.read_text())["jobs"]
    truth = {"pread64": sum(j["read"]["io_bytes"] for j in jobs), "pwrite64": sum(j["write"]["io_bytes"] for j in jobs)}
    assert truth["pread64"] > 0 and truth["pwrite64"] > 0
    # WHEN replayed with its recorded think times
    replayed = tmp_path / "replay.iwt"
    replay(original, tmp_path / "into", replayed, "--timing", "as-recorded")
    # THEN the replay read and wrote what fio said it did, in as many calls as the original made
    for trace in (original, replayed):
        events = load(trace).events
        names = events["syscall"].astype(str)
        for call, moved in truth.items():
            assert int(events[names == call]["ret"].sum()) == moved, (trace, call)
            assert int((names == call).sum()) == moved // 4096, (trace, call)
    # AND every phase of the original is in the replay with the same bytes and calls
    same_phases(original, replayed)


def in_flight(events) -> tuple[list[int], str]:
    """At each asynchronous request's submission, how many of the trace's other requests were
    in flight (submitted before it and not yet completed; libaio: not yet reaped)."""
    import numpy as np

    names = events["syscall"].astype(str)
    mine = events[names.str.startswith(("aio_", "uring_"))]
    start = mine["start_ns"].to_numpy(np.int64)
    end = np.sort(start + mine["latency_ns"].to_numpy(np.int64))
    return (np.arange(len(start)) - np.searchsorted(end, start, side="right")).tolist(), names


@pytest.mark.parametrize("engine, prefix, timing", [("libaio", "aio_", "fast"), ("io_uring", "uring_", "fast"),
                                                    ("io_uring", "uring_", "as-recorded")])
def test_fio_async_requests_are_replayed_at_their_recorded_depth(tmp_path, engine, prefix, timing):
    # GIVEN fio, direct random reads and writes of 4 KiB through libaio or io_uring, 32 in flight
    fio = require_tool("fio")
    work = tmp_path / "w"
    work.mkdir()
    (work / "job.0.0").write_bytes(b"\1" * (4 << 20))
    report = tmp_path / "fio.json"
    original = tmp_path / "orig.iwt"
    proc = iowitness("run", "-q", "-o", str(original), "--file", str(work), "--",
                     fio, "--name=job", "--rw=randrw", "--bs=4k", "--size=4m", f"--directory={work}",
                     f"--ioengine={engine}", "--iodepth=32", "--direct=1", "--output-format=json",
                     f"--output={report}", timeout=300, check=False)
    if proc.returncode != 0 and engine == "io_uring" and "io_uring" in (proc.stdout + proc.stderr):
        pytest.skip(f"fio's io_uring engine does not run here: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    job = json.loads(report.read_text())["jobs"][0]
    truth = {"read": job["read"]["io_bytes"], "write": job["write"]["io_bytes"]}
    # WHEN replayed by iowitness, as fast as it goes, or (io_uring) with its recorded think times,
    # which the player restarts after a wait for completions only before the requests the
    # original waited before
    replay(original, tmp_path / "into", tmp_path / "replay.iwt", "--timing", timing)
    before, _ = in_flight(load(original).events)
    events = load(tmp_path / "replay.iwt").events
    after, names = in_flight(events)
    # THEN the replay made the requests fio said it made, through the same interface, each way
    assert int(events[names == f"{prefix}read"]["ret"].sum()) == truth["read"] > 0
    assert int(events[names == f"{prefix}write"]["ret"].sum()) == truth["write"] > 0
    assert len(after) == len(before) == truth["read"] // 4096 + truth["write"] // 4096
    # AND each request was submitted with as many in flight as the original had: exactly for
    # libaio (a request is in flight until the io_getevents that reaps it, and the replay reaps
    # as the original did); for io_uring (in flight until the kernel posts its completion, whose
    # time the disk decides) up to as many as the original ever had; fio kept up to 32
    # (--iodepth=32) in flight
    assert max(before) == 31
    # AND compare pairs every phase (fio's layout and its mixed phase) with the same bytes and calls
    same_phases(original, tmp_path / "replay.iwt")
    if engine == "libaio":
        assert after == before
    elif timing == "fast":
        assert 8 < max(after) <= max(before)
    else:   # at the original's pace the disk may keep fewer in flight than fio had: never more
        assert max(after) <= max(before)


def phases_by_file(trace) -> dict[str, list[tuple[int, int, int]]]:
    """`iowitness report --json`'s phases of a trace, per file name: each phase's (bytes, data
    calls, fsyncs), sorted (the replay's threads have other ids, and its phases on one file are
    matched with the original's as a whole)."""
    report = json.loads(iowitness("report", "--json", str(trace)).stdout)
    phases: dict[str, list[tuple[int, int, int]]] = {}
    for phase in report["phases"]:
        name = str(phase["path"]).rsplit("/", 1)[-1]
        phases.setdefault(name, []).append((int(phase["bytes"]), int(phase["ops"]), int(phase["fsyncs"] or 0)))
    return {name: sorted(rows) for name, rows in phases.items()}


def test_sysbench_fileio_replayed_moves_its_events_bytes_and_fsyncs(tmp_path):
    # GIVEN sysbench fileio, 2 threads of random reads and writes of 16 KiB on 2 files it laid
    # out beforehand, with its periodic fsyncs (its default --file-fsync-freq, every 100
    # requests of a thread; no final fsync per file, so that each of its events is one read, one
    # write or one fsync), the files written to disk before it starts, as the replay's copies are
    sysbench = require_tool("sysbench")
    work = tmp_path / "w"
    work.mkdir()
    base = [sysbench, "fileio", "--file-num=2", "--file-total-size=4M", "--file-block-size=16384"]
    subprocess.run([*base, "prepare"], cwd=work, check=True, capture_output=True, timeout=120)
    subprocess.run(["sync"], check=True, timeout=120)
    original = tmp_path / "orig.iwt"
    proc = iowitness("run", "-q", "-o", str(original), "--file", str(work), "--",
                     *base, "--file-test-mode=rndrw", "--threads=2", "--events=1500", "--time=0",
                     "--file-fsync-end=off", "run", cwd=work, timeout=300)
    said = int(next(line for line in proc.stdout.splitlines() if "total number of events" in line).split()[-1])
    # WHEN replayed as recorded
    into = tmp_path / "into"
    replay(original, into, tmp_path / "replay.iwt")
    orig_events, events = load(original).events, load(tmp_path / "replay.iwt").events
    # THEN the original's reads, writes and fsyncs are sysbench's events (ground truth: its own
    # count), fsyncs among them, and the replay made as many of each kind, 16 KiB a read or
    # write, on its own copies of the two files, from as many threads as the original's
    # (sysbench's threads share out the events as they come: on a busy machine one may do them all)
    threads = []
    for ev in (orig_events, events):
        names = ev["syscall"].astype(str)
        data = ev[names.isin(["pread64", "pwrite64"])]
        syncs = ev[names.isin(["fsync", "fdatasync"])]
        assert len(data) + len(syncs) == said == 1500 and int(data["ret"].sum()) == len(data) * 16384
        assert len(syncs) > 0 and (syncs["ret"] == 0).all()
        threads.append(sorted(ev[names.isin(["pread64", "pwrite64", "fsync"])].groupby("tid").size().tolist()))
    assert threads[0] == threads[1]
    calls, moved = per_call(orig_events)
    again, moved_again = per_call(events)
    assert moved_again == moved
    assert [again[k] for k in ("pread64", "pwrite64", "fsync")] == [calls[k] for k in ("pread64", "pwrite64", "fsync")]
    assert set(events["path"].astype(str)) == {str(into / "test_file.0"), str(into / "test_file.1")}
    # AND compare finds every phase in both, and each file's phases (one per thread) hold the
    # original's bytes, data calls and fsyncs exactly (compare pairs a file's phases by their rank
    # in time: two threads' first calls on a file, reads or calls on other 4 KiB blocks, do not
    # conflict, so the replay need not start them in the original's order, and compare's pairs
    # may then set one thread against the other)
    compared = json.loads(iowitness("compare", "--json", str(original), str(tmp_path / "replay.iwt")).stdout)
    assert compared["phases"] and all(p["present"] == [True, True] for p in compared["phases"])
    by_file = phases_by_file(original)
    assert sum(f for rows in by_file.values() for _, _, f in rows) == calls["fsync"]
    assert phases_by_file(tmp_path / "replay.iwt") == by_file


@pytest.mark.parametrize("fs", ["xfs", "btrfs"])
def test_a_trace_from_ext4_replays_on_another_file_system(known_io_original, tmp_path, fs):
    # GIVEN known_io recorded on this machine's ext4
    from tests.support.blockdev import loop_fs

    original_path, truth, _ = known_io_original
    # WHEN replayed into a directory of a fresh xfs or btrfs on a loop device
    with loop_fs(fs, 300) as (_, mnt):
        into = mnt / "replay"
        replay(original_path, into, tmp_path / "replay.iwt", "--timing", "fast")
        replayed = load(tmp_path / "replay.iwt")
        # THEN the replay ran there (its files are on that file system) and made known_io's
        # calls, with the same bytes per data call kind (fallocate may differ: xfs and btrfs
        # take the KEEP_SIZE range ext4 took, so it is counted, not compared)
        assert {f.get("fs_type") for f in replayed.meta.get("files", [])} == {fs}
        calls, moved = per_call(replayed.events)
        assert calls == Counter(AS_REPLAYED.get(r["op"], r["op"]) for r in truth)
        assert moved == Counter({op: sum(r["ret"] for r in truth if r["op"] == op) for op in DATA
                                 if any(r["op"] == op for r in truth)})
