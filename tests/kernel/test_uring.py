"""io_uring requests against fio's own count: every request fio made through ioengine=io_uring
on its files is a uring_read or uring_write record, per job, with fio's JSON (total_ios,
io_bytes per direction) as the ground truth; and io_uring_enter counted as strace counts it."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from iowitness.probes.layout import layout
from tests.conftest import require_tool
from tests.support.workload import build

BS = 4096
SIZE = 8 << 20
DIRECTIONS = {"read": "uring_read", "write": "uring_write"}
# IORING_OP_* (include/uapi/linux/io_uring.h)
READV, WRITEV, READ_FIXED, WRITE_FIXED, READ, WRITE = 1, 2, 4, 5, 22, 23
FSYNC, SYNC_FILE_RANGE, SPLICE = 3, 8, 30
OP_OF_OPCODE = {READV: "uring_read", READ: "uring_read", WRITEV: "uring_write", WRITE: "uring_write",
                FSYNC: "uring_fsync", SYNC_FILE_RANGE: "uring_fsync"}

# The cases: each option fio's io_uring engine has for the way requests reach the kernel, on
# both the page cache and O_DIRECT, at queue depth 1 and 32; not their whole cross product.
CASES = {
    "buffered-randread-qd1": dict(direct=0, rw="randread", iodepth=1),
    "buffered-randrw-qd32": dict(direct=0, rw="randrw", iodepth=32),
    "direct-randwrite-qd32": dict(direct=1, rw="randwrite", iodepth=32),
    "direct-randrw-qd1": dict(direct=1, rw="randrw", iodepth=1),
    "two-jobs": dict(direct=1, rw="randrw", iodepth=32, numjobs=2),
    "two-jobs-group-reporting": dict(direct=0, rw="randrw", iodepth=32, numjobs=2, group_reporting=1),
    "sqpoll": dict(direct=1, rw="randrw", iodepth=32, sqthread_poll=1),
    "registered-files-and-buffers": dict(direct=1, rw="randrw", iodepth=32, registerfiles=1, fixedbufs=1),
    "vectored": dict(direct=0, rw="randrw", iodepth=8, nonvectored=0),
}


def _supports_o_direct(directory: Path) -> bool:
    probe = directory / ".o_direct"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600))
        return True
    except OSError:
        return False
    finally:
        probe.unlink(missing_ok=True)


def _fio(workdir: Path, out: Path, **options) -> list[str]:
    command = [require_tool("fio"), "--name=j", f"--directory={workdir}", "--ioengine=io_uring",
               f"--bs={BS}", f"--size={SIZE}", "--randrepeat=0", "--output-format=json", f"--output={out}"]
    return command + [f"--{k}={v}" for k, v in options.items()]


def _per_file(events) -> dict[str, dict]:
    """uring requests per file: counts and bytes per direction, and who made them."""
    found = {}
    for path, g in events.groupby(events["path"].astype(str)):
        row = {"tgids": set(g["tgid"]), "rings": set(g["ring"])}
        for direction, op in DIRECTIONS.items():
            d = g[g["syscall"].astype(str) == op]
            row[direction] = (len(d), int(d["ret"].sum()))
        found[path] = row
    return found


def _fio_jobs(out: Path) -> list[dict]:
    return [{d: (job[d]["total_ios"], job[d]["io_bytes"]) for d in DIRECTIONS}
            for job in json.loads(out.read_text())["jobs"]]


@pytest.mark.parametrize("options", list(CASES.values()), ids=list(CASES))
def test_every_fio_request_is_a_record_with_fio_counts_and_bytes(traced, workdir, tmp_path, options):
    # GIVEN fio on io_uring, 4 KiB random I/O on an 8 MiB file per job
    if options["direct"] and not _supports_o_direct(workdir):
        pytest.skip(f"{workdir} does not support O_DIRECT")
    out = tmp_path / "fio.json"
    # WHEN it runs under iowitness
    trace, _ = traced(_fio(workdir, out, **options))
    events = trace.events[trace.events["syscall"].astype(str).isin(DIRECTIONS.values())]
    files = _per_file(events)
    jobs = _fio_jobs(out)
    numjobs = options.get("numjobs", 1)
    # THEN each job's file holds exactly fio's requests and bytes, per direction
    assert sorted(files) == [str(workdir / f"j.{n}.0") for n in range(numjobs)]
    per_file = [{d: row[d] for d in DIRECTIONS} for row in files.values()]
    if options.get("group_reporting"):
        assert len(jobs) == 1
        assert {d: tuple(map(sum, zip(*(f[d] for f in per_file)))) for d in DIRECTIONS} == jobs[0]
    else:
        assert Counter(map(repr, per_file)) == Counter(map(repr, jobs))
    assert sum(n for f in per_file for n, _ in f.values()) >= SIZE // BS
    # AND each job is one process on a ring of its own, numbered from 1
    assert all(len(row["tgids"]) == 1 for row in files.values())
    assert sorted(r for row in files.values() for r in row["rings"]) == list(range(1, numjobs + 1))
    # AND every request lies inside the file, on a block boundary, and asked for one block
    assert ((events["offset"] >= 0) & (events["offset"] + events["requested"] <= SIZE)).all()
    assert (events["offset"] % BS == 0).all() and (events["requested"] == BS).all()
    assert (events["ret"] == BS).all() and (events["latency_ns"] > 0).all()
    # AND the opcode and the flag bits say how the requests were made
    L = layout().constants
    flags = events["flags"].astype(int)
    opcodes = set(flags & L["IOW_URING_OPCODE_MASK"])
    if options.get("fixedbufs"):
        assert opcodes <= {READ_FIXED, WRITE_FIXED} and (flags & L["IOW_URING_FIXED_BUF"]).all()
    elif options.get("nonvectored") == 0:
        assert opcodes <= {READV, WRITEV}
    else:
        assert opcodes <= {READ, WRITE} and not (flags & L["IOW_URING_FIXED_BUF"]).any()
    if options.get("registerfiles") or options.get("sqthread_poll"):
        # the fd is the index of the file in the ring's table: fio registers its one file at 0
        # (and always does with SQPOLL)
        assert (flags & L["IOW_URING_FIXED_FILE"]).all() and set(events["fd"]) == {0}
    else:
        assert not (flags & L["IOW_URING_FIXED_FILE"]).any() and (events["fd"] > 2).all()
    # AND nothing was lost or left undecoded
    assert trace.lost == 0
    assert trace.counters["requests_not_followed"] == 0 and trace.counters["transfers_not_decoded"] == 0


def test_sqpoll_requests_are_made_by_the_process_own_kernel_thread(traced, workdir, tmp_path):
    # GIVEN fio with sqthread_poll=1: the ring's iou-sqp thread submits, not fio's thread
    out = tmp_path / "fio.json"
    # WHEN it runs under iowitness
    trace, _ = traced(_fio(workdir, out, rw="randread", iodepth=16, sqthread_poll=1))
    events = trace.events[trace.events["syscall"].astype(str) == "uring_read"]
    # THEN every request is marked SQPOLL and made by one thread of fio's job process, not its
    # main thread: the kernel's iou-sqp thread belongs to the process's thread group
    flags = events["flags"].astype(int)
    assert len(events) == _fio_jobs(out)[0]["read"][0]
    assert (flags & layout().constants["IOW_URING_SQPOLL"]).all()
    (tgid,), (tid,) = set(events["tgid"]), set(events["tid"])
    assert tid != tgid
    opens = trace.events[trace.events["syscall"].astype(str).str.startswith("open")]
    assert tgid in set(opens["tgid"])


def test_io_uring_enter_is_counted_as_strace_counts_it(traced, workdir, tmp_path):
    # GIVEN fio on io_uring at queue depth 4, run under strace -c -f (one run, both witnesses)
    strace = require_tool("strace")
    out, summary = tmp_path / "fio.json", tmp_path / "strace.txt"
    command = [strace, "-c", "-f", "-e", "trace=io_uring_enter", "-o", str(summary),
               *_fio(workdir, out, rw="randread", iodepth=4, size=f"{2 << 20}")]
    # WHEN iowitness traces that run
    trace, _ = traced(command)
    # THEN the trace's io_uring_enter count is strace's
    row = re.search(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?io_uring_enter$",
                    summary.read_text(), re.M)
    assert row, summary.read_text()
    assert trace.counters["async_calls"]["io_uring_enter"]["calls"] == int(row.group(1)) > 0
    # AND the requests are all there still
    reads = trace.events[trace.events["syscall"].astype(str) == "uring_read"]
    assert len(reads) == _fio_jobs(out)[0]["read"][0] == (2 << 20) // BS


def _known_requests(traced, tmp_path, *options):
    exe = build("uring_known")
    bench, log = tmp_path / "known", tmp_path / "requests.jsonl"
    bench.mkdir()
    trace, _ = traced([str(exe), str(bench), str(log)], "--file", str(bench / "target.dat"), *options)
    return trace, [json.loads(line) for line in log.read_text().splitlines()]


def test_every_request_of_a_known_sequence_is_recorded_field_by_field(traced, tmp_path):
    # GIVEN uring_known: writev and read at the file position (SQE offset -1), write, readv and
    # a short read at offsets, fsync (datasync) and sync_file_range on target.dat; then a splice
    # from it, a read asking for no CQE, a read of a file that is not a target, and a read
    # through a second ring set up after the first was closed
    # WHEN it runs under iowitness watching target.dat
    trace, log = _known_requests(traced, tmp_path)
    target_fd = log[0]["fd"]
    expected = [(OP_OF_OPCODE[r["opcode"]], r["opcode"], r["fd"], r["offset"], r["requested"], r["res"])
                for r in log if r["fd"] == target_fd and r["res"] is not None]
    events = trace.events[trace.events["syscall"].astype(str).str.startswith("uring")]
    flags = events["flags"].astype(int)
    L = layout().constants
    recorded = list(zip(events["syscall"].astype(str), flags & L["IOW_URING_OPCODE_MASK"], events["fd"],
                        events["offset"], events["requested"], events["ret"]))
    # THEN each request on the target is one record with its fields as the workload logged them
    # (an offset of -1 resolved to where the file position was), in submission order
    assert [tuple(int(v) if not isinstance(v, str) else v for v in row) for row in recorded] == expected
    assert len(expected) == 12
    # AND the requests at the file position, and the fdatasync, say so in their flags
    at_position = events[(flags & L["IOW_URING_FILE_POS"]) != 0]
    assert sorted(at_position["offset"]) == [0, 0, 4096, 4096, 8192, 12288]
    fsyncs = flags[(flags & L["IOW_URING_OPCODE_MASK"]) == FSYNC]
    assert len(fsyncs) == 1 and (fsyncs & L["IOW_URING_DATASYNC"]).all()
    # AND the first ring's requests are numbered 1, the second ring's (set up after the first
    # was closed) 2, all by the workload's one thread
    assert list(events["ring"]) == [1] * 11 + [2] and set(events["tid"]) == set(events["tgid"])
    # AND the splice is counted as not decoded, the read without a CQE as not followed
    assert trace.counters["transfers_not_decoded"] == 1
    assert trace.counters["requests_not_followed"] == 1
    # AND io_uring_enter is counted once per request
    assert trace.counters["async_calls"]["io_uring_enter"]["calls"] == len(log)


def test_summary_mode_aggregates_the_requests(traced, tmp_path):
    # GIVEN the same known sequence
    # WHEN it runs under iowitness --summary
    trace, log = _known_requests(traced, tmp_path, "--summary")
    # THEN no request is recorded one by one and the aggregates hold each op's requests and bytes
    assert len(trace.raw_events()) == 0 and trace.lost == 0
    rows = trace.summary
    ops = {v: k for k, v in trace._ops.items()}
    target_fd = log[0]["fd"]
    for op in ("uring_read", "uring_write", "uring_fsync"):
        mine = [r for r in log if r["fd"] == target_fd and r["res"] is not None and OP_OF_OPCODE[r["opcode"]] == op]
        got = rows[rows["op"] == ops[op]]
        assert int(got["calls"].sum()) == len(mine) > 0
        if op != "uring_fsync":
            assert int(got["bytes"].sum()) == sum(r["res"] for r in mine)
            assert int(got["requested"].sum()) == sum(r["requested"] for r in mine)
