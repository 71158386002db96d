"""libaio requests against ground truth: every request of tests/workloads/aio_known.c field
by field, requests never reaped counted, fio's libaio engine's own totals, and strace's count
of io_submit/io_getevents on the very run iowitness traces."""

from __future__ import annotations

import errno
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from iowitness.analysis.measure import device_checks
from iowitness.analysis.phasing import aio_kernel
from iowitness.collector.format.traceformat import kernel_dev
from tests.conftest import require_tool
from tests.support.blockdev import loop_ext4, loop_fs
from tests.support.workload import build

FIELDS = ("op", "tid", "fd", "offset", "requested", "ret", "ring", "flags")
AIO_OPS = ("aio_read", "aio_write", "aio_fsync")
# the counters that would say a request or its record went missing
MISSING = ("lost_events", "requests_not_followed", "transfers_not_decoded", "threads_not_followed")


def _direct_io_works(directory: Path) -> bool:
    probe = directory / ".odirect"
    try:
        fd = os.open(probe, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
    except OSError as e:
        if e.errno == errno.EINVAL:
            return False
        raise
    os.close(fd)
    probe.unlink()
    return True


@pytest.fixture
def direct_dir(tmp_path):
    """A directory on a file system that takes O_DIRECT: the test's own, or ext4 on a loop device."""
    if _direct_io_works(tmp_path):
        yield tmp_path
        return
    with loop_ext4(64) as (_, mnt):
        yield mnt


def _aio_events(trace):
    events = trace.events
    return events[events["syscall"].astype(str).isin(AIO_OPS)]


def _rows(events):
    return [{"op": str(e.syscall), "tid": int(e.tid), "fd": int(e.fd), "offset": int(e.offset),
             "requested": int(e.requested), "ret": int(e.ret), "ring": int(e.ring), "flags": int(e.flags)}
            for e in events.itertuples()]


def _key(row):
    return tuple(row[f] for f in FIELDS)


def test_every_aio_request_is_recorded_exactly(traced, tmp_path, direct_dir):
    # GIVEN aio_known: 63 requests through io_submit on aio.dat (pread, pwrite, preadv,
    # pwritev, fsync, fdatasync, buffered and O_DIRECT, one failing with -EINVAL, 48 reaped by
    # a second thread while their io_submit is still going), each logged once it is reaped
    exe = build("aio_known")
    log = tmp_path / "truth.jsonl"
    target = direct_dir / "aio.dat"
    # WHEN it runs under iowitness watching aio.dat
    trace, proc = traced([str(exe), str(direct_dir), str(log)], "--file", str(target))
    truth = [json.loads(line) for line in log.read_text().splitlines()]
    events = _aio_events(trace)
    # THEN each request is in the trace once, with its op, fd, offset, size, result, context
    # and submitting thread, and nothing else is
    assert len(truth) == 63
    assert Counter(map(_key, _rows(events))) == Counter(map(_key, truth))
    assert set(trace.events["path"].astype(str)) == {str(target)}
    assert {r["ret"] for r in truth if r["ret"] < 0} == {-errno.EINVAL}
    # AND each latency lies within what the program measured: from before its io_submit to
    # after the io_getevents that reaped it
    by_key = {}
    for r in truth:
        by_key.setdefault(_key(r), []).append(r)
    for e, row in zip(events.itertuples(), _rows(events)):
        spans = by_key[_key(row)]
        assert any(s["before_submit_ns"] <= e.start_ns and e.end_ns <= s["after_reap_ns"] for s in spans), row
        assert e.latency_ns > 0
    # AND nothing was lost, and the calls that carried them were counted
    assert all(int(trace.counters.get(name, 0)) == 0 for name in MISSING), trace.counters
    assert trace.counters["async_calls"]["io_submit"]["calls"] == 6


def test_summary_mode_aggregates_every_aio_request(traced, tmp_path, direct_dir):
    # GIVEN aio_known's 63 requests
    exe = build("aio_known")
    log = tmp_path / "truth.jsonl"
    # WHEN it runs under iowitness --summary
    trace, _ = traced([str(exe), str(direct_dir), str(log)], "--summary", "--file", str(direct_dir / "aio.dat"))
    truth = [json.loads(line) for line in log.read_text().splitlines()]
    # THEN each op's aggregates hold its requests: calls, errors and bytes done
    rows = trace.summary
    ops = {v: k for k, v in trace._ops.items()}
    for op in AIO_OPS:
        mine = [r for r in truth if r["op"] == op]
        agg = rows[rows["op"] == ops[op]]
        assert int(agg["calls"].sum()) == len(mine), op
        assert int(agg["errors"].sum()) == sum(r["ret"] < 0 for r in mine), op
        if op != "aio_fsync":
            assert int(agg["bytes"].sum()) == sum(max(r["ret"], 0) for r in mine), op
    assert len(trace.raw_events()) == 0 and trace.lost == 0


def test_requests_never_reaped_are_counted_not_kept(traced, tmp_path, direct_dir):
    # GIVEN aio_known --abandon: after its 63 requests, 5 buffered writes submitted and left in
    # a context it destroys, and 3 left in a context still open when it exits
    exe = build("aio_known")
    log = tmp_path / "truth.jsonl"
    # WHEN it runs under iowitness
    trace, _ = traced([str(exe), str(direct_dir), str(log), "--abandon"], "--file", str(direct_dir / "aio.dat"))
    # THEN the 8 are counted as requests not followed (io_destroy and the exit cleared them),
    # and the 63 reaped ones are all recorded
    assert int(trace.counters["requests_not_followed"]) == 8
    assert len(_aio_events(trace)) == len(log.read_text().splitlines()) == 63


# (direct, rw, iodepth, numjobs, group_reporting): each direction, both depths, both I/O
# paths, two jobs reported apart and together; about 5 s a case
FIO_CASES = [
    (1, "randread", 32, 1, False),
    (1, "randwrite", 1, 2, True),
    (1, "randrw", 32, 2, False),
    (0, "randrw", 32, 2, True),
    (0, "randwrite", 32, 2, False),
    (0, "randread", 1, 1, False),
]


def _fio_command(fio, directory, direct, rw, iodepth, numjobs, group, output):
    return [fio, "--name=aio", f"--directory={directory}", "--ioengine=libaio", f"--direct={direct}",
            f"--rw={rw}", "--bs=4k", f"--iodepth={iodepth}", f"--numjobs={numjobs}", "--size=8m",
            "--output-format=json", f"--output={output}", *(["--group_reporting"] if group else [])]


def _fio_totals(output: Path) -> dict:
    """{direction: (total_ios, io_bytes)} summed over fio's job entries."""
    jobs = json.loads(output.read_text())["jobs"]
    return {d: (sum(j[d]["total_ios"] for j in jobs), sum(j[d]["io_bytes"] for j in jobs))
            for d in ("read", "write")}


@pytest.mark.parametrize("direct,rw,iodepth,numjobs,group", FIO_CASES,
                         ids=[f"direct{c[0]}-{c[1]}-qd{c[2]}-j{c[3]}{'-group' if c[4] else ''}" for c in FIO_CASES])
def test_fio_libaio_totals_equal_the_trace(traced, tmp_path, direct_dir, direct, rw, iodepth, numjobs, group):
    # GIVEN fio's libaio engine on 8 MiB per job, 4 KiB blocks
    fio = require_tool("fio")
    work = direct_dir / "fio"
    work.mkdir()
    output = tmp_path / "fio.json"
    # WHEN it runs under iowitness
    trace, _ = traced(_fio_command(fio, work, direct, rw, iodepth, numjobs, group, output))
    # THEN the trace's aio reads and writes are fio's total_ios, and their bytes fio's io_bytes
    events = _aio_events(trace)
    events = events[events["path"].astype(str).str.startswith(str(work))]
    truth = _fio_totals(output)
    for direction, op in (("read", "aio_read"), ("write", "aio_write")):
        done = events[events["syscall"].astype(str) == op]
        assert (len(done), int(done["ret"].clip(lower=0).sum())) == truth[direction], direction
    assert truth["read"][0] + truth["write"][0] == numjobs * 2048
    # AND every request was followed, with the context it was submitted on
    assert all(int(trace.counters.get(name, 0)) == 0 for name in MISSING), trace.counters
    assert (events["ring"] > 0).all()
    assert events.groupby("tgid")["ring"].nunique().eq(1).all()
    assert events["ring"].nunique() == numjobs


def test_io_submit_and_getevents_counts_equal_strace_on_the_same_run(traced, tmp_path, direct_dir):
    # GIVEN fio's libaio engine, two jobs at depth 8, run under strace -f -c
    fio = require_tool("fio")
    strace = require_tool("strace")
    work = direct_dir / "fio"
    work.mkdir()
    summary = tmp_path / "strace.txt"
    command = [strace, "-f", "-c", "-e", "trace=io_submit,io_getevents,io_pgetevents", "-o", str(summary),
               "--", *_fio_command(fio, work, 1, "randrw", 8, 2, False, tmp_path / "fio.json")]
    # WHEN iowitness traces that very run (strace and the fio processes under it)
    trace, _ = traced(command)
    # THEN the calls iowitness counted are the calls strace counted
    counted = {}
    for line in summary.read_text().splitlines():
        parts = line.split()
        if parts and parts[-1] in ("io_submit", "io_getevents", "io_pgetevents"):
            counted[parts[-1]] = int(parts[3])
    calls = trace.counters["async_calls"]
    assert calls["io_submit"]["calls"] == counted["io_submit"] > 0
    assert calls["io_getevents"]["calls"] == counted.get("io_getevents", 0) + counted.get("io_pgetevents", 0) > 0
    # AND the requests those calls carried are all in the trace
    assert len(_aio_events(trace)) == 2 * 2048


@pytest.mark.parametrize("fs", ["ext4", "btrfs"])
def test_kernel_completion_of_direct_requests_lies_between_their_block_request_and_their_reap(traced, tmp_path, fs):
    # GIVEN fio's libaio engine, O_DIRECT 4 KiB random reads at depth 16, on a loop device
    fio = require_tool("fio")
    require_tool(f"mkfs.{fs}")
    output = tmp_path / "fio.json"
    with loop_fs(fs, 300) as (device, mnt):
        work = mnt / "fio"
        work.mkdir()
        # WHEN it runs under iowitness, told the directory (btrfs's files carry an anonymous device
        # number: the disk under them is found from a --file path's mount)
        trace, _ = traced(_fio_command(fio, work, 1, "randread", 16, 1, False, output), "--file", str(work))
        dev = os.stat(device).st_rdev
    events = _aio_events(trace)
    events = events[events["path"].astype(str).str.startswith(str(work))].reset_index(drop=True)
    kernel = aio_kernel.done_ns(events, trace.aio_done)
    # THEN each of fio's requests (its own total_ios) has the time the kernel completed it
    assert len(events) == _fio_totals(output)["read"][0] == 2048
    _no_more_missing_than_the_kernel_explains(trace, kernel)
    kernel, events = kernel[kernel > 0], events[kernel > 0]
    # AND that time lies between its submission and its reap
    start, end = events["start_ns"].to_numpy(np.int64), events["end_ns"].to_numpy(np.int64)
    assert ((start <= kernel) & (kernel <= end)).all()
    # AND after the block layer completed a 4 KiB read fio submitted (block_rq_complete, another
    # tracepoint): one inside each request's submission..kernel completion, and the n-th
    # kernel completion never before the n-th such block completion
    block = trace.block[(trace.block["dev"] == kernel_dev(os.major(dev), os.minor(dev))) & (trace.block["op"] == 0)
                        & (trace.block["bytes"] == 4096) & np.isin(trace.block["tgid"], events["tgid"].unique())]
    completed = np.sort(block["complete_ns"].astype(np.int64))
    backed = np.searchsorted(completed, kernel, side="right") > np.searchsorted(completed, start, side="left")
    if fs == "ext4":
        assert len(completed) >= len(events)
        assert backed.all()
        assert (completed[:len(kernel)] <= np.sort(kernel)).all()
    else:
        # btrfs answered a few reads with no device read at all (seen: 16 of 2,048 at the run's
        # start, completed 3-6 µs after submission): those have none to follow
        assert backed.mean() >= 0.95, f"{int((~backed).sum())} of {len(backed)} with no block read before"
    # AND the report gives each phase's figures from them
    phase = trace.report().phases.set_index("phase")
    read = phase[phase["kernel_done"] > 0]
    assert int(read["kernel_done"].sum()) == len(kernel)
    assert (read["kernel_mean_us"] <= read["lat_mean_us"]).all()


def test_buffered_requests_have_no_kernel_completion(traced, tmp_path):
    # GIVEN fio's libaio engine on buffered writes (they complete inside io_submit)
    fio = require_tool("fio")
    output = tmp_path / "fio.json"
    with loop_ext4(64) as (_, mnt):
        work = mnt / "fio"
        work.mkdir()
        trace, _ = traced(_fio_command(fio, work, 0, "randwrite", 8, 1, False, output))
    # WHEN the kernel completions are paired with the requests
    events = _aio_events(trace)
    kernel = aio_kernel.done_ns(events, trace.aio_done)
    # THEN there are none (no direct I/O completed them), and all 2,048 requests are recorded
    assert len(events) == 2048 and not (kernel > 0).any()


def _no_more_missing_than_the_kernel_explains(trace, kernel: np.ndarray) -> None:
    """Requests without their kernel completion are at most those the kernel is known not to
    have shown the probe: runs it skipped (counted), and block completions /proc/diskstats
    counted that no BPF program saw. (At depth 32 on a loop device the kernel ran neither the
    block probe nor the completion probe for about 1 completion in 50,000, ftrace's events
    firing for all of them and no skipped run counted: a kernel finding, said in the issue. Beside
    two CPU hogs the kernel's share grew to 1 in 600: 260 of 155,025 in a fresh-clone run, every
    one of them a block completion /proc/diskstats counted and no program saw. The last bound
    only holds the probe to the kernel's order of magnitude: a probe that lost its block or
    completion program would miss most of them.)"""
    missing = int((kernel == 0).sum())
    checks = device_checks.cross_check(trace)
    unseen = int((checks["diskstats_reads"] - checks["probe_reads"]).clip(lower=0).sum()) if len(checks) else 0
    skipped = int(trace.counters.get("aio_completions_missed", 0))
    assert missing <= unseen + skipped, f"{missing} of {len(kernel)} without a kernel completion; " \
        f"{unseen} block reads unseen, {skipped} runs skipped"
    assert missing <= len(kernel) // 100, f"{missing} of {len(kernel)} without a kernel completion"


def test_a_benchmark_left_running_after_the_command_exits_is_drained_to_the_end(traced, tmp_path):
    # GIVEN a shell that starts fio's libaio direct reads in the background and exits at once:
    # fio runs on for 3 s holding the output iowitness captures, at about 100,000 requests/s,
    # each a block request and a kernel completion on the block ring
    fio = require_tool("fio")
    output = tmp_path / "fio.json"
    with loop_ext4(128) as (_, mnt):
        work = mnt / "fio"
        work.mkdir()
        command = " ".join(_fio_command(fio, work, 1, "randread", 32, 1, False, output)) + \
            " --time_based --runtime=3 --size=32m &"
        # WHEN iowitness runs the shell (its recording ends when the shell exits; the trace
        # ends when fio closes the output)
        trace, _ = traced(["sh", "-c", command])
    events = _aio_events(trace)
    events = events[events["path"].astype(str).str.startswith(str(work))].reset_index(drop=True)
    kernel = aio_kernel.done_ns(events, trace.aio_done)
    # THEN every request fio counted is in the trace with its kernel completion, and no block
    # record was lost (the block ring was drained while fio ran on: before, 0.9 million were)
    # (about 100,000 requests a second here when the machine is idle; 40,777 in all were seen on a
    # machine busy with other work: a floor that still needs a long run, not a throughput)
    assert len(events) == _fio_totals(output)["read"][0] > 20_000
    _no_more_missing_than_the_kernel_explains(trace, kernel)
    assert int(trace.counters.get("lost_block", 0)) == 0 and trace.lost == 0
