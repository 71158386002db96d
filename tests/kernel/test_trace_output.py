"""Where the trace goes: a one-line warning when it shares a disk with a traced file."""

from __future__ import annotations

import os

import pytest

from iowitness.collector import blockdev
from tests.support.blockdev import loop_fs
from tests.support.cli import iowitness

WARNING = "iowitness: warning: the trace"


def test_a_trace_on_the_disk_of_a_traced_file_is_warned_about(tmp_path):
    # GIVEN dd writing a file traced with --file, the trace next to it
    if blockdev.disk_under(str(tmp_path)) is None:
        pytest.skip(f"{tmp_path} is not on a disk (tmpfs?): nothing to warn about")
    target, trace = tmp_path / "dd.out", tmp_path / "dd.iwt"
    # WHEN recorded
    proc = iowitness("run", "-q", "-o", str(trace), "--file", str(target), "--",
                     "dd", "if=/dev/zero", f"of={target}", "bs=4k", "count=8")
    # THEN one line says the benchmark's device will see the trace's writes
    lines = [line for line in proc.stderr.splitlines() if line.startswith(WARNING)]
    assert len(lines) == 1 and str(trace) in lines[0] and str(target) in lines[0]


def test_a_trace_in_memory_is_not_warned_about(tmp_path):
    # GIVEN the same run with the trace on a tmpfs, which is no disk
    if not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm (tmpfs) on this machine")
    target = tmp_path / "dd.out"
    trace = f"/dev/shm/iowitness-test-{os.getpid()}.iwt"
    try:
        # WHEN recorded
        proc = iowitness("run", "-q", "-o", trace, "--file", str(target), "--",
                         "dd", "if=/dev/zero", f"of={target}", "bs=4k", "count=8")
    finally:
        if os.path.exists(trace):
            os.unlink(trace)
    # THEN no warning
    assert WARNING not in proc.stderr


def test_a_trace_on_the_same_btrfs_disk_as_a_traced_file_is_warned_about(tmp_path):
    # GIVEN btrfs on a loop device (its files carry an anonymous device number, not the disk's)
    with loop_fs("btrfs", 256) as (device, mnt):
        target, trace = mnt / "dd.out", mnt / "dd.iwt"
        # WHEN dd writes a traced file there, the trace next to it
        proc = iowitness("run", "-q", "-o", str(trace), "--file", str(target), "--",
                         "dd", "if=/dev/zero", f"of={target}", "bs=4k", "count=8")
        # THEN the warning names the loop device, the disk both are on (ground truth: losetup)
        lines = [line for line in proc.stderr.splitlines() if line.startswith(WARNING)]
        assert len(lines) == 1 and f"goes to disk {os.path.basename(device)}," in lines[0]
        assert str(target) in lines[0]
