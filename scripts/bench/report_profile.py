#!/usr/bin/env python3
"""Where one iowitness command spends its CPU time: cProfile timed by the process's CPU clock.

cProfile's default clock is the wall clock, and on a machine shared with other work a profile
by it puts the time the process waited for a CPU into whichever function happened to run
(a 15 CPU-second `report --json` read 52 s of "time" at a load average of 5). This one times
by time.process_time, so the figures add up to the command's own CPU seconds, and prints the
top N functions by cumulative and by own time. The command runs in this process, as
`python -m iowitness.cli ARGS` would run it (its standard output goes to /dev/null unless
--stdout FILE).

Usage (from the repository, no root needed; the trace from report_10m.py --keep):
  .venv/bin/python scripts/bench/report_profile.py --top 40 -- report /tmp/t10m.iwt --json
  .venv/bin/python scripts/bench/report_profile.py --save /tmp/html.prof -- report /tmp/t10m.iwt --html /tmp/p.html
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=40, help="functions shown per order")
    parser.add_argument("--save", help="also write the profile to this file (pstats format)")
    parser.add_argument("--stdout", default=os.devnull, help="where the command's output goes")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the iowitness command's arguments")
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        parser.error("give the command after --, e.g. -- report TRACE --json")
    from iowitness import cli

    profiler = cProfile.Profile(timer=time.process_time)
    cpu0 = time.process_time()
    with open(args.stdout, "w") as out, contextlib.redirect_stdout(out):
        profiler.enable()
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
        finally:
            profiler.disable()
    cpu = time.process_time() - cpu0
    if args.save:
        profiler.dump_stats(args.save)
    for order in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(args.top)
        body = text.getvalue()
        print(f"\n--- by {order} (CPU seconds) ---")
        print(body[body.find("   ncalls"):])
    print(f"iowitness {' '.join(argv)}: exit {code}, {cpu:.2f} CPU-s (profiled)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
