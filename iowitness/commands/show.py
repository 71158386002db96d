"""Print what a trace recorded: processes, files, per-syscall counts, bytes, latency, lost events.

Example:
  iowitness show iozone.iwt
"""

from __future__ import annotations

from iowitness.analysis.run import load
from iowitness.commands import _output


def add_arguments(parser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace saved by run or attach")


def execute(args) -> int:
    from iowitness.analysis.reporters import summary  # pandas: only commands that analyse pay for it

    _output.print_text(summary.render(load(args.trace)))
    return 0
