"""hdparm -T on a raw disk, judged with docs/specs/hdparm.toml: its clock starts before its loop's
first lseek, and on a busy machine a wait for a CPU there lands in its figure and in no call
(analysis/judge/rate_edges.py). The figure is judged between the calls' and the widest window
the calls around the loop allow: it agrees, or is explained by the waits the off-CPU records
show there, or cannot be judged; never DISAGREES.

Ground truth: hdparm's own MB count (2^20 bytes) is the bytes of its timed 2 MiB reads, every
read of the trace but the one that primes the cache (hdparm.c, time_cache)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iowitness import load
from tests.conftest import require_tool
from tests.support.blockdev import loop_raw
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel

SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "hdparm.toml"
MIB = 1 << 20


def test_hdparm_cached_reads_are_judged_between_the_calls_and_the_edges_never_disagree(tmp_path):
    hdparm = require_tool("hdparm")
    with loop_raw(16) as disk:
        trace = tmp_path / "hdparm.iwt"
        run = iowitness("run", "-o", str(trace), "--", hdparm, "-T", disk, timeout=180)
        events = load(trace).events
        check = iowitness("check", "-v", "--spec", str(SPEC), str(trace), check=False)
    said = re.search(r"Timing cached reads:\s+([\d.]+) MB in\s+([\d.]+) seconds", run.stdout)
    assert said, run.stdout
    reads = events[events["syscall"].astype(str) == "read"]
    assert (reads["ret"] == 2 * MIB).all()
    # hdparm's MB are its timed reads: all the reads but the priming one
    assert float(said.group(1)) * MIB == int(reads["ret"].sum()) - 2 * MIB
    verdict = check.stdout.splitlines()[0]
    assert "cached reads" in verdict and "Traceback" not in check.stderr, check.stdout + check.stderr
    assert not verdict.startswith("DISAGREES"), check.stdout
    # an edge's verdict names the edges it used
    if not verdict.startswith("AGREES"):
        assert "at the edge" in check.stdout, check.stdout
