"""Memory-mapped target files: the mapping calls and the page faults, against ground truth.

Ground truth: what tests/workloads/mapped_io.c logs of its own calls (addresses, ranges,
flags) and of each pass (pages touched, pages resident before the read by mincore, the
process's minor and major fault counts by getrusage); IOzone's mmap paths as its source
(iozone.c, version 3.489) writes them; the file's size; /proc/diskstats read by the test.
Every loop device and mount is removed by tests/support/blockdev.py, even on failure.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import require_tool
from tests.support.blockdev import diskstats, loop_ext4
from tests.support.workload import build

KIB, MIB = 1 << 10, 1 << 20
PROT_READ, PROT_WRITE = 1, 2
MAP_SHARED, MAP_PRIVATE = 1, 2
MS_SYNC, MADV_DONTNEED = 4, 4
# probes/events.h: IOW_MMAP_FLAGS_SHIFT and IOW_FAULT_*
FLAGS_SHIFT = 8
MAJOR, LATENCY_UNKNOWN, IN_KERNEL, AROUND, AROUND_COUNTED = 1, 2, 4, 8, 16


@pytest.fixture(scope="module")
def disk():
    with loop_ext4(64) as (device, mnt):
        yield device, mnt


def _ops(events, *names):
    return events[events["syscall"].astype(str).isin(names)].sort_values("start_ns")


def _between(events, after, before):
    """The events that started after record `after` ended and before record `before` started."""
    return events[(events["start_ns"] > after.end_ns) & (events["start_ns"] < before.start_ns)]


def _covers_exactly(faults, start: int, size: int) -> bool:
    """The faults' [offset, offset + requested) ranges tile [start, start + size) with no overlap."""
    edge = start
    for offset, requested in sorted(zip(faults["offset"].astype(int), faults["requested"].astype(int))):
        if offset != edge:
            return False
        edge = offset + requested
    return edge == start + size


