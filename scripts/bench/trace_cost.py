#!/usr/bin/env python3
"""What the trace costs: bytes per event on disk, collector CPU per million events, and the
CPU the writer spends per event (encode + compress + write), on real traced workloads.

Workloads, each on a 256 MiB file in a fresh directory (the page cache warmed first):
  fio-read      fio --rw=read     --bs=4k --ioengine=psync --invalidate=0 --time_based (cached)
  fio-randread  fio --rw=randread --bs=4k --ioengine=psync --invalidate=0 --time_based (cached)
  iozone        iozone -i0 -i1 -r4k -s 256m (write, rewrite, read, reread)

For each round the workload runs under `iowitness run`; the trace's END record gives the
collector's own CPU time (user + system, Python start-up included) and its size gives bytes
per event. The write cost is measured apart, in this process: the round's events are written
again through TraceWriter in batches of 32 Ki records (what the collector drains in about
0.1 s), CPU time per event, next to a plain write of the same records as raw bytes (format 1).
With --load, also times `iowitness.load` on an existing trace, each run in a fresh process.

Usage (as root, from the repository, after scripts/setup.sh):
  .venv/bin/python scripts/bench/trace_cost.py --rounds 3
  .venv/bin/python scripts/bench/trace_cost.py --rounds 0 --load /tmp/big.iwt
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iowitness.collector.trace import TraceWriter, load

IOWITNESS = [sys.executable, "-m", "iowitness.collector.cli"]
BATCH = 32 * 1024
LOAD_ONE = ("import sys, time; from iowitness.collector.trace import load; "
            "t = time.perf_counter(); c = time.process_time(); n = load(sys.argv[1]).event_count; "
            "print(time.perf_counter() - t, time.process_time() - c, n)")


def workloads(work: Path, seconds: float) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (iowitness options, command)."""
    data = work / "data.bin"
    # --invalidate=0: fio drops the file's cached pages before a job by default, and random
    # 4 KiB reads from the disk come 10 times slower than the collector's worst case
    fio = ["fio", "--name=bench", f"--filename={data}", "--bs=4k", "--ioengine=psync", "--size=256m",
           "--invalidate=0", "--time_based", f"--runtime={seconds}", "--output-format=json"]
    return {
        "fio-read": (["--file", str(data)], [*fio, "--rw=read"]),
        "fio-randread": (["--file", str(data)], [*fio, "--rw=randread"]),
        "iozone": (["--file", str(work / "iozone.tmp")],
                   ["iozone", "-i0", "-i1", "-r4k", "-s", "256m", "-f", str(work / "iozone.tmp")]),
    }


def write_cost(trace, out: Path) -> tuple[float, float]:
    """CPU ns per event to write the trace's events again: (format 2 TraceWriter, raw bytes)."""
    events = trace.raw_events()
    begin = time.process_time()
    with TraceWriter(out, {}) as writer:
        for at in range(0, len(events), BATCH):
            writer.write_events(events[at:at + BATCH])
        writer.flush()
    encoded = time.process_time() - begin
    begin = time.process_time()
    with open(out, "wb") as f:
        for at in range(0, len(events), BATCH):
            f.write(events[at:at + BATCH].tobytes())
    raw = time.process_time() - begin
    out.unlink()
    n = max(len(events), 1)
    return encoded / n * 1e9, raw / n * 1e9


def measure_load(path: Path, runs: int) -> None:
    walls, cpus = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", LOAD_ONE, str(path)], capture_output=True,
                             text=True, check=True).stdout.split()
        walls.append(float(out[0]))
        cpus.append(float(out[1]))
        events = int(out[2])
    print(f"load {path}: {events:,} events, {path.stat().st_size / max(events, 1):.2f} bytes/event, "
          f"wall median {statistics.median(walls):.2f} s (range {min(walls):.2f} .. {max(walls):.2f}), "
          f"CPU median {statistics.median(cpus):.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--only", choices=["fio-read", "fio-randread", "iozone"], action="append")
    parser.add_argument("--load", type=Path, metavar="TRACE", help="also time iowitness.load on this trace")
    parser.add_argument("--load-runs", type=int, default=3)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="iowitness-trace-cost-"))
    try:
        if args.rounds:
            subprocess.run(["dd", "if=/dev/zero", f"of={work / 'data.bin'}", "bs=1M", "count=256"],
                           check=True, capture_output=True)
            subprocess.run(["cat", str(work / "data.bin")], check=True, stdout=subprocess.DEVNULL)
        for name, (options, command) in workloads(work, args.seconds).items():
            if not args.rounds or (args.only and name not in args.only):
                continue
            rows = []
            for i in range(args.rounds):
                path = work / f"{name}-{i}.iwt"
                subprocess.run([*IOWITNESS, "run", "-q", "-o", str(path), *options, "--", *command],
                               check=True, capture_output=True, cwd=work)
                trace = load(path)
                n = max(trace.event_count, 1)
                cpu = trace.meta["collector_cpu_s"]
                encoded, raw = write_cost(trace, work / "rewrite.iwt")
                rows.append({"events": n, "file": path.stat().st_size / n,
                             "chunks": trace.stored_bytes.get("events", 0) / n,
                             "cpu": (cpu["user"] + cpu["system"]) / n * 1e6,
                             "encoded": encoded, "raw": raw})
                print(f"{name} round {i + 1}: {n:,} events, {rows[-1]['file']:.2f} B/event in the file "
                      f"({rows[-1]['chunks']:.2f} in EVENTS chunks), collector {rows[-1]['cpu']:.3f} "
                      f"CPU-s/M events, write {encoded:.0f} ns/event (raw records {raw:.0f})", flush=True)
                path.unlink()
                for leftover in work.glob("iozone.tmp*"):
                    leftover.unlink()

            def median(key):
                return statistics.median(r[key] for r in rows)
            print(f"== {name}: median of {len(rows)}: {median('events'):,.0f} events, "
                  f"{median('file'):.2f} bytes/event (file), {median('chunks'):.2f} (EVENTS chunks), "
                  f"collector {median('cpu'):.3f} CPU-s per M events, writer {median('encoded'):.0f} "
                  f"CPU-ns/event (raw 72-byte records: {median('raw'):.0f})", flush=True)
        if args.load:
            measure_load(args.load, args.load_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
