#!/usr/bin/env python3
"""The events table streamed (analysis/read/stream_events.py) over a large trace: wall time and peak memory.

The trace is scripts/bench/report_10m.py's IOzone-shaped one (written with the collector's
TraceWriter), of --events events. Each measure runs in a fresh process that opens the trace
(the check and the first pass, which finds the records far out of time order) and makes one
full pass of blocks(), the pandas DataFrames of `load(path).events`, block by block. Its peak
resident memory is the kernel's ru_maxrss for that process (os.wait4); the child prints how
long the open and the pass took.

This is a memory check, not a timed test: the figure to watch is the peak RSS, which must
stay near that of one or two blocks whatever the number of events.

Usage (from the repository, no root needed):
  .venv/bin/python scripts/bench/stream_events.py --events 10000000 --trace /tmp/10m.iwt --keep
  .venv/bin/python scripts/bench/stream_events.py --trace /tmp/10m.iwt --reuse --block-rows 262144
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_10m import add_trace_options, synthetic_trace  # noqa: E402  (a sibling script)


def child(trace: str, block_rows: int) -> None:
    """One open and one full pass of blocks(), timed; the figures as one JSON line."""
    from iowitness.analysis.read import stream_events

    begin = time.perf_counter()
    with stream_events.open_events(trace, block_rows=block_rows) as source:
        opened = time.perf_counter()
        rows = blocks = 0
        for block in source.blocks():
            rows += len(block)
            blocks += 1
        passed = time.perf_counter()
        figures = {"events": source.event_count, "rows": rows, "blocks": blocks,
                   "stragglers": source.straggler_count, "open_s": opened - begin, "pass_s": passed - opened}
    print(json.dumps(figures), flush=True)


def measure(trace: Path, block_rows: int) -> tuple[float, int, dict]:
    """(wall seconds, peak RSS bytes, the child's figures) of one child process."""
    begin = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(trace), "--block-rows", str(block_rows)],
                            stdout=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - begin
    out = proc.stdout.read().decode()
    proc.stdout.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"the child exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss * 1024, json.loads(out.strip().splitlines()[-1])   # ru_maxrss: KiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(parser, runs=1)
    parser.add_argument("--block-rows", type=int, default=1 << 20)
    parser.add_argument("--child", metavar="TRACE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.block_rows)
        return 0
    with synthetic_trace(args) as trace:
        for i in range(args.runs):
            wall, peak, f = measure(trace, args.block_rows)
            print(f"run {i + 1}: {f['events']:,} events in {f['blocks']} blocks of {args.block_rows:,} rows, "
                  f"{f['stragglers']:,} kept aside: wall {wall:.1f} s (open + first pass {f['open_s']:.1f} s, "
                  f"one pass of blocks() {f['pass_s']:.1f} s), peak RSS {peak / 2**20:,.0f} MiB", flush=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
