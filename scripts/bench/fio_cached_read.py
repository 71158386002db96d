#!/usr/bin/env python3
"""fio 4 KiB psync sequential reads from the page cache: untraced vs traced by iowitness.

Runs the pairs alternately (A, B, A, B, ...) so that machine noise hits both sides alike,
and prints the median and range of the traced/untraced throughput ratio, events/s, lost
events, collector CPU per million events and trace bytes per event.

Usage (as root, from the repository, after scripts/setup.sh):
  .venv/bin/python scripts/bench/fio_cached_read.py --rounds 5 --seconds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from iowitness.collector.trace import load

IOWITNESS = [sys.executable, "-m", "iowitness.collector.cli"]


def fio_command(path: Path, seconds: float, size: str) -> list[str]:
    return ["fio", "--name=cached-read", f"--filename={path}", "--rw=read", "--bs=4k", "--ioengine=psync",
            f"--size={size}", "--time_based", f"--runtime={seconds}", "--output-format=json"]


def fio_bandwidth(stdout: str) -> float:
    """Bytes/s read, from fio's own JSON (bw_bytes)."""
    return float(json.loads(stdout[stdout.index("{"):])["jobs"][0]["read"]["bw_bytes"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--size", default="256m")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="iowitness-bench-"))
    data = work / "data.bin"
    subprocess.run(["dd", "if=/dev/zero", f"of={data}", "bs=1M", f"count={int(args.size[:-1])}"],
                   check=True, capture_output=True)
    subprocess.run(["cat", str(data)], check=True, stdout=subprocess.DEVNULL)  # warm the page cache
    command = fio_command(data, args.seconds, args.size)
    ratios, rates, lost, cpu, per_event = [], [], [], [], []
    for i in range(args.rounds):
        plain = subprocess.run(command, capture_output=True, text=True, check=True)
        trace_path = work / f"round{i}.iwt"
        traced = subprocess.run([*IOWITNESS, "run", "-q", "-o", str(trace_path), "--file", str(data), "--", *command],
                                capture_output=True, text=True, check=True)
        base, watched = fio_bandwidth(plain.stdout), fio_bandwidth(traced.stdout)
        trace = load(trace_path)
        events = len(trace.events)
        seconds = (trace.meta["clock_end"]["monotonic_ns"] - trace.meta["clock_start"]["monotonic_ns"]) / 1e9
        ratios.append(watched / base)
        rates.append(events / seconds)
        lost.append(trace.lost)
        c = trace.meta["collector_cpu_s"]
        cpu.append((c["user"] + c["system"]) / max(events, 1) * 1e6)
        per_event.append(trace_path.stat().st_size / max(events, 1))
        print(f"round {i + 1}: untraced {base / 2**20:8.1f} MiB/s  traced {watched / 2**20:8.1f} MiB/s  "
              f"ratio {ratios[-1]:.3f}  events {events:,}  lost {lost[-1]}", flush=True)
        trace_path.unlink()
    data.unlink()
    work.rmdir()

    def summary(name, values, fmt):
        print(f"{name:34} median {fmt.format(statistics.median(values))}  "
              f"range {fmt.format(min(values))} .. {fmt.format(max(values))}")
    print(f"\nfio --rw=read --bs=4k --ioengine=psync, {args.size} cached file, {args.rounds} rounds of {args.seconds:g} s")
    summary("traced / untraced throughput", ratios, "{:.3f}")
    summary("events per second", rates, "{:,.0f}")
    summary("lost events", lost, "{:,}")
    summary("collector CPU s per M events", cpu, "{:.3f}")
    summary("trace bytes per event", per_event, "{:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
