"""The compatible probe (iowitness_compat.bpf.o, for kernels back to 5.8) on this kernel.

The whole kernel tier can record through it (`pytest --probe compat`); these tests run in
every tier: the choice made by probing, the same calls recorded by both objects against what
the workloads did, and what the compatible object leaves out counted exactly, never dropped.
"""

from __future__ import annotations

import errno
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from iowitness import probes
from iowitness.collector import kfeatures
from tests.support.blockdev import loop_ext4
from tests.support.cli import iowitness
from tests.support.workload import build


def _direct_io_works(directory: Path) -> bool:
    try:
        fd = os.open(directory / ".odirect", os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
    except OSError as e:
        if e.errno == errno.EINVAL:
            return False
        raise
    os.close(fd)
    (directory / ".odirect").unlink()
    return True


@pytest.fixture
def disk_dir(tmp_path):
    """A directory on ext4 (O_DIRECT and page-cache advice work there), the test's own when it can."""
    if _direct_io_works(tmp_path):
        yield tmp_path
        return
    with loop_ext4(64) as (_, mnt):
        yield mnt


def test_the_choice_is_made_by_probing_this_kernel(monkeypatch):
    # GIVEN this kernel's BTF and its BPF (6.18 here: every feature of the fast object)
    monkeypatch.delenv(kfeatures.ENV, raising=False)
    # WHEN the tracepoints' arguments and the fast object's needs are probed
    # THEN the BTF reader sees the arguments the programs rely on
    assert kfeatures.tracepoint_args("sched_switch") == 4       # prev_state (5.18+)
    assert kfeatures.tracepoint_args("block_rq_issue") == 1     # the request alone (5.11+)
    assert kfeatures.tracepoint_args("sys_enter") == 2
    assert kfeatures.tracepoint_args("no_such_tracepoint") == 0
    assert kfeatures.has_kfunc("bpf_rdonly_cast") and not kfeatures.has_kfunc("no_such_kfunc")
    # AND nothing is missing, so auto takes the fast object; asked for, the compatible one
    assert kfeatures.missing(kfeatures.FAST_NEEDS) == []
    assert kfeatures.missing(kfeatures.BOTH_NEED) == []
    assert kfeatures.choose().object == probes.OBJECT
    assert kfeatures.choose("compat").object == probes.COMPAT_OBJECT
    monkeypatch.setenv(kfeatures.ENV, "compat")
    assert kfeatures.choose().path == "compat"
    monkeypatch.setenv(kfeatures.ENV, "fastest")
    with pytest.raises(Exception, match="one of auto, fast, compat"):
        kfeatures.choose()


def test_both_objects_record_the_same_calls_as_dd_made(traced, tmp_path):
    # GIVEN dd writing 64 blocks of 64 KiB and reading them back, recorded once by each object
    target = tmp_path / "f"
    runs = {}
    for path in ("fast", "compat"):
        target.unlink(missing_ok=True)
        write, _ = traced(["dd", "if=/dev/zero", f"of={target}", "bs=64k", "count=64", "conv=fsync", "status=none"],
                          "--probe", path, "--file", str(target))
        read, _ = traced(["dd", f"if={target}", "of=/dev/null", "bs=64k", "status=none"],
                         "--probe", path, "--file", str(target))
        runs[path] = (write, read)
    for path, (write, read) in runs.items():
        # THEN each trace says which object made it
        assert write.meta["probe_path"]["path"] == path
        # AND has dd's calls: 64 writes of 65,536 bytes and an fsync; 64 full reads and the
        # read of 0 at the end of the file
        w = write.events[write.events["path"].astype(str) == str(target)]
        r = read.events[read.events["path"].astype(str) == str(target)]
        assert Counter(w["syscall"].astype(str))["write"] == 64, path
        assert int(w[w["syscall"].astype(str) == "write"]["ret"].sum()) == 64 * 65536, path
        assert Counter(w["syscall"].astype(str))["fsync"] == 1, path
        reads = r[r["syscall"].astype(str) == "read"]
        assert list(reads["ret"]) == [65536] * 64 + [0], path
        assert (reads["offset"].diff().dropna() == 65536).all(), path
        assert write.lost == 0 and read.lost == 0


def test_the_compatible_object_counts_the_libaio_requests_it_does_not_follow(traced, tmp_path, disk_dir):
    # GIVEN aio_known: 63 libaio requests on aio.dat, each logged by the program once reaped
    exe = build("aio_known")
    log = tmp_path / "truth.jsonl"
    target = disk_dir / "aio.dat"
    # WHEN it runs under the compatible object
    trace, _ = traced([str(exe), str(disk_dir), str(log)], "--probe", "compat", "--file", str(target))
    truth = [json.loads(line) for line in log.read_text().splitlines()]
    # THEN no request is in the trace, and every one is counted as not followed, with the reason
    assert len(truth) == 63
    assert not trace.events["syscall"].astype(str).str.startswith("aio_").any()
    assert trace.counters["compat_not_followed"] == 63
    assert trace.counters["async_calls"]["io_submit"]["calls"] == 6
    text = iowitness("report", trace.meta["trace_file"]["path"]).stdout
    assert "63 libaio/io_uring requests or mmaps of targets not followed" in text
    assert "compatible probe" in text


def test_the_compatible_object_counts_mmaps_of_targets(traced, tmp_path, disk_dir):
    # GIVEN mapped_io: a file written with write(2), then mapped twice (see its header)
    exe = build("mapped_io")
    data, log = disk_dir / "mapped.dat", tmp_path / "mapped.jsonl"
    # WHEN it runs under the compatible object
    trace, _ = traced([str(exe), str(data), "1024", str(log)], "--probe", "compat", "--file", str(data))
    truth = [json.loads(line) for line in log.read_text().splitlines()]
    mmaps = [t for t in truth if t.get("call") == "mmap"]
    # THEN each mmap of the target is counted, and its write(2) calls are still recorded
    assert len(mmaps) == 2
    assert trace.counters["compat_not_followed"] == len(mmaps)
    events = trace.events[trace.events["path"].astype(str) == str(data)]
    written = events[events["syscall"].astype(str) == "write"]
    assert int(written["ret"].sum()) == 1024 * 1024
