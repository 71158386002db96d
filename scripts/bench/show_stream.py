#!/usr/bin/env python3
"""`iowitness show TRACE` streamed vs loaded: wall time and peak memory against the event count.

`show` reads the trace block by block (analysis/read/streamed.py); the loaded path (the tables of
reporters/summary.py over `iowitness.load(TRACE).events`) is what `show` did before.
Both run in a fresh process; peak resident memory is the kernel's ru_maxrss for it (os.wait4),
CPU time its user + system time (the same), wall time includes Python start-up. Each runs as a
user's would: bytecode written first, untimed, and without PYTHONDONTWRITEBYTECODE (this
machine's shells export it; with it every run compiled all ~155 modules again, ~1.5 CPU-s). The trace is
report_10m.py's synthetic IOzone-shaped one (written by the collector's TraceWriter), made once
per size. Prints the median and range, and whether the two texts are identical (when both ran).

Usage (from the repository, no root needed):
  .venv/bin/python scripts/bench/show_stream.py --events 10000000 --runs 3
  .venv/bin/python scripts/bench/show_stream.py --trace /tmp/big.iwt --reuse --runs 1 --no-loaded
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_10m import add_trace_options, synthetic_trace, user_environment, write_bytecode  # noqa: E402

STREAMED = [sys.executable, "-m", "iowitness.cli", "show"]
LOADED = [sys.executable, "-c", "import sys; from iowitness.analysis.read.run import load; "
          "from iowitness.reporters import summary; print(summary.render(load(sys.argv[1])))"]


def measure(command: list[str], trace: Path, output: Path | None = None) -> tuple[float, int, str, float]:
    """(wall seconds, peak RSS bytes, digest of stdout (of `output` when the command writes
    a file), CPU seconds) of one run in a fresh process."""
    with tempfile.TemporaryFile() as out:
        begin = time.perf_counter()
        proc = subprocess.Popen([*command, str(trace)], stdout=out, stderr=subprocess.PIPE, env=user_environment())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - begin
        stderr = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(command[:3])} exited {os.waitstatus_to_exitcode(status)}:\n{stderr}")
        out.seek(0)
        printed = output.read_bytes() if output is not None else out.read()
        return (wall, usage.ru_maxrss * 1024, hashlib.sha256(printed.rstrip(b"\n")).hexdigest(),
                usage.ru_utime + usage.ru_stime)


def compare(commands, trace: Path, runs: int, what: str, skip=(), output: Path | None = None) -> None:
    """Each (name, command) `runs` times in a fresh process: median and range of wall, CPU
    and peak RSS, and whether every run of every command printed the same text."""
    digests = {}
    write_bytecode(Path(__file__).resolve().parents[2])
    for name, command in commands:
        if name in skip:
            continue
        measured = [measure(command, trace, output) for _ in range(runs)]
        walls, peaks, cpus = [r[0] for r in measured], [r[1] / 2**30 for r in measured], [r[3] for r in measured]
        digests[name] = {r[2] for r in measured}
        print(f"{what} {name:8}  wall {statistics.median(walls):7.2f} s ({min(walls):.2f} .. {max(walls):.2f})  "
              f"CPU {statistics.median(cpus):7.2f} s ({min(cpus):.2f} .. {max(cpus):.2f})  "
              f"peak RSS {statistics.median(peaks):5.2f} GiB ({min(peaks):.2f} .. {max(peaks):.2f})", flush=True)
    if len(digests) > 1:
        same = len(set.union(*digests.values())) == 1
        print(f"identical output: {'yes' if same else 'NO'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(parser)
    parser.add_argument("--no-loaded", action="store_true", help="skip the loaded path (it needs ~300 bytes per event)")
    args = parser.parse_args()
    with synthetic_trace(args) as trace:
        compare((("streamed", STREAMED), ("loaded", LOADED)), trace, args.runs, "show",
                skip=("loaded",) if args.no_loaded else ())
    return 0


if __name__ == "__main__":
    sys.exit(main())