def test_mapped_io_calls_and_faults_match_what_the_program_did(disk, traced, tmp_path):
    # GIVEN mapped_io on an 8 MiB file of a fresh ext4: written with write(2), stored to once a
    # page through a shared mapping, msync'ed and unmapped, dropped from the page cache, read
    # once a page through a read-only mapping, half advised away, 64 KiB of that half copied
    # into another file with write(2), unmapped
    _, mnt = disk
    exe = build("mapped_io")
    data, log = mnt / "mapped.dat", tmp_path / "mapped.jsonl"
    size = 8 * MIB
    # WHEN it runs under iowitness
    trace, _ = traced([str(exe), str(data), str(size // KIB), str(log)], "--file", str(data))
    truth = [json.loads(line) for line in log.read_text().splitlines()]
    calls = [t for t in truth if "call" in t]
    write_pass, read_pass = (next(t for t in truth if t.get("pass") == p) for p in ("write", "read"))
    events = trace.events[trace.events["path"].astype(str) == str(data)]

    # THEN each mapping call is in the trace once, with the file range it named
    mapping = _ops(events, "mmap", "munmap", "msync", "madvise")
    assert list(mapping["syscall"].astype(str)) == [c["call"] for c in calls]
    for c, e in zip(calls, mapping.itertuples()):
        assert (int(e.offset), int(e.requested)) == (c["offset"], c["length"]), c
        if c["call"] == "mmap":
            assert int(e.ret) == c["ret"] and int(e.fd) >= 0
            assert int(e.flags) == c["prot"] | c["flags"] << FLAGS_SHIFT
        else:
            assert int(e.ret) == c["ret"] == 0 and int(e.fd) == -1
            assert int(e.flags) == c["flags"]
    mmap1, msync, munmap1, mmap2, madvise, munmap2 = mapping.itertuples()

    # AND the write pass: write faults only, none major (the file was in the page cache), as
    # many as the kernel counted for the process, tiling the whole file exactly
    writing = _between(events, mmap1, msync)
    assert set(writing["syscall"].astype(str)) == {"fault_write"}
    assert len(writing) == write_pass["minflt"] + write_pass["majflt"]
    assert write_pass["majflt"] == 0 and not (writing["flags"] & MAJOR).any()
    assert _covers_exactly(writing, 0, size)
    assert int(writing["requested"].sum()) == size

    # AND the read pass of the cold file: read faults, as many as the kernel counted, at
    # least as many major ones as the kernel's count (which leaves out a fault waiting for a
    # read already in flight). Each also maps the cached pages around it (fault-around), which
    # then never fault: counted in the fault's bytes, the faults' bytes are the file's, once
    # (where in its window each counted page lies the probe cannot say: offsets are windows)
    assert read_pass["resident_before"] == 0
    reading = _between(events, mmap2, madvise)
    assert set(reading["syscall"].astype(str)) == {"fault_read"}
    assert len(reading) == read_pass["minflt"] + read_pass["majflt"]
    majors = int((reading["flags"] & MAJOR).astype(bool).sum())
    assert read_pass["majflt"] >= 1 and majors >= read_pass["majflt"]
    assert (reading["flags"] & AROUND).all()
    assert int(reading["requested"].sum()) == size
    assert ((reading["offset"] >= 0) & (reading["offset"] < size)).all()
    # AND those faults are what read the file from the device: the block requests completed
    # during the read pass (the device view) carry the file, once
    block = trace.block
    device_reads = block[(block["op"] == 0) & (block["start_ns"] > mmap2.end_ns) &
                         (block["complete_ns"] < madvise.start_ns)]
    assert abs(int(device_reads["bytes"].sum()) - size) <= 64 * KIB

    # AND write(2) from the advised-away half made the kernel fault those pages in itself:
    # read faults taken in kernel mode, inside the 64 KiB it copied
    copied = next(t for t in truth if "copied" in t)
    in_kernel = _between(events, madvise, munmap2)
    assert len(in_kernel) >= 1 and set(in_kernel["syscall"].astype(str)) == {"fault_read"}
    assert (in_kernel["flags"] & IN_KERNEL).all()
    assert int(in_kernel["requested"].sum()) == copied["length"]
    assert ((in_kernel["offset"] >= copied["offset"]) &
            (in_kernel["offset"] < copied["offset"] + copied["length"])).all()
    assert not (_ops(events, "fault_read", "fault_write").drop(in_kernel.index)["flags"] & IN_KERNEL).any()

    # AND every fault has an unknown latency, said so, and no fd
    faults = _ops(events, "fault_read", "fault_write")
    assert (faults["flags"] & LATENCY_UNKNOWN).all() and (faults["latency_ns"] == 0).all()
    assert (faults["fd"] == -1).all()
    # AND nothing was lost or left undecoded
    assert trace.counters["lost_events"] == 0 and trace.counters["transfers_not_decoded"] == 0


def test_iozone_mmap_mode_faults_calls_and_device_bytes(disk, traced, tmp_path):
    # GIVEN IOzone's mmap mode (-B): write/rewrite and read/reread of a 16 MiB file, 64 KiB
    # records, kept (-w). Its source (iozone.c): write_perf_test opens the file, initfile()
    # writes the last record with write(2) and maps the file PROT_READ|PROT_WRITE, MAP_SHARED;
    # each record is copied into the mapping; then msync(whole, MS_SYNC), munmap(whole),
    # close; twice. read_perf_test maps it PROT_READ, MAP_PRIVATE, copies each record out,
    # then msync(whole, MS_SYNC), munmap(whole); twice.
    iozone = require_tool("iozone")
    device, mnt = disk
    name = os.path.basename(os.path.realpath(device))
    target = mnt / "iozone.tmp"
    size = 16 * MIB
    os.sync()
    before = diskstats(name)
    # WHEN it runs under iowitness
    trace, _ = traced([iozone, "-B", "-i0", "-i1", "-s", "16m", "-r", "64k", "-f", str(target), "-w"])
    os.sync()
    after = diskstats(name)
    events = trace.events[trace.events["path"].astype(str) == str(target)]

    # THEN the four mappings, their msyncs and munmaps are the ones the source makes
    mmaps = _ops(events, "mmap")
    assert [(int(e.offset), int(e.requested), int(e.flags)) for e in mmaps.itertuples()] == \
        [(0, size, PROT_READ | PROT_WRITE | MAP_SHARED << FLAGS_SHIFT)] * 2 + \
        [(0, size, PROT_READ | MAP_PRIVATE << FLAGS_SHIFT)] * 2
    for op, flags in (("msync", MS_SYNC), ("munmap", 0)):
        done = _ops(events, op)
        assert [(int(e.offset), int(e.requested), int(e.flags), int(e.ret)) for e in done.itertuples()] == \
            [(0, size, flags, 0)] * 4, op
    # AND each write and rewrite pass's write faults tile the file exactly once: the bytes
    # stored through the mapping are the file
    phases = list(zip(mmaps.itertuples(), _ops(events, "msync").itertuples()))
    for mapped, synced in phases[:2]:
        stores = _between(events, mapped, synced)
        stores = stores[stores["syscall"].astype(str).str.startswith("fault")]
        assert set(stores["syscall"].astype(str)) == {"fault_write"}
        assert _covers_exactly(stores, 0, size)
    # AND each read pass's read faults, with the pages fault-around mapped beside them, come
    # to the file exactly once: the bytes loaded through the mapping are the file
    for mapped, synced in phases[2:]:
        loads = _between(events, mapped, synced)
        loads = loads[loads["syscall"].astype(str).str.startswith("fault")]
        assert set(loads["syscall"].astype(str)) == {"fault_read"}
        assert (loads["flags"] & AROUND_COUNTED).all()
        assert int(loads["requested"].sum()) == size
        assert ((loads["offset"] >= 0) & (loads["offset"] < size)).all()
    # AND the device's write bytes in the trace are what /proc/diskstats counted: the two
    # msyncs wrote the file twice (ext4's journal adds a little)
    dev = trace.block[trace.block["op"] == 1]
    device_writes = after["write_bytes"] - before["write_bytes"]
    assert device_writes >= 2 * size
    assert abs(int(dev["bytes"].sum()) / device_writes - 1) <= 0.05
    assert trace.counters["lost_events"] == 0 and trace.counters["transfers_not_decoded"] == 0


def test_summary_mode_counts_the_same_mapping_calls_and_faults(disk, traced, tmp_path):
    # GIVEN mapped_io on a 4 MiB file, run twice: once recorded call by call, once --summary
    _, mnt = disk
    exe = build("mapped_io")
    counts = []
    for i, options in enumerate(((), ("--summary",))):
        data, log = mnt / f"summary{i}.dat", tmp_path / f"summary{i}.jsonl"
        # WHEN each runs under iowitness
        trace, _ = traced([str(exe), str(data), str(4 * MIB // KIB), str(log)], "--file", str(data), *options)
        truth = [json.loads(line) for line in log.read_text().splitlines()]
        if options:
            rows, names = trace.summary, {v: k for k, v in trace._ops.items()}
            assert len(trace.raw_events()) == 0 and trace.lost == 0
            got = {op: int(rows[rows["op"] == names[op]]["calls"].sum()) for op in names}
        else:
            got = trace.events["syscall"].astype(str).value_counts().to_dict()
        calls = {op: got.get(op, 0) for op in ("mmap", "munmap", "msync", "madvise")}
        writes = got.get("fault_write", 0)
        # THEN the mapping calls are those the program logged, and the write faults as many as
        # the kernel counted for its write pass
        assert calls == {"mmap": 2, "munmap": 2, "msync": 1, "madvise": 1}
        write_pass = next(t for t in truth if t.get("pass") == "write")
        assert writes == write_pass["minflt"] + write_pass["majflt"]
        counts.append((calls, writes))
    # AND both modes agree
    assert counts[0] == counts[1]
