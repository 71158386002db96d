"""How a command reads a trace: every event in memory, or block by block (memory bounded by
the phases, analysis/stream_full.py) when asked (--stream) or when the trace would not fit
in memory here (memory_guard.worth_streaming). Both give the same figures."""

from __future__ import annotations

from contextlib import contextmanager

from iowitness.analysis import memory_guard
from iowitness.analysis.run import load


def add_stream_option(parser, what: str = "the same report") -> None:
    parser.add_argument("--stream", action="store_true",
                        help="read the trace block by block: memory bounded by its phases instead of its events "
                             f"({what}; chosen by itself when the trace would not fit in memory)")


def streaming(path, asked: bool) -> bool:
    return asked or memory_guard.worth_streaming(path)


@contextmanager
def trace_of(path, stream: bool, charts: bool = False):
    """The trace at `path`, its report() built block by block when `stream` (gathering what the
    HTML page's charts need first when `charts`); a --summary trace (no events) is loaded
    whatever is asked. Valid until the `with` ends."""
    if stream:
        from iowitness.analysis import stream_full

        with stream_full.open_report(path, charts=charts) as trace:
            if trace is not None:
                yield trace
                return
    yield load(path)
