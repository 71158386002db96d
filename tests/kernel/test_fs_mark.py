"""fs_mark, a benchmark the project was not written for (Debian's fsmark): its files/sec lines
read with docs/specs/fs_mark.toml, each judged over its own loop's files on the output
timeline. Ground truth: fs_mark's own count of files per loop, and the files on disk."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from iowitness.analysis.judge import trace_verdicts as judged
from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel

SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "fs_mark.toml"
FILES = 200     # per loop
LOOPS = 2


def test_each_loops_files_per_second_is_judged_over_that_loops_files(tmp_path):
    fs_mark = require_tool("fs_mark")
    # GIVEN fs_mark making 2 loops of 200 files of 16 KiB, each written, fsynced and closed
    # (fs_mark refuses a directory path of 40 bytes or more: pytest's are longer)
    work = tempfile.mkdtemp(prefix="iow-fsm-", dir="/tmp")
    out = tmp_path / "fsmark.iwt"
    try:
        iowitness("run", "-q", "-o", str(out), "--", fs_mark, "-d", work, "-n", str(FILES), "-s", "16384",
                  "-L", str(LOOPS), "-S", "1", "-t", "1", cwd=tmp_path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    trace = load(out)
    # WHEN its claims are judged with the shipped spec
    verdicts = judged.verdicts(trace, spec=str(SPEC))
    # THEN one claim per loop, each on the phases of that loop's files (and of the log fs_mark
    # writes in its cwd beside them), no phase twice, placed on the output timeline, and each fits
    assert [v.claim.test for v in verdicts] == [f"files up to {FILES * k}" for k in range(1, LOOPS + 1)]
    phases = trace.phases().set_index("phase")
    made = [{p for p in v.phases if str(phases.loc[p, "path"]).startswith(work + "/")} for v in verdicts]
    assert [len(m) for m in made] == [FILES] * LOOPS and not made[0] & made[1], [len(m) for m in made]
    assert not set(verdicts[0].phases) & set(verdicts[1].phases)
    for v in verdicts:
        assert v.claim.printed_ns is not None
        assert v.verdict == "agrees", (v.claim.printed, v.verdict, v.ratio, v.reasons)
    # AND check exits 0
    assert iowitness("check", "--spec", str(SPEC), str(out), check=False).returncode == 0
