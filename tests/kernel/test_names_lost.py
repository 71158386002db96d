"""70,000 new files with the default settings: the probe's meta ring cannot take every file's
open record, and what is said is what happened (issue 32): every call is in the trace (the
count crowd's arguments give: open, write, close per file), some files have no name, and no
line says calls were missed.

Workload: tests/workloads/crowd.c (`crowd files DIR N`: N files, one 4096-byte write each).
The issue's run made 70,000 files; 20,000 already lose thousands of names here, in 10 s.
"""

from __future__ import annotations

import pytest

from iowitness.analysis.read.run import load
from tests.support.cli import iowitness
from tests.support.workload import build

pytestmark = pytest.mark.kernel
FILES = 20_000   # the 70,000 lost 55 %; 20,000 lose about a third here, in a third of the time


def test_file_names_lost_are_said_as_names_not_as_calls_missed(tmp_path, workdir):
    crowd = build("crowd")
    trace_path = tmp_path / "t.iwt"
    # GIVEN crowd creating 70,000 files, traced with the default settings
    run = iowitness("run", "-o", str(trace_path), "--", str(crowd), "files", str(workdir), str(FILES), timeout=600)
    trace = load(trace_path)
    lost_names = int(trace.counters.get("lost_meta", 0))
    if not lost_names:
        pytest.skip("this machine drained every file's open record in time: nothing to say (the issue's run lost 55 %)")
    # THEN every call is there (3 per file) and none counts as lost
    assert trace.event_count == 3 * FILES and trace.lost == 0
    # AND the run's last line and show say names were lost, never that calls were missed
    # (check's words: tests/unit/test_output_kinds.py, on a trace of a few events)
    shown = iowitness("show", str(trace_path)).stdout
    for text in (run.stderr, shown):
        assert f"{lost_names:,} file-open and process records lost" in text
        assert "misses calls" not in text and "events lost" not in text
    # AND the events without a name are no more than the opens lost could leave nameless
    unnamed = int((trace.events["path"].astype(str).isin(["", "nan"]) | trace.events["path"].isna()).sum())
    assert 0 < unnamed <= 3 * lost_names
