#!/usr/bin/env python3
"""`export TRACE --perfetto FILE`: wall time, CPU time, peak memory and the file's size, on
report_10m.py's synthetic IOzone-shaped trace at two sizes, to show that memory does not grow
with the number of calls (the export writes a block of events at a time).

Each run is a fresh process (ru_maxrss and user + system time from os.wait4, wall time with
Python start-up); prints the median and range of each. The traces are written by a child
process (show_events_export.trace_built_apart), or --reuse'd at --trace and --small-trace.
Afterwards the smaller file's slices are counted with Perfetto's own message definitions
(tests/support/perfetto_trace.py) against the trace's event count, unless --no-count (that
read holds the whole decoded file in memory).

Usage (from the repository, no root needed):
  .venv/bin/python scripts/bench/perfetto_export.py --events 10000000 --small 1000000 --runs 3 \\
      --trace /tmp/t10m.iwt --small-trace /tmp/t1m.iwt --keep
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_10m import add_trace_options  # noqa: E402  (a sibling script)
from show_events_export import IOWITNESS, measure, trace_built_apart  # noqa: E402

COUNT = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.support import perfetto_trace
from iowitness.collector.format import tracestream

decoded = perfetto_trace.read(sys.argv[2])
calls = sum(1 for s in decoded.slices if decoded.thread_of(s.track) is not None)
stream = tracestream.open_trace(sys.argv[3])
print(f"slices on thread tracks {calls:,}, events in the trace {stream.event_count:,}, "
      f"errors {len(decoded.errors)}", flush=True)
stream.close()
"""


def run(trace: Path, runs: int) -> tuple[list, int, Path]:
    folder = Path(tempfile.mkdtemp(prefix="iowitness-perfetto-"))
    out = folder / "t.perfetto-trace"
    measured = []
    for _ in range(runs):
        out.unlink(missing_ok=True)
        measured.append(measure([*IOWITNESS, "export", str(trace), "--perfetto", str(out)]))
    return measured, out.stat().st_size, out


def show(what: str, measured: list, size: int, events: int) -> None:
    walls, cpus, peaks = ([m[k] for m in measured] for k in range(3))
    peaks = [p / 2**30 for p in peaks]
    print(f"{what:12}  wall {statistics.median(walls):7.2f} s ({min(walls):.2f} .. {max(walls):.2f})  "
          f"CPU {statistics.median(cpus):7.2f} s ({min(cpus):.2f} .. {max(cpus):.2f})  "
          f"peak RSS {statistics.median(peaks):5.2f} GiB ({min(peaks):.2f} .. {max(peaks):.2f})  "
          f"file {size / 2**20:,.0f} MiB ({size / events:.1f} B/call)", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(parser)
    parser.add_argument("--small", type=int, default=1_000_000, help="events of the smaller trace")
    parser.add_argument("--small-trace", type=Path)
    parser.add_argument("--no-count", action="store_true")
    args = parser.parse_args()
    small = argparse.Namespace(**{**vars(args), "events": args.small, "trace": args.small_trace})
    for label, spec in ((f"{args.small:,}", small), (f"{args.events:,}", args)):
        with trace_built_apart(spec) as trace:
            measured, size, out = run(trace, args.runs)
            show(label, measured, size, spec.events)
            if spec is small and not args.no_count:
                # in a child: the decoded file takes GiB, and a child's ru_maxrss starts from its
                # parent's high-water mark (the larger trace's runs come after)
                subprocess.run([sys.executable, "-c", COUNT, str(Path(__file__).resolve().parents[2]), str(out),
                                str(trace)], check=True)
            out.unlink()
            out.parent.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
