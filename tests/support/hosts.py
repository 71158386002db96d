"""Several hosts' traces opened block by block on one clock, as a report over hosts opens them,
with each host's clock moved: for the tests of the merge and of the pooled hosts' figures."""

from __future__ import annotations

from contextlib import ExitStack, contextmanager

from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import stream_events


@contextmanager
def opened_hosts(paths, shifts_ns, block_rows=stream_events.BLOCK_ROWS):
    """The traces at `paths` opened block by block, host k's clock moved `shifts_ns[k]` later:
    [(path, report), ...]."""
    with ExitStack() as stack:
        traces = []
        for path, shift in zip(paths, shifts_ns):
            source = stack.enter_context(stream_events.open_events(path, block_rows=block_rows))
            clock = source.trace_data.meta["clock_start"]
            source.trace_data.meta["clock_start"] = {**clock, "offset_ns": clock["offset_ns"] + shift}
            traces.append((str(path), stack.enter_context(stream_full.report_of(source, str(path)))))
        yield traces
