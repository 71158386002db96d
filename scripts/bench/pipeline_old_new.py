#!/usr/bin/env python3
"""Every form of `report`, `check`, `compare` and `export` of one trace by two checkouts,
alternately in one run: wall time and peak memory of each, and whether their outputs match.

Made for issue 29 (one block pipeline for every trace): OLD is a checkout from before it (its
commands read a trace that fits in memory whole), NEW this one. Each command is a fresh
process; its peak resident memory is the kernel's ru_maxrss for it (os.wait4), its wall time
includes Python's start-up. Runs alternate (old, new, old, new...) so that a busy machine
weighs on both alike; the script prints the median and range of each. Each process runs as a
user's would: both checkouts' bytecode is written first, untimed, and the process runs without
PYTHONDONTWRITEBYTECODE (this machine's shells export it; with it every run compiled all ~155
modules again, ~1.5 CPU-s, which a user's installed package never does).

The trace is report_10m.py's synthetic IOzone-shaped one (written once with --keep, then
--reuse), or any trace given with --trace --reuse.

Usage (from the repository, no root needed; OLD a checkout with its own .venv):
  git worktree add /work/old 82728e3 && (cd /work/old && scripts/setup.sh)
  .venv/bin/python scripts/bench/pipeline_old_new.py --old /work/old --trace /tmp/t10m.iwt --keep --runs 3
  .venv/bin/python scripts/bench/pipeline_old_new.py --old /work/old --trace /tmp/t10m.iwt --reuse --runs 3 \\
      --forms csv json
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_10m import add_trace_options, synthetic_trace, user_environment, write_bytecode  # noqa: E402

NEW = Path(__file__).resolve().parents[2]
FORMS = {
    "text": ["report", "{trace}"],
    "json": ["report", "{trace}", "--json"],
    "csv": ["report", "{trace}", "--csv"],
    "markdown": ["report", "{trace}", "--markdown"],
    "html": ["report", "{trace}", "--html", "{out}/page.html"],
    "check": ["check", "{trace}"],
    "compare": ["compare", "{trace}", "{trace}"],
    "export": ["export", "{trace}", "--parquet", "{out}/events.parquet"],
}


def timed(checkout: Path, argv: list[str], out: Path) -> tuple[float, float, bytes, float]:
    """(wall seconds, peak GiB, output, CPU seconds: user + system) of one command of
    `checkout`'s iowitness (output: its stdout and the HTML page it wrote). On a busy machine
    the CPU time says more than the wall time."""
    for f in out.iterdir():
        f.unlink()
    begin = time.perf_counter()
    proc = subprocess.Popen([str(checkout / ".venv/bin/python"), "-m", "iowitness.cli", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=checkout,
                            env=user_environment(IOWITNESS_NO_MEMORY_CHECK="1", COLUMNS="200"))
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - begin
    # what it wrote besides (the --html page) is compared as its output too; not the Parquet
    # file, whose metadata names the writer
    stdout += b"".join(f.read_bytes() for f in sorted(out.iterdir()) if f.suffix == ".html")
    if os.waitstatus_to_exitcode(status) not in (0, 1, 2):   # check: 2 when the trace holds no claim
        sys.exit(f"{checkout}: {' '.join(argv)} failed ({os.waitstatus_to_exitcode(status)})")
    return wall, usage.ru_maxrss / 2**20, stdout, usage.ru_utime + usage.ru_stime


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f} .. {max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(parser)
    parser.add_argument("--old", type=Path, required=True, help="a checkout from before, with its .venv")
    parser.add_argument("--forms", nargs="+", choices=sorted(FORMS), default=list(FORMS))
    args = parser.parse_args()
    with synthetic_trace(args) as trace, tempfile.TemporaryDirectory(prefix="iowitness-oldnew-") as tmp:
        out = Path(tmp)
        for checkout in (args.old, NEW):
            write_bytecode(checkout)
        print(f"load average at the start: {os.getloadavg()[0]:.1f}", flush=True)
        print("| form | old wall s | new wall s | old CPU s | new CPU s | old peak GiB | new peak GiB | output |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for form in args.forms:
            argv = [a.format(trace=trace, out=out) for a in FORMS[form]]
            got = {"old": ([], [], None, []), "new": ([], [], None, [])}
            for _ in range(args.runs):
                for name, checkout in (("old", args.old), ("new", NEW)):
                    wall, peak, stdout, cpu = timed(checkout, argv, out)
                    got[name][0].append(wall)
                    got[name][1].append(peak)
                    got[name][3].append(cpu)
                    got[name] = (got[name][0], got[name][1], stdout, got[name][3])
            same = "same" if got["old"][2] == got["new"][2] else "differs"
            print(f"| {form} | {spread(got['old'][0])} | {spread(got['new'][0])} | "
                  f"{spread(got['old'][3])} | {spread(got['new'][3])} | "
                  f"{spread(got['old'][1])} | {spread(got['new'][1])} | {same} |", flush=True)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
