"""A run as pandas sees it: the trace reader's arrays as tables, and the report built on them.

    >>> from iowitness.analysis.read.run import load
    >>> t = load("run.iwt")        # what iowitness.load returns
    >>> t.events                   # one row per syscall
    >>> t.events(phase=3)          # the calls of one phase
    >>> t.phases(), t.files, t.processes

The numbers are those the reader read (collector/format/tracereader.py); this module only names
them (syscalls, devices, paths: analysis/read/trace_view.py) and hands them to the analysis.
"""

from __future__ import annotations

import weakref
from functools import cached_property

import numpy as np
import pandas as pd

from iowitness.analysis.read import memory_guard
from iowitness.analysis.read.trace_view import TraceView
from iowitness.collector.format.traceformat import json_bytes
from iowitness.collector.format.tracereader import read
from iowitness.outputfile import Output


class Trace(TraceView):
    """A loaded trace: what every trace shows (TraceView), and its events table."""

    def raw_events(self) -> np.ndarray:
        """The event records as a numpy structured array, row for row as `events` (padding zeroed)."""
        return self._data.raw_events()

    @cached_property
    def events(self) -> pd.DataFrame:
        frame = self.event_frame(self._columns, pd.RangeIndex(len(self._columns["start_ns"])), EventTable)
        object.__setattr__(frame, "_trace", weakref.ref(self))
        return frame

    def report(self):
        """Phases, groups and outliers (iowitness.analysis.report.Report): the block pipeline over
        the events table, once."""
        if self._report is None:
            from iowitness.analysis.measure.stream_full import build
            self._report = build(self)
        return self._report

    def has_data_calls(self) -> bool:
        """Whether any read, write, asynchronous request or page fault on a target was recorded."""
        from iowitness.analysis.phasing.phases import FAULTS, READS, WRITES

        events = self.events
        return bool(len(events)) and bool(events["syscall"].isin(READS + WRITES + FAULTS).any())


class EventTable(pd.DataFrame):
    """A DataFrame that can also be called: trace.events(phase=3) gives one phase's events."""

    _metadata = ["_trace"]

    @property
    def _constructor(self):
        return pd.DataFrame

    def __call__(self, phase: int | None = None) -> pd.DataFrame:
        if phase is None:
            return pd.DataFrame(self)
        return pd.DataFrame(self[self._trace().report().event_phases() == phase])


def load(path) -> Trace:
    """Read a .iwt file into a Trace (BadTrace when it cannot be read at all; TooLarge, before
    reading, when its events certainly cannot fit in this machine's memory)."""
    memory_guard.check(path)
    return Trace(read(path, afford=lambda events: memory_guard.check_declared(path, events)))


def export_parquet(trace: TraceView, out, blocks=None) -> None:
    """Write the events table to Parquet, with the trace metadata under the key b"iowitness".
    `out`: a path, or an iowitness.outputfile.Output (created fresh, never through a symlink).
    `blocks`: the events table block by block instead of trace.events (stream_events' blocks(),
    at least one): a row group per block, one block held at a time; the file reads back as the
    same table, with the same metadata (tests/unit/test_export_file_stream.py)."""
    from iowitness.extras import require

    pa = require("pyarrow", "parquet", "Parquet export")
    pq = require("pyarrow.parquet", "parquet", "Parquet export")

    if blocks is None:
        events = trace.events  # type: ignore[attr-defined]  # without blocks: a loaded Trace
        table = pa.Table.from_pandas(events, preserve_index=False)
        metadata = {**(table.schema.metadata or {}), b"iowitness": json_bytes(trace.meta)}
        table = table.replace_schema_metadata(metadata)

        def produce(f) -> None:
            pq.write_table(table, f)
    else:
        import itertools

        from iowitness.analysis.runs.dataset import row_groups_by_block

        blocks = iter(blocks)
        first = next(blocks)
        # pandas' own metadata (dtypes, categories) is the whole table's: every block has the
        # trace's columns and categories
        pandas = pa.Schema.from_pandas(first, preserve_index=False).metadata or {}
        produce = row_groups_by_block(itertools.chain([first], blocks),
                                      {**pandas, b"iowitness": json_bytes(trace.meta)})
        del first   # the writer drops it once written
    (out if isinstance(out, Output) else Output(out)).write(produce)
