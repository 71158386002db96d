"""How a command reads a trace: block by block, always (analysis/measure/stream_full.py), so that one
trace takes the same code on every machine and memory is bounded by its phases, not its events."""

from __future__ import annotations

import argparse
from contextlib import contextmanager

from iowitness.analysis.read.run import load


def add_stream_option(parser, what: str = "the same report") -> None:
    # kept so that scripts written for the time when reading block by block was a choice still run
    parser.add_argument("--stream", action="store_true", help=argparse.SUPPRESS)


@contextmanager
def trace_of(path, charts: bool = False, stretches: bool = True):
    """The trace at `path`, its report() built block by block (gathering what the HTML page's
    charts need too when `charts`; the open-to-close stretches' table, which only the text,
    Markdown and HTML reports show, unless `stretches` is False); a --summary trace (no events,
    only the kernel's aggregates) is loaded. Valid until the `with` ends."""
    from iowitness.analysis.measure import stream_full

    with stream_full.open_report(path, charts=charts, stretches=stretches) as trace:
        if trace is not None:
            yield trace
            return
    yield load(path)
