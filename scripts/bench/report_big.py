#!/usr/bin/env python3
"""Every form of `report`, `check`, `compare` and `export` of one large trace by one checkout:
wall time, CPU time (user + system) and peak memory of each, with the load average around it.

Issue 29's bound for 200 M events: every form in at most 3 minutes and 2 GiB. The old
(in-memory) path cannot read such a trace, so there is nothing to pair it with: this runs one
checkout's commands one after another, each a fresh process (pipeline_old_new.timed: ru_maxrss
and user + system time from os.wait4, wall time with Python start-up; run as a user's would:
bytecode written first, untimed, and without this machine's PYTHONDONTWRITEBYTECODE). On a shared machine the
wall time says little; the CPU time is the command's own. The trace is report_10m.py's synthetic
IOzone-shaped one (--events 200000000 --keep once, then --reuse).

Usage (from the repository, no root needed; CHECKOUT a checkout with its own .venv, default this one):
  .venv/bin/python scripts/bench/report_big.py --events 200000000 --trace /var/tmp/t200m.iwt --keep --runs 0
  .venv/bin/python scripts/bench/report_big.py --trace /var/tmp/t200m.iwt --reuse --runs 1 --forms json html check
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline_old_new import FORMS, NEW, timed  # noqa: E402  (a sibling script)
from report_10m import add_trace_options, synthetic_trace, write_bytecode  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(parser, runs=1)
    parser.add_argument("--checkout", type=Path, default=NEW, help="a checkout with its .venv (default: this one)")
    parser.add_argument("--forms", nargs="+", choices=sorted(FORMS), default=list(FORMS))
    args = parser.parse_args()
    with synthetic_trace(args) as trace, tempfile.TemporaryDirectory(prefix="iowitness-big-") as tmp:
        if not args.runs:
            return 0
        out = Path(tmp)
        write_bytecode(args.checkout)
        print(f"{args.checkout}, {trace} ({trace.stat().st_size / 2**20:,.0f} MiB)")
        print("| form | wall s | CPU s | peak GiB | load average before, after |")
        print("| --- | --- | --- | --- | --- |")
        for form in args.forms:
            argv = [a.format(trace=trace, out=out) for a in FORMS[form]]
            walls, cpus, peaks, loads = [], [], [], []
            for _ in range(args.runs):
                before = os.getloadavg()[0]
                wall, peak, _, cpu = timed(args.checkout, argv, out)
                walls.append(wall)
                cpus.append(cpu)
                peaks.append(peak)
                loads.append(f"{before:.1f}, {os.getloadavg()[0]:.1f}")
            print(f"| {form} | {spread(walls)} | {spread(cpus)} | {spread(peaks)} | {'; '.join(loads)} |", flush=True)
    return 0


def spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f} .. {max(values):.2f})"


if __name__ == "__main__":
    sys.exit(main())
