"""IOzone -a phases of one call (record = file size) judged by the calls around them
(analysis/benchmarks/iozone_bounds.py): a real IOzone sweep under real probes.

Ground truth from iozone.c (read_perf_test): IOzone seeks to 0, reads its clock, reads, reads
its clock again, then fsyncs and closes the file outside its window (no -e, no -c): the call
before a read test's loop is an lseek and the call after it an fsync.
"""

from __future__ import annotations

from tests.conftest import require_tool
from tests.support.cli import iowitness


def test_one_call_iozone_phases_are_bounded_by_the_calls_around_them(traced, workdir):
    # GIVEN IOzone -a from 64 KiB to 256 KiB files, every record size from 64 KiB up: the
    # tests whose record is the file size are a single call of some µs
    iozone = require_tool("iozone")
    trace, _ = traced([iozone, "-a", "-n", "64k", "-g", "256k", "-y", "64k", "-i", "0", "-i", "1",
                       "-f", str(workdir / "iozone.tmp")])
    phases = trace.phases()
    single = phases[phases["ops"] == 1]
    assert len(single) >= 4 * 3   # write, rewrite, read, reread of each file size at record = size
    # WHEN checked
    shown = iowitness("check", trace.meta["path"], check=False).stdout.splitlines()
    # THEN no claim is left unjudged for being too short
    assert not [line for line in shown if line.startswith("CANNOT JUDGE")], shown
    # AND each read of one call is judged by the lseek before it and the fsync after it
    reads = [line for line in shown if line.split()[1] in ("read", "reread")
             and "records, " in line and "bounded by the calls around it" in line]
    assert reads, shown
    for line in reads:
        assert "from the end of the lseek before to the start of the fsync after" in line, line
