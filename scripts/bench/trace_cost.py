#!/usr/bin/env python3
"""What the trace costs: bytes per event on disk, collector CPU per million events, and the
CPU the writer spends per event (encode + compress + write), on real traced workloads.

Workloads: those of scripts/bench/workloads.py (the observer bench's), by default
fio-seq-read and fio-rand-read (4 KiB psync reads of a cached 256 MiB file) and iozone-4k
(iozone -i0 -i1 -r4k -s 256m), in a fresh directory.

For each round the workload runs under `iowitness run`; the trace's END record gives the
collector's own CPU time (user + system, Python start-up included) and its size gives bytes
per event. The write cost is measured apart, in this process: the round's events are written
again through TraceWriter in batches of 32 Ki records (what the collector drains in about
0.1 s), CPU time per event, next to a plain write of the same records as raw bytes (format 1).
With --load, also times `iowitness.load` on an existing trace, each run in a fresh process.

Usage (as root, from the repository, after scripts/setup.sh):
  .venv/bin/python scripts/bench/trace_cost.py --rounds 3 [--workloads fio-seq-read,iozone-64k]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tracers import IOWITNESS, Iowitness  # noqa: E402
from workloads import all_workloads  # noqa: E402

from iowitness.analysis.read.run import load
from iowitness.collector.format.tracewriter import TraceWriter  # noqa: E402

DEFAULT_WORKLOADS = "fio-seq-read,fio-rand-read,iozone-4k"
BATCH = 32 * 1024
LOAD_ONE = ("import sys, time; from iowitness.analysis.read.run import load; "
            "t = time.perf_counter(); c = time.process_time(); n = load(sys.argv[1]).event_count; "
            "print(time.perf_counter() - t, time.process_time() - c, n)")


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
    parser.add_argument("--workloads", default=DEFAULT_WORKLOADS,
                        help=f"comma-separated names from scripts/bench/workloads.py (default {DEFAULT_WORKLOADS})")
    parser.add_argument("--load", type=Path, metavar="TRACE", help="also time iowitness.load on this trace")
    parser.add_argument("--load-runs", type=int, default=3)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="iowitness-trace-cost-"))
    try:
        known = all_workloads(work, args.seconds)
        unknown = [name for name in args.workloads.split(",") if name not in known]
        if unknown:
            parser.error(f"unknown workload {', '.join(unknown)}; known: {', '.join(known)}")
        for name in args.workloads.split(",") if args.rounds else []:
            workload = known[name]
            rows = []
            for i in range(args.rounds):
                path = work / f"{name}-{i}.iwt"
                workload.prepare()
                subprocess.run([*IOWITNESS, "run", "-q", "-o", str(path), *Iowitness(False).options(workload.files),
                                "--", *workload.command],
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
