#!/usr/bin/env python3
"""`show --events > /dev/null` and the single-file export (`export TRACE --parquet FILE.parquet`),
block by block vs with every event in memory: wall time, CPU time and peak memory.

  show --events  streamed: `iowitness show --events TRACE` (it always reads block by block);
                 loaded: what it did before, in a fresh process as the command ran it
                 (event_lines.select and lines over `load(TRACE)`, glibc's settings of cli.main).
  export         streamed: `iowitness export TRACE --parquet F --stream`;
                 loaded: `iowitness export TRACE --parquet F` (a trace that fits in memory loads).

Each run is a fresh process, its stdout /dev/null; ru_maxrss and user + system time from
os.wait4, wall time with Python start-up. Prints the median and range of each. Afterwards the
two Parquet files are read back and compared (schema, metadata, values), and with --verify the
two texts of show --events are hashed (one more run of each, stdout piped to this process, not
timed). The trace is report_10m.py's synthetic IOzone-shaped one, made once by a child process
(a child's ru_maxrss starts from its parent's high-water mark, and writing 200 M events takes a
process to ~1 GiB, more than a streamed command needs), or --reuse'd.

Usage (from the repository, no root needed):
  .venv/bin/python scripts/bench/show_events_export.py --events 10000000 --runs 3 --trace /tmp/t10m.iwt --keep
  .venv/bin/python scripts/bench/show_events_export.py --trace /tmp/t10m.iwt --reuse --form export --runs 3
  .venv/bin/python scripts/bench/show_events_export.py --trace /tmp/t10m.iwt --reuse --form show --runs 1 --verify
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_10m import add_trace_options, synthetic_trace  # noqa: E402  (a sibling script)

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]
LOADED_SHOW = [sys.executable, "-c", """
import sys
from iowitness.analysis.read import event_lines
from iowitness.analysis.read.run import load
from iowitness.cli import _reuse_freed_memory

_reuse_freed_memory()
trace = load(sys.argv[1])
out = sys.stdout
out.write(event_lines.HEADER + "\\n")
for line in event_lines.lines(trace, event_lines.select(trace)):
    out.write(line + "\\n")
out.flush()
"""]


BUILD = """
import argparse, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from report_10m import synthetic_trace
with synthetic_trace(argparse.Namespace(trace=Path(sys.argv[2]), events=int(sys.argv[3]), children=int(sys.argv[4]),
                                        rounds=int(sys.argv[5]), reuse=False, keep=True)):
    pass
"""


@contextlib.contextmanager
def trace_built_apart(args):
    """The trace synthetic_trace gives, written by a child process when it is to be written."""
    if args.reuse:
        with synthetic_trace(args) as trace:
            yield trace
        return
    folder = None if args.trace else tempfile.mkdtemp(prefix="iowitness-bench-")
    trace = args.trace or Path(folder) / "synthetic.iwt"
    subprocess.run([sys.executable, "-c", BUILD, str(Path(__file__).resolve().parent), str(trace), str(args.events),
                    str(args.children), str(args.rounds)], check=True)
    try:
        yield trace
    finally:
        if not args.keep:
            trace.unlink()
            if folder:
                os.rmdir(folder)


def measure(argv: list[str], stdout=subprocess.DEVNULL) -> tuple[float, float, int, str | None]:
    """(wall seconds, CPU seconds, peak RSS bytes, digest of stdout when piped) of one fresh process."""
    begin = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    digest = None
    if stdout == subprocess.PIPE:
        h = hashlib.sha256()
        for piece in iter(lambda: proc.stdout.read(1 << 20), b""):
            h.update(piece)
        digest = h.hexdigest()
    stderr = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - begin
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv[:4])} exited {os.waitstatus_to_exitcode(status)}:\n{stderr}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, digest


def summary(what: str, measured: list[tuple]) -> None:
    walls, cpus, peaks = ([m[k] for m in measured] for k in range(3))
    peaks = [p / 2**30 for p in peaks]
    print(f"{what:28}  wall {statistics.median(walls):7.2f} s ({min(walls):.2f} .. {max(walls):.2f})  "
          f"CPU {statistics.median(cpus):7.2f} s ({min(cpus):.2f} .. {max(cpus):.2f})  "
          f"peak RSS {statistics.median(peaks):5.2f} GiB ({min(peaks):.2f} .. {max(peaks):.2f})", flush=True)


def show(trace: Path, runs: int, verify: bool, skip_loaded: bool) -> bool:
    ways = {"streamed": [*IOWITNESS, "show", "--events", str(trace)], "loaded": [*LOADED_SHOW, str(trace)]}
    if skip_loaded:
        del ways["loaded"]
    for way, argv in ways.items():
        summary(f"show --events {way}", [measure(argv) for _ in range(runs)])
    if not verify or skip_loaded:
        return True
    digests = {way: measure(argv, subprocess.PIPE)[3] for way, argv in ways.items()}
    same = len(set(digests.values())) == 1
    print(f"show --events: identical text: {'yes' if same else 'NO'}", flush=True)
    return same


def export(trace: Path, runs: int, skip_loaded: bool) -> bool:
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="iowitness-export-") as folder:
        ways = {"streamed": ["--stream"], "loaded": []}
        if skip_loaded:
            del ways["loaded"]
        for way, extra in ways.items():
            out = Path(folder) / f"{way}.parquet"
            measured = []
            for _ in range(runs):
                out.unlink(missing_ok=True)
                measured.append(measure([*IOWITNESS, "export", str(trace), "--parquet", str(out), *extra]))
            summary(f"export FILE.parquet {way}", measured)
        if skip_loaded:
            return True
        files = {way: pq.ParquetFile(Path(folder) / f"{way}.parquet") for way in ways}
        same = files["streamed"].read().equals(files["loaded"].read(), check_metadata=True)
        print(f"export: {files['loaded'].metadata.num_rows:,} rows; row groups {files['streamed'].num_row_groups} "
              f"streamed, {files['loaded'].num_row_groups} loaded; identical tables (schema, metadata, values): "
              f"{'yes' if same else 'NO'}", flush=True)
        return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(parser)
    parser.add_argument("--form", choices=("show", "export", "both"), default="both")
    parser.add_argument("--verify", action="store_true", help="also hash both texts of show --events (2 runs more)")
    parser.add_argument("--no-loaded", action="store_true", help="skip the in-memory paths (~250 bytes per event)")
    args = parser.parse_args()
    same = True
    with trace_built_apart(args) as trace:
        if args.form in ("show", "both"):
            same &= show(trace, args.runs, args.verify, args.no_loaded)
        if args.form in ("export", "both"):
            same &= export(trace, args.runs, args.no_loaded)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
