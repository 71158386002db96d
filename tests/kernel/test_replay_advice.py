"""Page-cache advice (posix_fadvise, readahead) recorded by the real probe and replayed.

A benchmark that drops a file's pages before it reads them (fio's invalidate=1 default) reads
from the disk; a replay that skipped the advice read the same calls from the page cache, about
70 % faster. Ground truth: advice_known logs every piece of advice it gives, with its
arguments, and the kernel's own mincore says which of the file's pages are cached."""

from __future__ import annotations

import ctypes
import mmap
import os

import pytest

from iowitness.analysis.read.run import load
from tests.support.cli import iowitness
from tests.support.workload import build

ADVICE = ("fadvise64", "readahead")


def resident_pages(path) -> int:
    """How many of the file's pages are in the page cache (mincore(2) on a mapping of it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    size = os.path.getsize(path)
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        vec = ctypes.create_string_buffer(pages)
        assert libc.mincore(addr, size, vec) == 0, os.strerror(ctypes.get_errno())
        libc.munmap(addr, size)
    finally:
        os.close(fd)
    return sum(b & 1 for b in vec.raw)


def advice_of(events) -> list[tuple[str, int, int, int, int]]:
    names = events["syscall"].astype(str)
    rows = events[names.isin(ADVICE)].sort_values("start_ns")
    return [(str(r.syscall), int(r.offset), int(r.requested), int(r.flags), int(r.ret)) for r in rows.itertuples()]


@pytest.mark.parametrize("player", ["native", "python"])
def test_advice_is_recorded_and_replayed_with_its_arguments(tmp_path, player):
    # GIVEN advice_known run under iowitness: it writes a 1 MiB file, drops it from the page
    # cache, reads ahead, advises WILLNEED, reads, and drops it again
    exe = build("advice_known")
    work = tmp_path / "w"
    work.mkdir()
    log = tmp_path / "truth.txt"
    original = tmp_path / "orig.iwt"
    iowitness("run", "-q", "-o", str(original), "--file", str(work), "--", str(exe), str(work), str(log), timeout=300)
    truth = [(name, int(o), int(n), int(a), int(r)) for name, o, n, a, r in
             (line.split() for line in log.read_text().splitlines())]
    assert len(truth) == 4
    # THEN the original's trace holds each piece of advice with the arguments the workload gave
    assert advice_of(load(original).events) == truth
    # WHEN replayed into a new directory
    into = tmp_path / "into"
    iowitness("replay", "-q", str(original), "--into", str(into), "-o", str(tmp_path / "replay.iwt"),
              "--timing", "fast", "--player", player, timeout=300)
    # THEN the replay gave the same advice, in the same order, with the same arguments
    assert advice_of(load(tmp_path / "replay.iwt").events) == truth
    # AND the replayed file ends out of the page cache, as the original's did: the kernel's
    # mincore finds none of its 256 pages, where a replay without the advice left them cached
    assert os.path.getsize(into / "advice.dat") == 1 << 20
    assert resident_pages(work / "advice.dat") == 0
    assert resident_pages(into / "advice.dat") == 0


def block_read_bytes(trace) -> int:
    """Bytes the trace's block layer records read for its traced threads (ground truth of a
    read that missed the page cache: the device was asked for the data)."""
    t = load(trace)
    block = t.block if t.block is not None else []
    tids = set(t.events["tid"].tolist())
    return sum(int(b["bytes"]) for b in block if int(b["op"]) == 0 and int(b["tid"]) in tids)


@pytest.mark.parametrize("cold", [True, False])
def test_a_file_found_cold_is_replayed_cold_and_one_found_cached_cached(tmp_path, cold):
    # GIVEN a 4 MiB file made before the recording, written to disk, and then dropped from the
    # page cache (posix_fadvise DONTNEED) or read once so that it is cached
    work = tmp_path / "w"
    work.mkdir()
    data = work / "in.dat"
    data.write_bytes(os.urandom(4 << 20))
    fd = os.open(data, os.O_RDONLY)
    os.fsync(fd)
    if cold:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    else:
        while os.read(fd, 1 << 20):
            pass
    os.close(fd)
    assert resident_pages(data) == (0 if cold else 1024)
    # WHEN dd reads it under iowitness, and the trace is replayed
    original = tmp_path / "orig.iwt"
    iowitness("run", "-q", "-o", str(original), "--file", str(work), "--",
              "dd", f"if={data}", "of=/dev/null", "bs=64k", timeout=300)
    replayed = tmp_path / "replay.iwt"
    iowitness("replay", "-q", str(original), "--into", str(tmp_path / "into"), "-o", str(replayed),
              "--timing", "fast", timeout=300)
    # THEN the original read the file from the disk when it was cold (the block layer's reads
    # by dd's thread cover it), and from memory when it was cached, and so did the replay
    for trace in (original, replayed):
        if cold:
            assert block_read_bytes(trace) >= 3 << 20, trace   # 4 MiB, less any a kworker sent
        else:
            assert block_read_bytes(trace) < 256 << 10, trace
