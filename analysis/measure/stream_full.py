"""The whole report of a trace of any size: every form `report` prints (text, JSON, Markdown,
CSV), `check`'s verdicts and `export`'s dataset, from events read block by block.

    with stream_full.open_report("run.iwt") as trace:    # a StreamedTrace: no events table
        report = trace.report()                          # phases, groups, outliers, device view
        verdicts = judged.verdicts(trace)                # evidence read from the blocks as asked

The phase table is analysis/phasing/stream_report.py's. Its last pass over the blocks also gathers what
every form shows besides it (analysis/measure/stream_extras.py: groups, outliers, latency histograms,
open-to-close stretches; the device view's facts, analysis/measure/device.py; the verdicts' evidence
about write phases and reach, analysis/measure/stream_evidence.py). The questions only some claims ask
read the blocks again while the report is open: the temporary files of the phases' rebuild
(analysis/phasing/stream_assign.py) live until it is closed. Each piece is held to the in-memory
function it replaces by its own tests; tests/unit/test_stream_full.py and
tests/kernel/test_stream_report_real.py hold every form of `report`, `check` and `export` (real
IOzone, fio and dd runs in the latter) to the in-memory ones, byte for byte.
"""

from __future__ import annotations

from contextlib import contextmanager

import pandas as pd

from iowitness.analysis import report
from iowitness.analysis.measure import stream_extras
from iowitness.analysis.measure.device import DeviceFacts, from_facts
from iowitness.analysis.measure.stream_evidence import StreamedEvidence
from iowitness.analysis.phasing import stream_assign
from iowitness.analysis.phasing.call_extents import Extents
from iowitness.analysis.phasing.stream_report import (
    BLOCK_ROWS,
    outside_of,
    table_of,
    temporary_files,
)
from iowitness.analysis.read import stream_events


@contextmanager
def open_report(path, block_rows: int = BLOCK_ROWS, charts: bool = False, stretches: bool = True):
    """The trace at `path` as a StreamedTrace whose report() is built block by block (None for
    a --summary trace, which has no events: its report is the kernel's aggregates); valid
    until the `with` ends. `charts`: the report gathers its calls' extents too (the HTML
    page's bins: reporters/chart_bins.py), a pass fewer for the page. `stretches=False`: it
    does not gather the open-to-close stretches' table (report.stretches None), which only the
    text, Markdown and HTML reports show."""
    with stream_events.open_events(path, block_rows=block_rows) as source:
        with report_of(source, path, charts, stretches) as trace:
            yield trace


@contextmanager
def report_of(source, path, charts: bool = False, stretches: bool = True):
    """source.trace, whose report() is built from the source's blocks when first asked for
    (None for a --summary trace); valid until the `with` ends. `source`: anything with the
    blocks of stream_events.EventSource (a run over several hosts: analysis/runs/merged_trace.py);
    `path`: the trace's file, "" when there is none; `charts`, `stretches`: as open_report's."""
    if source.trace_data.summary is not None:
        yield None
        return
    # built when first asked for (trace.report()): a check whose trace captured no claim
    # reads no block
    lazy = _Lazy(source, path, charts, stretches)
    source.trace._build_report = lazy.build
    try:
        yield source.trace
    finally:
        lazy.close()


class _Lazy:
    """The report of an open source, built on the first trace.report(); its temporary files
    (the phases' rebuild) live until close()."""

    def __init__(self, source, path, charts: bool, stretches: bool):
        self._source, self._path, self._charts, self._assigned = source, path, charts, None
        self._stretches = stretches

    def build(self) -> report.Report:
        # the temporary files are written while the report is built: a full $TMPDIR then is
        # said as such (not an error of what the caller does with the report afterwards)
        with temporary_files(self._path):
            self._assigned = stream_assign.assign(self._source, outside_of(self._source.meta))
            return _build(self._source, self._assigned, self._charts, self._stretches)

    def close(self) -> None:
        if self._assigned is not None:
            self._assigned.close()
            self._assigned = None


def release(trace) -> None:
    """The report of a trace opened by report_of dropped and its temporary files removed now,
    before the `with` ends: a host's own process (analysis/runs/host_workers.py) ends without it."""
    lazy = getattr(getattr(trace, "_build_report", None), "__self__", None)
    if isinstance(lazy, _Lazy):
        lazy.close()
    trace._report = None


def build(trace) -> report.Report:
    """The report of a trace held in memory (analysis/read/run.py Trace: the Python API's
    `trace.report()`; anything with `events` and `meta`),
    built by the same passes as a file's, over its events table in blocks. The temporary files
    of the phases' rebuild live as long as the report."""
    source = stream_events.LoadedSource(trace)
    with temporary_files(""):
        assigned = stream_assign.assign(source, outside_of(source.meta))
        return _build(source, assigned, charts=True)


def _build(source, assigned, charts: bool = False, stretches: bool = True) -> report.Report:
    trace = source.trace
    command, benchmark, module = report.benchmark_of(source.meta)
    gathered = _Gathered(trace, assigned, module, command, charts, stretches)
    table = table_of(source, assigned, rider=gathered.start)
    extras, evidence = gathered.extras.finish(), gathered.evidence
    evidence.finish()
    trace.data_calls_seen = evidence.data_calls_seen
    return report.Report(table, extras.groups, extras.outliers, benchmark, trace,
                         device=from_facts(trace, table, gathered.facts), evidence=evidence,
                         histograms=extras.histograms, stretches=extras.stretches, t0=extras.t0,
                         event_blocks=assigned.blocks, chart_extents=gathered.extents_of_calls,
                         phase_keys_ns=assigned.phase_keys_ns)


class _Gathered:
    """What every form shows besides the phase table, gathered in one pass over the blocks (the
    phase table's last, stream_table's rider): made from the finished table, copied (the kernel
    columns, groups and names are added to the report's own afterwards)."""

    def __init__(self, trace, assigned, module, command, charts: bool = False, stretches: bool = True):
        self._trace, self._assigned, self._module, self._command = trace, assigned, module, command
        self._charts, self._stretches, self.extents_of_calls = charts, stretches, None

    def start(self, table: pd.DataFrame) -> "_Gathered":
        table = table.copy()
        report.with_groups(table, self._module, self._command)
        self.extras = stream_extras.Extras(table, stretches=self._stretches)
        self.facts = DeviceFacts(table, self._trace)
        self.evidence = StreamedEvidence(self._assigned, table)
        if self._charts and len(table):
            self.extents_of_calls = Extents(int(table["phase"].max()))
        return self

    def add(self, events: pd.DataFrame, a: pd.DataFrame) -> None:
        calls = report.Calls(events, a)   # shared: its arrays made once a block
        self.extras.add(events, a, calls)
        self.facts.add(events, a)
        self.evidence.add(events, a)
        if self.extents_of_calls is not None:
            self.extents_of_calls.add(calls)
