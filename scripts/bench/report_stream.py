#!/usr/bin/env python3
"""`iowitness report TRACE --csv --stream` (block by block) vs `report TRACE --csv` (in memory):
wall time, CPU time and peak memory against the event count, and whether the tables are the same.

Each run is a fresh process (show_stream.measure: ru_maxrss and user + system time from
os.wait4, wall time with Python start-up). The trace is report_10m.py's synthetic IOzone-shaped
one (the collector's own TraceWriter), made once per size, or any trace given with --reuse.
The in-memory path needs ~240 bytes per event: leave it out (--no-loaded) above ~50 M events here.

Usage (from the repository, no root needed):
  .venv/bin/python scripts/bench/report_stream.py --events 10000000 --runs 3
  .venv/bin/python scripts/bench/report_stream.py --trace /tmp/t200m.iwt --reuse --runs 1 --no-loaded
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_10m import build_trace  # noqa: E402  (a sibling script)
from show_stream import measure  # noqa: E402

REPORT = [sys.executable, "-m", "iowitness.cli", "report", "--csv"]
COMMANDS = (("streamed", [*REPORT, "--stream"]), ("loaded", REPORT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trace", type=Path, help="where to write the trace (default: a temporary file)")
    parser.add_argument("--reuse", action="store_true", help="use the trace at --trace as it is")
    parser.add_argument("--keep", action="store_true", help="keep the trace afterwards")
    parser.add_argument("--no-loaded", action="store_true", help="skip the in-memory path (~240 bytes per event)")
    args = parser.parse_args()

    trace = args.trace or Path(tempfile.mkdtemp(prefix="iowitness-report-")) / "synthetic.iwt"
    if not args.reuse:
        n = build_trace(trace, args.events, 4, 12)
        print(f"wrote {n:,} events ({trace.stat().st_size / 2**20:,.0f} MiB) to {trace}", flush=True)
    digests = {}
    try:
        for name, command in COMMANDS:
            if name == "loaded" and args.no_loaded:
                continue
            runs = [measure(command, trace) for _ in range(args.runs)]
            walls, peaks, cpus = [r[0] for r in runs], [r[1] / 2**30 for r in runs], [r[3] for r in runs]
            digests[name] = {r[2] for r in runs}
            print(f"report --csv {name:8}  wall {statistics.median(walls):7.2f} s ({min(walls):.2f} .. "
                  f"{max(walls):.2f})  CPU {statistics.median(cpus):7.2f} s ({min(cpus):.2f} .. {max(cpus):.2f})  "
                  f"peak RSS {statistics.median(peaks):5.2f} GiB ({min(peaks):.2f} .. {max(peaks):.2f})", flush=True)
        if len(digests) == 2:
            same = digests["streamed"] == digests["loaded"] and len(digests["loaded"]) == 1
            print(f"identical tables: {'yes' if same else 'NO'}")
    finally:
        if not args.keep and not args.reuse:
            trace.unlink()
            if args.trace is None:
                trace.parent.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
