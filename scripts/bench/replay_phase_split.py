#!/usr/bin/env python3
"""One phase of a one-thread workload, inside the calls against between them: originals against replays.

replay_time_split.py sums each syscall kind over the whole run; a phase of a workload that makes
the same kind of call in several phases (IOzone's write, rewrite and random write are all
`write`) needs its own window. The phase here is the busiest thread's calls from the A-th to the
(B-1)-th call of the given kinds, and every call between them (IOzone -i0's write phase: the
first 8,192 writes of a 32 MiB file in 4 KiB records; dd's: its 32 writes; fio io_uring's mixed
phase: every request). Per trace: the time inside those calls and between them (the thread's gaps),
and the median call and gap; then the median over each group. A replay slower inside the calls
is the file system's (or the machine's) answer; slower between them, the player's error.

Usage: .venv/bin/python scripts/bench/replay_phase_split.py write 0 8192 ORIG.iwt [ORIG2.iwt ...] -- REPLAY.iwt ...
       (B 0: to the last call of those kinds)
"""

from __future__ import annotations

import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_time_split import per_thread  # noqa: E402


def split(trace: str, kinds: list[str], a: int, b: int) -> tuple[float, float, float, float]:
    """(inside ms, between ms, median call ns, median gap ns) over the phase's calls."""
    threads = per_thread(trace)
    names, lat, gap, _ = max(threads, key=lambda th: int(np.isin(th[0], kinds).sum()))
    at = np.flatnonzero(np.isin(names, kinds))
    stop = b if b > 0 else len(at)
    lo, hi = at[a], at[stop - 1]
    mine = at[a:stop]
    return (lat[lo:hi + 1].sum() / 1e6, gap[lo + 1:hi + 1].sum() / 1e6, float(np.median(lat[mine])),
            float(np.median(gap[mine[1:]])))


def main(argv: list[str]) -> int:
    if len(argv) < 5 or "--" not in argv:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    kinds, a, b = argv[0].split(","), int(argv[1]), int(argv[2])
    cut = argv.index("--")
    for label, traces in (("originals", argv[3:cut]), ("replays", argv[cut + 1:])):
        got = [split(t, kinds, a, b) for t in traces]
        inside, between = [g[0] for g in got], [g[1] for g in got]
        print(f"{label:9} inside {'/'.join(f'{x:.2f}' for x in inside)} ms (median {statistics.median(inside):.2f}); "
              f"between {'/'.join(f'{x:.2f}' for x in between)} ms (median {statistics.median(between):.2f}); "
              f"median call {statistics.median(g[2] for g in got):,.0f} ns, "
              f"median gap {statistics.median(g[3] for g in got):,.0f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
