#!/usr/bin/env python3
"""The compatible probe's cost beside the fast one's, on the tightest traced loop.

Why: the compatible object (kernels back to 5.8) reads each task and file field with
bpf_probe_read_kernel where the fast one makes a plain load, and keeps threads' spilled calls
in a hash where the fast one uses task storage; this says what that costs per call.

What is measured, per round, in an order that rotates: pread_loop (1-byte preads of a cached
file, scripts/bench/pread_loop.c) untraced, under `iowitness run --probe fast` and under
`--probe compat`. Two figures each: the loop's calls per CPU-second of its own (user + system,
BPF programs included: other load on the machine does not move it), as a ratio to the
untraced run of the same round; and the kernel's own time in on_sys_enter + on_sys_exit per
run (BPF statistics, sampled windows), the probe's cost per traced call.

Example (2 vCPU VM under a load average of 13, 5 rounds of 2 s; docs/performance.md):

    path    calls/cpu-s vs untraced, median (range)     sys_enter+sys_exit ns per run, median (range)
    fast    0.63 (0.58..0.74)                           209 (203..213)
    compat  0.52 (0.41..0.54)                           383 (359..648)

Usage (as root, from the repository, after scripts/setup.sh):
  .venv/bin/python scripts/bench/compat_cost.py --rounds 5 --seconds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from iowitness.analysis.read.run import load  # noqa: E402

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]
PATHS = ("untraced", "fast", "compat")


def build(work: Path) -> Path:
    exe = work / "pread_loop"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(HERE / "pread_loop.c")], check=True)
    return exe


def one(path: str, exe: Path, data: Path, seconds: float, work: Path) -> tuple[float, float | None]:
    """(calls per CPU-second of the loop, sys_enter + sys_exit ns per run or None untraced)."""
    loop = [str(exe), str(data), f"{seconds:g}"]
    if path == "untraced":
        out = subprocess.run(loop, capture_output=True, text=True, check=True).stdout
        return _rate(out), None
    trace = work / f"{path}.iwt"
    run = subprocess.run([*IOWITNESS, "run", "-q", "--probe", path, "-o", str(trace), "--file", str(data), "--", *loop],
                         capture_output=True, text=True, check=True)
    programs = (load(trace).counters.get("probe_cost") or {}).get("programs") or {}
    trace.unlink()
    hooks = [programs.get(n, {}) for n in ("on_sys_enter", "on_sys_exit")]
    ns = sum(h["run_time_ns"] / h["run_cnt"] for h in hooks if h.get("run_cnt")) or None
    return _rate(run.stdout), ns


def _rate(out: str) -> float:
    fields = out.split()
    return float(fields[fields.index("calls_per_cpu_s") + 1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run as root: the probes load BPF programs")
    results: dict[str, list[tuple[float, float | None]]] = {p: [] for p in PATHS}
    with tempfile.TemporaryDirectory(prefix="iowitness-compat-cost-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        exe, data = build(work), work / "data"
        data.write_bytes(b"x" * 4096)
        for r in range(args.rounds):
            order = PATHS[r % 3:] + PATHS[:r % 3]
            round_ = {p: one(p, exe, data, args.seconds, work) for p in order}
            print(f"round {r + 1}: " + "  ".join(f"{p} {round_[p][0]:,.0f}/cpu-s"
                                                 + (f" {round_[p][1]:.0f} ns" if round_[p][1] else "")
                                                 for p in order), flush=True)
            for p in PATHS:
                results[p].append((round_[p][0] / round_["untraced"][0], round_[p][1]))
    print(f"{'path':8}{'calls/cpu-s vs untraced, median (range)':44}sys_enter+sys_exit ns per run, median (range)")
    for p in ("fast", "compat"):
        ratios, ns = [r for r, _ in results[p]], [n for _, n in results[p] if n]
        cost = f"{statistics.median(ns):.0f} ({min(ns):.0f}..{max(ns):.0f})" if ns else "-"
        print(f"{p:8}{statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f})".ljust(52) + cost)
    return 0


if __name__ == "__main__":
    sys.exit(main())
