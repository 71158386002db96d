#!/usr/bin/env python3
"""IOzone's cached reads, the original against its replay, each held to one CPU.

replay31j's quiet slot found IOzone's read and reread phases replayed 16 % to 44 % slower than
IOzone's own, inside the kernel's copy from the page cache (a read's median 0.99 us in every
original, 1.39 us in three replays of five). Per run the cost is one level over all its phases
(a slow run's writes, rewrites and random reads are slower too, and one original of three was
slow alike): a state of the run, not of the read path. This tells whether that state is the CPU
the thread runs on: IOzone recorded once, then, round after round, IOzone run again and the
recording replayed, each held to CPU 0 and then CPU 1 (`taskset`; the player by a wrapper put
in the native player's place for its replays, the real one put back after), the order reversed
each round. Per run: each phase's median call (ns), from the trace's calls (the probe's span,
the same in both). Equal per CPU between IOzone and the replay: the player's calls cost what
IOzone's do, and a slower replay is where the scheduler put it.

Usage: sudo .venv/bin/python scripts/bench/replay_read_cpu.py --work /tmp/read-cpu [--rounds 3] [--cpus 0,1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_time_split import per_thread  # noqa: E402

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]
# IOzone -i0 -i1 -i2's phases in a 32 MiB file of 4 KiB records: (call kind, first, last + 1)
PHASES = {"write": ("write", 0, 8192), "rewrite": ("write", 8192, 16384), "read": ("read", 0, 8192),
          "reread": ("read", 8192, 16384), "random read": ("read", 16384, 24576),
          "random write": ("write", 16384, 24576)}


def medians(trace: Path) -> dict[str, float]:
    """Each phase's median call (ns) in the trace's busiest thread."""
    names, lat, _, _ = max(per_thread(str(trace)), key=lambda t: len(t[0]))
    out = {}
    for phase, (kind, a, b) in PHASES.items():
        at = np.flatnonzero(names == kind)
        out[phase] = float(np.median(lat[at[a:b]])) if len(at) >= b else float("nan")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpus", default="0,1")
    args = parser.parse_args()
    from iowitness.commands.replay import NATIVE_PLAYER

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    data = work / "data"
    iozone = ["iozone", "-i0", "-i1", "-i2", "-s", "32m", "-r", "4k", "-f", str(data / "iozone.tmp")]

    def original(out: Path, cpu: str | None) -> None:
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir()
        pin = ["taskset", "-c", cpu] if cpu is not None else []
        subprocess.run([*IOWITNESS, "run", "-q", "-o", str(out), "--file", str(data), "--", *pin, *iozone],
                       check=True, capture_output=True, cwd=work)

    real = work / "real-player"
    shutil.copy2(NATIVE_PLAYER, real)

    def replay(out: Path, cpu: str) -> None:
        wrapper = work / "pinned-player"
        wrapper.write_text(f"#!/bin/sh\nexec taskset -c {cpu} {real} \"$@\"\n")
        wrapper.chmod(0o755)
        shutil.copy2(wrapper, NATIVE_PLAYER)
        try:
            into = work / "into"
            shutil.rmtree(into, ignore_errors=True)
            subprocess.run([*IOWITNESS, "replay", "-q", str(work / "orig.iwt"), "--into", str(into), "-o", str(out)],
                           check=True, capture_output=True)
            shutil.rmtree(into, ignore_errors=True)
        finally:
            shutil.copy2(real, NATIVE_PLAYER)

    print(f"from {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.2f}")
    original(work / "orig.iwt", None)
    rows = []
    cpus = args.cpus.split(",")
    for k in range(args.rounds):
        for cpu in cpus if k % 2 == 0 else cpus[::-1]:
            for which in ("iozone", "replay") if k % 2 == 0 else ("replay", "iozone"):
                out = work / f"{which}-cpu{cpu}-{k}.iwt"
                (original if which == "iozone" else replay)(out, cpu)
                m = medians(out)
                rows.append((which, cpu, m))
                print(f"  {which:<6} cpu {cpu} round {k}: " + ", ".join(f"{p} {v:,.0f}" for p, v in m.items())
                      + " ns", flush=True)
    print(f"to {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.2f}")
    print("median over the rounds of each phase's median call, ns:")
    for cpu in cpus:
        for which in ("iozone", "replay"):
            got = [m for w, c, m in rows if w == which and c == cpu]
            print(f"  {which:<6} cpu {cpu}: " + ", ".join(
                f"{p} {statistics.median(m[p] for m in got):,.0f}" for p in PHASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
