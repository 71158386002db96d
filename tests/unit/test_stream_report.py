"""The phase table made in passes over blocks (analysis/phasing/stream_report.py: events in time order
block by block, phases rebuilt and tabulated) in blocks of 997 rows and in one block against the
loaded trace's report, on a trace written by the collector's own TraceWriter; its refusals. Real
runs: tests/kernel/test_stream_report_real.py."""

from __future__ import annotations

import pandas as pd
import pytest

from iowitness.analysis.phasing import stream_report
from iowitness.analysis.read.run import load
from tests.support.bench import script
from tests.support.trace_mutants import write_summary_trace


@pytest.fixture(scope="module")
def iozone_trace(tmp_path_factory):
    """An IOzone-shaped trace (iozone -t 4 -i0 -i1 -i2, three rounds) of 60,000 events."""
    path = tmp_path_factory.mktemp("stream") / "iozone.iwt"
    script("report_10m").build_trace(path, 60_000, 4, 3)
    return path


@pytest.mark.parametrize("rows", [997, 1 << 20])
def test_the_streamed_table_is_the_loaded_one(iozone_trace, rows):
    # WHEN the phase table is made block by block, THEN it is the in-memory one, column for column
    streamed = stream_report.phase_table(iozone_trace, block_rows=rows)
    pd.testing.assert_frame_equal(streamed, load(iozone_trace).report().phases, check_exact=True)


# (`report --csv --stream` against `report --csv`, and the same of a --summary trace, went: --stream
# is kept for old scripts and does nothing, every form reads block by block, so they ran one command
# twice. The HTML page in small blocks against one block: test_stream_full.py, on every trace of its
# module; its bins in blocks of 7 rows: test_chart_bins.py)


def test_a_summary_trace_has_no_phase_table(tmp_path):
    # GIVEN a --summary trace: no events, the kernel's aggregates
    path = tmp_path / "summary.iwt"
    write_summary_trace(path)
    # THEN there is no phase table to make from events (report prints the aggregates' own tables:
    # test_summary_trace.py)
    assert stream_report.phase_table(path) is None


def test_no_room_for_the_temporary_files_is_one_line_and_no_crash(iozone_trace, monkeypatch):
    # GIVEN a temporary directory whose file system is full (posix_fallocate: ENOSPC; before
    # the blocks were allocated up front, a write through the mapping died of SIGBUS)
    import errno
    import os

    from iowitness.analysis.phasing import stream_walk
    from iowitness.errors import OutputError

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(stream_walk.os, "posix_fallocate", full)
    # WHEN the table is streamed, THEN the error says where and what to do, as an output error
    with pytest.raises(OutputError, match="No space left on device.*TMPDIR"):
        stream_report.phase_table(iozone_trace)


def test_a_loaded_trace_whose_temporary_folder_is_missing_is_one_line(iozone_trace, tmp_path, monkeypatch):
    # GIVEN a trace loaded whole (the Python API, a run over several hosts) and a $TMPDIR that
    # does not exist
    import tempfile

    from iowitness.analysis.measure import stream_full
    from iowitness.analysis.read.run import load
    from iowitness.errors import OutputError

    trace = load(iozone_trace)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    # WHEN its report is built, THEN the error says where and what to do, as for a trace file
    with pytest.raises(OutputError, match="gone.*TMPDIR"):
        stream_full.build(trace)
