"""fio engines and options the other tests do not cover, tried as an outsider would, each on a
real run: the ground truth is fio's own count of its requests (its "issued rwts" line) and its
bytes, read by the test, against the trace's calls or faults."""

from __future__ import annotations

import re

import pytest

from iowitness import load
from tests.conftest import require_tool
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel


def _fio(tmp_path, *options):
    """fio's normal output and the trace of one job on an 8 MiB file of tmp_path."""
    fio = require_tool("fio")
    trace = tmp_path / "fio.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", fio, "--name=job", f"--filename={tmp_path / 'data.bin'}",
                    "--size=8M", *options, timeout=120, cwd=str(tmp_path))
    issued = [int(n) for n in re.search(r"issued rwts: total=(\d+),(\d+),", run.stdout).groups()]
    return run.stdout, issued, trace


def test_mmap_random_reads_fault_once_each_and_their_latency_says_why_it_is_untimed(tmp_path):
    # GIVEN fio's mmap engine reading 4 KiB pages at random: a copy from the mapping per request
    # (no call), fio invalidating the file's cache first and advising random access
    out, (reads, _), trace = _fio(tmp_path, "--ioengine=mmap", "--rw=randread", "--bs=4k")
    events = load(trace).events
    faults = events[events["syscall"] == "fault_read"]
    # (each of fio's requests faulted its page once, and the faults mapped the whole file)
    assert len(faults) == reads == 2048 and int(faults["requested"].sum()) == 8 << 20
    # WHEN checked
    check = iowitness("check", "-v", str(trace), check=False)
    lines = [x for x in check.stdout.splitlines() if not x.startswith(" ")]
    # THEN the rate (first fault to last) is judged, never a DISAGREES; the latency cannot be:
    # the trace records when each fault happened, not how long it took, and it says so with
    # fio's count beside the faults'. That CANNOT JUDGE is what makes check exit 1
    assert "DISAGREES" not in check.stdout and check.returncode == 1, check.stdout
    rate, latency = lines
    assert rate.startswith(("AGREES", "EXPLAINED")), rate
    assert latency.startswith("CANNOT JUDGE") and "not how long it took" in latency, latency
    assert f"(fio counted {reads:,} requests, the trace {reads:,} faults)" in latency, latency
