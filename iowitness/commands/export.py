"""Export a trace's events to Parquet, for DuckDB, Polars, Spark or pandas.

The trace metadata is kept in the Parquet file's key-value metadata under "iowitness".

Example:
  iowitness export iozone.iwt --parquet iozone.parquet
  duckdb -c "select syscall, count(*), sum(ret) from 'iozone.parquet' group by 1"
"""

from __future__ import annotations

from iowitness.analysis.run import export_parquet, load
from iowitness.commands import _output
from iowitness.extras import require
from iowitness.errors import UsageError
from iowitness.outputfile import add_mode_option


def add_arguments(parser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace saved by run or attach")
    parser.add_argument("--parquet", metavar="OUT", help="write the events to this Parquet file")
    add_mode_option(parser)


def execute(args) -> int:
    if not args.parquet:
        raise UsageError("say where to export: --parquet OUT")
    out = _output.destination(args, args.parquet)
    require("pyarrow.parquet", "parquet", "export --parquet")   # before the trace is read: one line, at once
    trace = load(args.trace)
    if trace.summary is not None:
        raise UsageError(f"{args.trace} is a --summary trace: it holds the kernel's aggregates, no record per "
                         "call, so there are no events to export; record without --summary to export them")
    if not len(trace.events):
        from iowitness.analysis.report import unseen
        raise UsageError(f"{args.trace} holds no event to export ({unseen(trace) or 'no call on a target file'})")
    export_parquet(trace, out)
    _output.print_text(f"wrote {args.parquet}: {len(trace.events):,} events")
    return 0
