#!/usr/bin/env python3
"""Soak: does the collector stay flat over a long recording? Memory, CPU per event, trace growth.

A workload makes pwrite calls of 4 KiB at a steady rate (--rate calls/s, over a 64 MiB file)
under `iowitness run`, for --seconds. Every --interval seconds the script samples, from
outside: the collector's resident memory (VmRSS of the `iowitness run` process, /proc), its
CPU time (utime + stime, /proc/PID/stat), the trace file's size, and the calls the workload
has made (it writes its own count to a side file each 0.5 s; the side file is not traced).
Per window: calls, collector CPU per call, trace bytes per call. At the end, the trace is
read back (`iowitness show`, streamed) and its pwrite count compared with the workload's.

Flat means: resident memory at the end within --rss-slack-mib of where it stood after the
first third, CPU per call and bytes per call in the last third within 25% of the first
third's. The script prints the table and that verdict; exit 1 when not flat.

Usage (root: it records with the real probe):
  sudo .venv/bin/python scripts/bench/soak.py --seconds 3600 --interval 60      # the hour
  sudo .venv/bin/python scripts/bench/soak.py --seconds 20 --interval 2         # as in CI
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]
TICKS = os.sysconf("SC_CLK_TCK")

WORKLOAD = r"""
import os, sys, time
target, count_file, rate, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
record, span = b"s" * 4096, 64 << 20
calls, begin, last_note = 0, time.monotonic(), 0.0
while not os.path.exists(stop):
    for _ in range(100):
        os.pwrite(fd, record, (calls * 4096) % span)
        calls += 1
    now = time.monotonic()
    ahead = calls / rate - (now - begin)
    if ahead > 0:
        time.sleep(ahead)
    if now - last_note >= 0.5:
        with open(count_file + ".tmp", "w") as f:
            f.write(str(calls))
        os.replace(count_file + ".tmp", count_file)
        last_note = now
os.close(fd)
with open(count_file + ".tmp", "w") as f:
    f.write(str(calls))
os.replace(count_file + ".tmp", count_file)
print(f"calls={calls}")
"""


@dataclass
class Sample:
    t: float        # seconds since start
    rss: int        # collector resident bytes
    cpu: float      # collector CPU seconds
    size: int       # trace bytes
    calls: int      # workload calls so far


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) * 1024


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS   # utime, stime


def _calls(path: Path) -> int:
    try:
        return int(path.read_text() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def soak(seconds: float, interval: float, rate: int, workdir: Path) -> tuple[list[Sample], int, int]:
    """Record the workload for `seconds`; (samples, the workload's calls, the trace's pwrite64 count)."""
    target, counted, stop = workdir / "soak.dat", workdir / "calls", workdir / "stop"
    trace, script = workdir / "soak.iwt", workdir / "soak_workload.py"
    script.write_text(WORKLOAD)
    recorder = subprocess.Popen([*IOWITNESS, "run", "-q", "-o", str(trace), "--file", str(target), "--",
                                 sys.executable, str(script), str(target), str(counted), str(rate), str(stop)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples = []
    begin = time.monotonic()
    try:
        while time.monotonic() - begin < seconds:
            time.sleep(interval)
            if recorder.poll() is not None:
                break
            samples.append(Sample(time.monotonic() - begin, _rss(recorder.pid), _cpu(recorder.pid),
                                  trace.stat().st_size if trace.exists() else 0, _calls(counted)))
    finally:
        stop.touch()
        out, err = recorder.communicate(timeout=120)
    if recorder.returncode != 0:
        raise SystemExit(f"iowitness run exited {recorder.returncode}: {err.strip()}")
    made = int(re.search(r"calls=(\d+)", out).group(1))
    shown = subprocess.run([*IOWITNESS, "show", str(trace)], capture_output=True, text=True, check=True).stdout
    row = next((line.split() for line in shown.splitlines() if line.split()[:1] == ["pwrite64"]), None)
    traced = int(row[1].replace(",", "")) if row else 0
    for path in (target, counted, stop, trace, script):
        path.unlink(missing_ok=True)
    return samples, made, traced


def windows(samples: list[Sample]) -> list[dict]:
    rows = []
    for a, b in zip(samples, samples[1:]):
        calls = b.calls - a.calls
        rows.append({"t": b.t, "rss_mib": b.rss / 2**20, "calls": calls,
                     "cpu_us_per_call": (b.cpu - a.cpu) / calls * 1e6 if calls else float("nan"),
                     "bytes_per_call": (b.size - a.size) / calls if calls else float("nan")})
    return rows


def steady(samples: list[Sample]) -> list[Sample]:
    """The samples from the first one taken after the workload had begun: the collector's
    start (loading the probe, a few seconds) is not the recording."""
    begun = [k for k, s in enumerate(samples) if s.calls > 0]
    return samples[begun[0]:] if begun else []


def flat(samples: list[Sample], rss_slack: int) -> tuple[bool, str]:
    """Whether the recording stayed flat (see the module's doc), and the figures that say so."""
    samples = steady(samples)
    if len(samples) < 4:
        return False, f"too short to judge: {len(samples)} samples while the workload ran"
    third = max(1, len(samples) // 3)
    early, late = samples[:third + 1], samples[-third - 1:]

    def per_call(part, field):
        calls = part[-1].calls - part[0].calls
        return (getattr(part[-1], field) - getattr(part[0], field)) / calls if calls else float("nan")
    rss_growth = samples[-1].rss - samples[third].rss
    cpu = (per_call(early, "cpu") * 1e6, per_call(late, "cpu") * 1e6)
    size = (per_call(early, "size"), per_call(late, "size"))
    ok = rss_growth <= rss_slack and late[-1].calls > late[0].calls
    ok &= abs(cpu[1] - cpu[0]) <= 0.25 * cpu[0] and abs(size[1] - size[0]) <= 0.25 * size[0]
    return ok, (f"RSS {samples[third].rss / 2**20:.1f} -> {samples[-1].rss / 2**20:.1f} MiB "
                f"(+{rss_growth / 2**20:.1f}, slack {rss_slack / 2**20:.0f}); CPU per call {cpu[0]:.2f} -> "
                f"{cpu[1]:.2f} µs; trace bytes per call {size[0]:.2f} -> {size[1]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3600)
    parser.add_argument("--interval", type=float, default=60)
    parser.add_argument("--rate", type=int, default=20_000, help="workload calls per second")
    parser.add_argument("--rss-slack-mib", type=float, default=16)
    parser.add_argument("--workdir", type=Path, help="where the file and trace go (default: a temporary folder)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="iowitness-soak-"))
    samples, made, traced = soak(args.seconds, args.interval, args.rate, workdir)
    if args.workdir is None:
        workdir.rmdir()
    print(f"{'t s':>8} {'RSS MiB':>8} {'calls':>10} {'CPU µs/call':>12} {'bytes/call':>11}")
    for w in windows(steady(samples)):
        print(f"{w['t']:8.0f} {w['rss_mib']:8.1f} {w['calls']:10,} {w['cpu_us_per_call']:12.2f} {w['bytes_per_call']:11.2f}")
    ok, figures = flat(samples, int(args.rss_slack_mib * 2**20))
    print(f"\nworkload calls {made:,}, pwrite64 calls in the trace {traced:,}")
    print(("flat: " if ok else "NOT flat: ") + figures)
    return 0 if ok and made == traced else 1


if __name__ == "__main__":
    sys.exit(main())
