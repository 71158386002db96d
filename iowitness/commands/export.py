"""Export traces to Parquet, for DuckDB, Polars, Spark or pandas.

One trace to a FILE.parquet: its events, with the trace metadata in the file's key-value
metadata under "iowitness".

Several traces, or a directory: one dataset of every run, partitioned by benchmark, with
tables runs, events, phases, verdicts and device, each row carrying its run_id and host,
and wall-clock time columns beside the trace's monotonic nanoseconds (docs/dataset.md has
the layout and the queries to start from). Exporting more runs into the same directory adds
them; exporting a run again replaces its files. Claims are read from the output each run
captured. Each trace is read block by block (memory bounded by its phases, not its events;
the single file's events a row group per block).

--fio-iolog DIR writes one trace's calls as fio iologs (version 3, one per recorded thread)
and DIR/replay.fio, a job file that replays them with fio's read_iolog; the files go under
DIR/files (docs/replay.md).

--perfetto FILE writes one trace as a Perfetto trace (its protobuf format), to open in
ui.perfetto.dev (offline, in the browser) or query with trace_processor: a track per thread
with each call a slice (fd, offset, bytes, latency, path), the phases on a track of their
own, the block requests on a track per device, and counters for throughput and queue depth
(docs/block-and-perfetto.md). The calls are written block by block: memory bounded by a
block, whatever the trace's size.

Example:
  iowitness export iozone.iwt --parquet iozone.parquet
  duckdb -c "select syscall, count(*), sum(ret) from 'iozone.parquet' group by 1"
  iowitness export --parquet runs/ sweep/*.iwt
  duckdb -c "select benchmark, name, avg(wall_Bps) from 'runs/phases/*/*.parquet' group by all"
  iowitness export iozone.iwt --fio-iolog iozone-fio/ && fio iozone-fio/replay.fio
  iowitness export fio.iwt --perfetto fio.perfetto-trace   # then open it in ui.perfetto.dev
"""

from __future__ import annotations

import argparse
import os

from iowitness.analysis.read.run import export_parquet
from iowitness.commands import _claims, _output, _reading
from iowitness.errors import TooLarge, UsageError
from iowitness.extras import require
from iowitness.outputfile import add_mode_option, parse_mode


def add_arguments(parser) -> None:
    parser.add_argument("traces", metavar="TRACE", nargs="+", help="traces saved by run or attach")
    parser.add_argument("--parquet", metavar="OUT",
                        help="FILE.parquet for one trace's events; a directory (it may exist) for a dataset of "
                             "several runs")
    add_mode_option(parser)
    parser.add_argument("--tolerance", default=_claims.DEFAULT_TOLERANCE, metavar="PCT",
                        help="how far a claim may be from the active figure and still agree, for the verdicts "
                             "table (default %(default)s)")
    _reading.add_stream_option(parser, "the same files")
    parser.add_argument("--fio-iolog", metavar="DIR",
                        help="one trace's calls as fio iologs (version 3), one per thread, and DIR/replay.fio, "
                             "a job that replays them with read_iolog (docs/replay.md)")
    parser.add_argument("--perfetto", metavar="FILE",
                        help="one trace as a Perfetto trace (protobuf) for ui.perfetto.dev: calls per thread, "
                             "phases, block requests per device, throughput and queue-depth counters")


def _one_file(args) -> bool:
    """The single-file form: one trace to a name ending in .parquet that is not a directory."""
    out = args.parquet
    return len(args.traces) == 1 and out.endswith(".parquet") and not os.path.isdir(out)


def _usable(path: str, trace) -> None:
    if trace.summary is not None:
        raise UsageError(f"{path} is a --summary trace: it holds the kernel's aggregates, no record per "
                         "call, so there are no events to export; record without --summary to export them")
    if not trace.event_count:
        from iowitness.analysis.report import unseen
        raise UsageError(f"{path} holds no event to export ({unseen(trace) or 'no call on a target file'})")


