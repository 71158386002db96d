"""Print what a trace recorded: processes, files, per-syscall counts, bytes, latency, lost events.

Example:
  iowitness show iozone.iwt
"""

from __future__ import annotations

from iowitness.commands import _output


def add_arguments(parser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace saved by run or attach")


def execute(args) -> int:
    from iowitness.analysis.reporters import summary  # pandas: only commands that analyse pay for it

    from iowitness.analysis import streamed

    # block by block: memory bounded by a block of events, whatever the trace's length, and a
    # trace still being written is read up to its last whole chunk
    with streamed.open_trace(args.trace) as trace:
        _output.print_text(summary.render(trace))
    return 0
