#!/usr/bin/env python3
"""The events table of a dataset (`export --parquet DIR`) written block by block vs from one
frame: wall time, CPU time and peak memory of each, and whether the two files are the same.

Each way runs in a fresh process (ru_maxrss and user + system time from os.wait4):
  loaded    load(trace), its report, dataset.tables_of, write_run with the events frame
            (what export does today);
  streamed  stream_events + stream_assign (the phases rebuilt block by block, as
            `report --stream` does) into dataset.events_blocks, write_run with the blocks.
Then the two files are read back with pyarrow and compared (schema, metadata, values).
The trace is report_10m.py's synthetic IOzone-shaped one (the collector's own TraceWriter).

Usage (from the repository, no root needed):
  .venv/bin/python scripts/bench/export_stream.py --events 2000000 --children 4 --rounds 3
  .venv/bin/python scripts/bench/export_stream.py --trace /tmp/t.iwt --reuse --block-rows 131072
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_10m import add_trace_options, synthetic_trace  # noqa: E402  (a sibling script)

MODE = 0o600


def loaded(trace_path: str, out: str, block_rows: int) -> None:
    from iowitness.analysis.read.run import load
    from iowitness.analysis.runs import dataset

    trace = load(trace_path)
    report = trace.report()
    rid, benchmark, frames = dataset.tables_of(trace, report, [])
    dataset.write_run(out, rid, benchmark, {"events": frames["events"]}, MODE)


def streamed(trace_path: str, out: str, block_rows: int) -> None:
    from iowitness.analysis import report
    from iowitness.analysis.phasing import stream_assign, stream_report
    from iowitness.analysis.read import stream_events
    from iowitness.analysis.runs import dataset

    with stream_events.open_events(trace_path, block_rows=block_rows) as source:
        meta = source.meta
        _, benchmark, _ = report.benchmark_of(meta)
        with stream_assign.assign(source, stream_report.outside_of(meta)) as assigned:   # as report --stream has it
            dataset.write_run(out, dataset.run_id(meta), benchmark or "other",
                              {"events": dataset.events_blocks(assigned.blocks(), meta)}, MODE)


WAYS = {"loaded": loaded, "streamed": streamed}


def measure(way: str, trace: Path, out: Path, block_rows: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS bytes) of one way in a fresh process."""
    begin = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", way, "--out", str(out),
                             "--block-rows", str(block_rows), "--trace", str(trace)])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - begin
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{way} exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(parser, runs=1)
    parser.set_defaults(events=2_000_000, rounds=3)
    parser.add_argument("--block-rows", type=int, default=1 << 20, help="events per block, streamed")
    parser.add_argument("--child", choices=WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        WAYS[args.child](str(args.trace), args.out, args.block_rows)
        return 0
    import pyarrow.parquet as pq

    with synthetic_trace(args) as trace, tempfile.TemporaryDirectory(prefix="iowitness-export-") as folder:
        files = {}
        for way in WAYS:
            for run in range(args.runs):
                out = Path(folder) / way
                wall, cpu, peak = measure(way, trace, out, args.block_rows)
                print(f"events table {way:8}  wall {wall:6.2f} s  CPU {cpu:6.2f} s  peak RSS {peak / 2**20:7.0f} MiB"
                      + (f"  (blocks of {args.block_rows:,} events)" if way == "streamed" else ""), flush=True)
            (files[way],) = out.glob("events/*/*.parquet")
        tables = {way: pq.read_table(path) for way, path in files.items()}
        same = tables["loaded"].equals(tables["streamed"], check_metadata=True)
        groups = pq.ParquetFile(files["streamed"]).metadata.num_row_groups
        print(f"{tables['loaded'].num_rows:,} rows; streamed file: {groups} row groups; "
              f"identical tables (schema, metadata, values): {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