def execute(args) -> int:
    if args.fio_iolog:
        return _fio_iolog(args)
    if args.perfetto:
        return _perfetto(args)
    if not args.parquet:
        raise UsageError("say where to export: --parquet OUT, --fio-iolog DIR or --perfetto FILE")
    require("pyarrow.parquet", "parquet", "export --parquet")   # before a trace is read: one line, at once
    if _one_file(args):
        out = _output.destination(args, args.parquet)
        path = args.traces[0]
        events = _events_of(path, out)
        _output.print_text(f"wrote {args.parquet}: {events:,} events")
        return 0
    return _dataset(args)


def _fio_iolog(args) -> int:
    from iowitness.replay import fio_iolog, plan

    if args.parquet or len(args.traces) != 1:
        raise UsageError("--fio-iolog exports one trace, alone (without --parquet)")
    done = fio_iolog.write(plan.build(args.traces[0]), args.fio_iolog)
    left = sum(done["left_out"].values())
    _output.print_text(f"wrote {done['job_file']}: {done['jobs']} job(s), {done['bytes']['read']:,} bytes read and "
                       f"{done['bytes']['write']:,} written; {left:,} call(s) left out; run: fio {done['job_file']}")
    return 0


def _perfetto(args) -> int:
    from iowitness.reporters import perfetto

    if args.parquet or len(args.traces) != 1:
        raise UsageError("--perfetto exports one trace, alone (without --parquet or --fio-iolog)")
    out = _output.destination(args, args.perfetto)
    path = args.traces[0]
    with _reading.trace_of(path) as trace:
        _usable(path, trace)
        done = perfetto.write(path, trace, out)
    _output.print_text(f"wrote {args.perfetto}: {done['calls']:,} calls, {done['phases']} phase(s), "
                       f"{done['requests']:,} block request(s), {done['bytes']:,} bytes; open it in ui.perfetto.dev")
    return 0


def _events_of(path: str, out) -> int:
    """The events written a row group per block of the trace (the same file read back)."""
    from iowitness.analysis.phasing import stream_report
    from iowitness.analysis.read import stream_events

    with stream_events.open_events(path, block_rows=stream_report.BLOCK_ROWS) as source:
        _usable(path, source.trace)
        export_parquet(source.trace, out, blocks=source.blocks())
        return source.event_count


def _dataset(args) -> int:
    from iowitness.analysis.runs import dataset

    mode = parse_mode(args.mode)
    claim_args = argparse.Namespace(claims=None, spec=None, format=None, tolerance=args.tolerance,
                                    device_ceiling=None)
    _claims.tolerance(args.tolerance)   # a bad one fails before any file is written
    seen: list[tuple[str, str]] = []
    events = 0
    for k, path in enumerate(args.traces):
        try:
            with _reading.trace_of(path) as trace:
                events += _run(args, trace, path, seen, claim_args, mode)
        except (UsageError, TooLarge) as exc:
            raise type(exc)(f"{exc}; {k} run(s) before it were written to {args.parquet}" if k else str(exc)) from None
    _output.print_text(f"wrote {args.parquet}: {len(seen)} run(s), {events:,} events "
                       f"(tables {', '.join(dataset.TABLES)})")
    return 0


def _run(args, trace, path: str, seen: list, claim_args, mode: int) -> int:
    """Write one run's tables (one run in memory at a time); its event count."""
    from iowitness.analysis.runs import dataset

    _usable(path, trace)
    rid = dataset.run_id(trace.meta)
    dataset.check_distinct(seen + [(path, rid)])
    seen.append((path, rid))
    report = trace.report()
    verdicts = _claims.verdicts_for(trace, claim_args, required=False)[0]
    rid, benchmark, frames = dataset.tables_of(trace, report, verdicts)
    dataset.write_run(args.parquet, rid, benchmark, frames, mode)
    return trace.event_count
