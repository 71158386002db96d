"""A trace read block by block (collector/format/tracestream.py) against the whole-file reader.

The reference is collector/tracereader.read on the same file: the streamed trace must hold
the same events (after the same sort by start time), the same meta, and fail the same way,
on whole traces and on damaged ones (tests/support/trace_mutants.py: cut, flipped bits,
odd blocks under good CRCs, decompression bombs, ...).
"""

import numpy as np
import pytest

from iowitness.collector.format import tracereader, tracestream
from iowitness.errors import BadTrace
from tests.support import trace_mutants


def streamed(path, block_rows):
    """(meta, columns in time order) of the file read block by block."""
    with tracestream.open_trace(path, block_rows=block_rows) as stream:
        parts = list(stream.blocks())
        meta, count = stream.data.meta, stream.event_count
    firsts = [b.first_row for b in parts]
    assert firsts == sorted(firsts) and sum(len(b) for b in parts) == count
    columns = {name: np.concatenate([b[name] for b in parts]) if parts else None for name in (parts[0] if parts else {})}
    if columns:
        order = np.argsort(columns["start_ns"], kind="stable")
        columns = {name: column[order] for name, column in columns.items()}
    return meta, columns


def same_as_read(path, block_rows=3):
    try:
        whole = tracereader.read(path)
    except BadTrace as exc:
        with pytest.raises(BadTrace) as caught:
            tracestream.open_trace(path)
        assert str(caught.value) == str(exc)
        return
    meta, columns = streamed(path, block_rows)
    assert meta == whole.meta
    if whole.event_count:
        assert sorted(columns) == sorted(whole.columns)
        for name, column in whole.columns.items():
            assert np.array_equal(columns[name], column), name
    else:
        assert not columns


def test_whole_traces_stream_as_they_read(tmp_path):
    # GIVEN the fuzzer's base traces (a dd run with everything a trace holds, a --summary run)
    bases = trace_mutants.write_bases(tmp_path)
    for name in bases:
        # WHEN each is read whole and block by block (blocks of one chunk, and of everything)
        for rows in (1, 10**9):
            # THEN both readings give the same meta and the same events
            same_as_read(tmp_path / f"{name}.iwt", rows)


def test_damaged_traces_stream_as_they_read(tmp_path):
    # GIVEN 200 damaged copies of the base traces, every kind of damage in turn
    bases = trace_mutants.write_bases(tmp_path)
    for k, (base, how, data) in enumerate(trace_mutants.mutants(bases, 200, seed=18)):
        path = tmp_path / f"mutant-{k}.iwt"
        path.write_bytes(data)
        # WHEN each is read whole and block by block
        # THEN the events kept, the meta (where the reading stopped and why) and any refusal agree
        same_as_read(path)
        path.unlink()


def test_streaming_refuses_what_reading_refuses(tmp_path):
    # GIVEN an empty file, a directory and a missing path
    (tmp_path / "empty.iwt").write_bytes(b"")
    for path in (tmp_path / "empty.iwt", tmp_path, tmp_path / "missing.iwt"):
        # WHEN each is opened for streaming
        with pytest.raises(BadTrace) as streamed_error:
            tracestream.open_trace(path)
        # THEN the one-line error is the whole-file reader's
        with pytest.raises(BadTrace) as read_error:
            tracereader.read(path)
        assert str(streamed_error.value) == str(read_error.value)
